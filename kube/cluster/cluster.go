// Package cluster reads a Kubernetes cluster through its API server with
// client-go: every node (labels, taints, allocatable and capacity) and every
// pod, listed once per run in pages, pods joined to nodes by spec.nodeName.
// It is the Kubernetes transport: what it reads is attached to the host
// snapshot of each node (Node.Attach), or makes a snapshot of its own for a
// node no host was collected for (Node.Snapshot). Provenance names the API
// object: "kube:node/NAME", "kube:pod/NAMESPACE/NAME".
package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/fleetaudit/fleetaudit/kube"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

// Options say how to reach the cluster and what to read.
type Options struct {
	// Kubeconfig is a kubeconfig file; "" reads $KUBECONFIG (through
	// Getenv: a list of files), else ~/.kube/config, else the in-cluster
	// configuration of a pod's service account.
	Kubeconfig string
	// Context is the kubeconfig context to use; "" for its current one.
	Context string
	// Getenv reads the environment (KUBECONFIG); nil reads none.
	Getenv func(string) string
	// NodeSelector is a label selector limiting the nodes read ("" all).
	NodeSelector string
	// HostLabel is a node label whose value is the host's name in the
	// inventory (and its snapshots); "" joins by the node's name.
	HostLabel string
	// PageSize is how many objects one list request returns (default 500).
	PageSize int64
	// Progress, if set, gets a progress line per page, rewritten in place
	// (for a terminal), and a final newline.
	Progress io.Writer
}

// Config is the client configuration opts name, and a description of where
// it came from for messages ("kubeconfig /x, context prod").
func Config(opts Options) (*rest.Config, string, error) {
	rules := &clientcmd.ClientConfigLoadingRules{}
	switch env := getenv(opts, "KUBECONFIG"); {
	case opts.Kubeconfig != "":
		rules.ExplicitPath = opts.Kubeconfig
	case env != "":
		rules.Precedence = filepath.SplitList(env)
	default:
		rules.Precedence = []string{clientcmd.RecommendedHomeFile}
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: opts.Context}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	cfg, err := cc.ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			return nil, "", fmt.Errorf("no Kubernetes configuration: no kubeconfig in %s and not running in a pod; give --kubeconfig", strings.Join(rules.GetLoadingPrecedence(), ", "))
		}
		return nil, "", fmt.Errorf("kubeconfig: %w", err)
	}
	where := "in-cluster service account"
	if raw, err := cc.RawConfig(); err == nil && len(raw.Contexts) > 0 {
		ctx := opts.Context
		if ctx == "" {
			ctx = raw.CurrentContext
		}
		where = fmt.Sprintf("kubeconfig %s, context %s", strings.Join(rules.GetLoadingPrecedence(), string(filepath.ListSeparator)), ctx)
		if opts.Kubeconfig != "" {
			where = fmt.Sprintf("kubeconfig %s, context %s", opts.Kubeconfig, ctx)
		}
	}
	return cfg, where, nil
}

func getenv(opts Options, key string) string {
	if opts.Getenv == nil {
		return ""
	}
	return opts.Getenv(key)
}

// Cluster is what one read of the API server found.
type Cluster struct {
	// Server is the API server's URL.
	Server string
	// Nodes are sorted by name.
	Nodes []*Node
	// Pods is the number of pods listed; Unscheduled have no node yet,
	// Elsewhere run on nodes the selector left out or that are gone.
	Pods, Unscheduled, Elsewhere int

	byHost map[string]*Node
}

// Node is one node and the pods bound to it.
type Node struct {
	// Host is the name the node joins hosts by: the HostLabel's value, or
	// the node's name.
	Host   string
	Name   string
	Labels map[string]string
	Info   snapshot.KubeNode
	// Pods are the node's pods as the pod rules read them, in the order
	// listed (namespace, name), each named "kube:pod/NS/NAME".
	Pods []kube.Object
	// server is the API server, recorded in a snapshot's origin.
	server string
}

// requestTimeout bounds one list request, so a stalled server costs a
// bounded wait and not the run.
const requestTimeout = 60 * time.Second

