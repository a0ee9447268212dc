package audit

import (
	"context"
	"iter"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/fleetaudit/fleetaudit/collectors"
	"github.com/fleetaudit/fleetaudit/kube/cluster"
	"github.com/fleetaudit/fleetaudit/policies/fleetrun"
)

// kubeJoin joins the hosts of a run to the nodes of a cluster read once
// before it: a host's document gets its node (labels, taints, allocatable,
// pods) when loaded, and nodes that no input names are audited on what the
// cluster alone knows of them.
type kubeJoin struct {
	cluster *cluster.Cluster
	version string
	now     func() time.Time
	log     *slog.Logger
	// named are the host names the run's other inputs give before they are
	// loaded (snapshot files by file name, as the DaemonSet writes them;
	// roots and inventory hosts by name): their nodes join those inputs.
	named map[string]bool
}

func newKubeJoin(opts Options, files *fileList, targets []target, log *slog.Logger) *kubeJoin {
	if opts.Cluster == nil {
		return nil
	}
	k := &kubeJoin{cluster: opts.Cluster, version: opts.Version, now: opts.Now, log: log, named: map[string]bool{}}
	if k.now == nil {
		k.now = time.Now
	}
	for f := range files.All() {
		k.named[strings.TrimSuffix(filepath.Base(f), filepath.Ext(f))] = true
	}
	for _, t := range targets {
		k.named[t.name()] = true
		if t.host.Name == "" && t.host.Root != "" {
			// Collect names the host from its root's hostname files.
			if h := collectors.Hostname(collectors.Dir(t.host.Root)); h != "" {
				k.named[h] = true
			}
		}
	}
	return k
}

// wrap attaches the node of the host in's document names, if any.
func (k *kubeJoin) wrap(in fleetrun.HostInput) fleetrun.HostInput {
	if k == nil {
		return in
	}
	load := in.Load
	// The engine reads a snapshot file's bytes itself when it can (Read),
	// without calling Load: the node must be joined in, so it loads.
	in.Read = nil
	in.Load = func(ctx context.Context) (map[string]any, error) {
		doc, err := load(ctx)
		if err != nil {
			return doc, err
		}
		host, _ := doc["host"].(string)
		if host == "" {
			host = in.Name
		}
		n := k.cluster.Lookup(host)
		if n == nil {
			k.log.Debug("no Kubernetes node for host", "host", host)
			return doc, nil
		}
		replaced, err := n.Attach(doc)
		if err != nil {
			return nil, err
		}
		if replaced > 0 {
			k.log.Info("pods from the snapshot replaced by the pods the API server lists", "host", host, "replaced", replaced, "listed", len(n.Pods))
		}
		return doc, nil
	}
	return in
}

// nodes are the inputs of the nodes no other input names.
func (k *kubeJoin) nodes() iter.Seq[fleetrun.HostInput] {
	return func(yield func(fleetrun.HostInput) bool) {
		if k == nil {
			return
		}
		for _, n := range k.cluster.Nodes {
			if k.named[n.Host] {
				continue
			}
			in := fleetrun.HostInput{
				Origin: cluster.NodeSource(n.Name),
				Name:   n.Host,
				Load: func(context.Context) (map[string]any, error) {
					return n.Snapshot(k.now(), k.version)
				},
			}
			if !yield(in) {
				return
			}
		}
	}
}