// Read lists the nodes and pods once, in pages, and joins them. It fails
// when the API server cannot be read (nothing about the cluster is then
// known) or when HostLabel makes two nodes the same host.
func Read(ctx context.Context, cfg *rest.Config, opts Options) (*Cluster, error) {
	cfg = rest.CopyConfig(cfg)
	if cfg.Timeout == 0 {
		cfg.Timeout = requestTimeout
	}
	// The API server's deprecation warnings would go to klog's stderr.
	cfg.WarningHandler = rest.NoWarnings{}
	// A run makes a few list requests, one per page: client-go's default
	// 5 per second would throttle a large cluster's pages, and log it.
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 50, 100
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client for %s: %w", cfg.Host, err)
	}
	pageSize := opts.PageSize
	if pageSize <= 0 {
		pageSize = 500
	}
	prog := &progress{w: opts.Progress}
	defer prog.done()

	c := &Cluster{Server: cfg.Host, byHost: map[string]*Node{}}
	byName := map[string]*Node{}
	byHost := c.byHost
	err = pages(ctx, func(ctx context.Context, cont string) (string, error) {
		list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: opts.NodeSelector, Limit: pageSize, Continue: cont})
		if err != nil {
			return "", fmt.Errorf("listing nodes on %s: %w", cfg.Host, err)
		}
		for i := range list.Items {
			n := newNode(&list.Items[i], opts.HostLabel, cfg.Host)
			if n.Host == "" {
				return "", fmt.Errorf("node %s has no label %s to name its host", n.Name, opts.HostLabel)
			}
			if other, ok := byHost[n.Host]; ok {
				return "", fmt.Errorf("nodes %s and %s both name host %s (label %s)", other.Name, n.Name, n.Host, opts.HostLabel)
			}
			byName[n.Name], byHost[n.Host] = n, n
			c.Nodes = append(c.Nodes, n)
		}
		prog.show(len(c.Nodes), c.Pods)
		return list.Continue, nil
	})
	if err != nil {
		return nil, err
	}
	err = pages(ctx, func(ctx context.Context, cont string) (string, error) {
		list, err := client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{Limit: pageSize, Continue: cont})
		if err != nil {
			return "", fmt.Errorf("listing pods on %s: %w", cfg.Host, err)
		}
		for i := range list.Items {
			p := &list.Items[i]
			c.Pods++
			n := byName[p.Spec.NodeName]
			switch {
			case p.Spec.NodeName == "":
				c.Unscheduled++
				continue
			case n == nil:
				c.Elsewhere++
				continue
			}
			obj, err := podObject(p)
			if err != nil {
				return "", err
			}
			n.Pods = append(n.Pods, obj)
		}
		prog.show(len(c.Nodes), c.Pods)
		return list.Continue, nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(c.Nodes, func(a, b *Node) int { return strings.Compare(a.Name, b.Name) })
	return c, nil
}

// pages calls list with each continue token until the last page. A token
// that expired mid-list (410 Gone) is an error: a list stitched from two
// versions of the cluster would not be one read of it.
func pages(ctx context.Context, list func(context.Context, string) (string, error)) error {
	cont := ""
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		next, err := list(ctx, cont)
		if err != nil {
			return err
		}
		if next == "" {
			return nil
		}
		cont = next
	}
}

// Lookup returns the node whose Host is host, nil for none.
func (c *Cluster) Lookup(host string) *Node { return c.byHost[host] }

func newNode(n *corev1.Node, hostLabel, server string) *Node {
	node := &Node{
		Name:   n.Name,
		Host:   n.Name,
		Labels: maps.Clone(n.Labels),
		server: server,
		Info: snapshot.KubeNode{
			Name:          n.Name,
			Taints:        []snapshot.Taint{},
			Allocatable:   quantities(n.Status.Allocatable),
			Capacity:      quantities(n.Status.Capacity),
			Unschedulable: n.Spec.Unschedulable,
		},
	}
	if node.Labels == nil {
		node.Labels = map[string]string{}
	}
	if hostLabel != "" {
		node.Host = n.Labels[hostLabel]
	}
	for _, t := range n.Spec.Taints {
		node.Info.Taints = append(node.Info.Taints, snapshot.Taint{Key: t.Key, Value: t.Value, Effect: string(t.Effect)})
	}
	return node
}

func quantities(l corev1.ResourceList) map[string]string {
	out := make(map[string]string, len(l))
	for k, q := range l {
		out[string(k)] = q.String()
	}
	return out
}

// podObject is a pod as the pod rules read it: Kubernetes JSON as kubectl
// get -o json prints it (kind and apiVersion set), redacted as every pod
// source's pods are (kube.RedactPod).
func podObject(p *corev1.Pod) (kube.Object, error) {
	p = p.DeepCopy()
	p.Kind, p.APIVersion = "Pod", "v1"
	p.ManagedFields = nil
	data, err := json.Marshal(p)
	if err != nil {
		return kube.Object{}, fmt.Errorf("pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	var pod map[string]any
	if err := snapshot.DecodeJSON(data, &pod); err != nil {
		return kube.Object{}, fmt.Errorf("pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	kube.RedactPod(pod)
	return kube.Object{Pod: pod, File: PodSource(p.Namespace, p.Name), Kind: "Pod", Name: p.Name}, nil
}

// PodSource is the provenance text of a pod read from the API.
func PodSource(namespace, name string) string { return "kube:pod/" + namespace + "/" + name }

// NodeSource is the provenance text of a node read from the API.
func NodeSource(name string) string { return "kube:node/" + name }
