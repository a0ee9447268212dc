package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/fleetaudit/fleetaudit/fleets"
	"github.com/fleetaudit/fleetaudit/kube/cluster"
	"github.com/fleetaudit/fleetaudit/kube/openreports"
	"github.com/fleetaudit/fleetaudit/reports"
)

// Kubernetes inputs of audit: the cluster's nodes and pods through the API
// server, and workload manifests audited without a host.

const kubeHelp = `

Kubernetes: --kube reads every node (labels, taints, allocatable GPUs, RDMA and EFA
devices) and every pod once per run from the API server (--kubeconfig, else $KUBECONFIG,
else ~/.kube/config, else the pod's service account in a cluster; --context picks a
context) and attaches to each host's snapshot its node and the pods bound to it (pods
provenance kube:pod/NAMESPACE/NAME). Hosts join nodes by name, or by the value of the
node label --kube-host-label. Nodes no other input names are audited on what the cluster
alone knows: the pod and label rules run, host rules are reported skipped. --kubeconfig or
--context imply --kube.

--publish-reports applies the run's OpenReports (as --format openreports writes them: a
Report per node in --reports-namespace, a ClusterReport per other host) to the cluster by
server-side apply, field manager fleetaudit, replacing the last run's; fleetaudit's reports
of nodes and hosts gone are deleted, except by a partial run (--shard, --kube-node-selector).

--manifests audits workload manifests (files or directories of YAML or JSON, kubectl get
-o json output included) without any host, as pods of the fleet --fleet names: a team's
job specs checked in CI. A manifest file that cannot be read or parsed fails the run (exit
status 2, naming the file), after the report of what could be read.`

const kubeExamples = `

  # Every node and pod of the current kube context, without host facts
  fleetaudit audit --kube

  # The DaemonSet's snapshots joined to their nodes and pods (in the cluster)
  fleetaudit audit --kube --snapshots /var/lib/fleetaudit/snapshots --fail-on none

  # Only the GPU nodes of one cluster, hosts named by a label
  fleetaudit audit --context prod --kube-node-selector nvidia.com/gpu.present=true \
    --kube-host-label fleetaudit.io/host --inventory hosts.yaml --snapshots snaps/

  # Every night in the cluster: the results as OpenReports, for Policy Reporter
  fleetaudit audit --kube --snapshots /var/lib/fleetaudit/snapshots --publish-reports --fail-on none

  # A team's job specs in CI, with the rules of the gpu-training fleet
  fleetaudit audit --manifests k8s/jobs/ --fleet gpu-training --format json`

// addKubeAuditFlags adds the Kubernetes flags to audit's flag set.
func addKubeAuditFlags(f *pflag.FlagSet) {
	f.Bool("kube", false, "read nodes and pods from the Kubernetes API server")
	f.String("kubeconfig", "", "kubeconfig file (default $KUBECONFIG, else ~/.kube/config, else in-cluster); implies --kube")
	f.String("context", "", "kubeconfig context (default its current context); implies --kube")
	f.String("kube-node-selector", "", "label selector of the nodes to read, e.g. nvidia.com/gpu.present=true")
	f.String("kube-host-label", "", "node label whose value is the host's name (default: the node's name)")
	f.StringSlice("manifests", nil, "workload manifest FILE or DIR to audit without a host, in the fleet --fleet names (repeatable)")
	f.String("fleet", "", "fleet profile whose rules judge --manifests")
	f.Bool("publish-reports", false, "apply the run's OpenReports to the cluster (server-side apply), replacing the last run's; needs --kube")
	f.String("reports-namespace", "fleetaudit", "namespace of the nodes' OpenReports Reports (--format openreports, --publish-reports)")
}

// kubeRun is the cluster a run read, for publishing its reports.
type kubeRun struct {
	cfg     *rest.Config
	cluster *cluster.Cluster
	// partial: the run saw part of the fleet (--shard, a node selector),
	// so reports it did not write are not deleted.
	partial bool
}

// kubeAuditOptions fills in opts from the Kubernetes flags: the cluster is
// read here, once, before the run. It returns the cluster read, nil
// without --kube.
func (a *app) kubeAuditOptions(cmd *cobra.Command, set *fleets.Set, opts *audit.Options) (*kubeRun, error) {
	if ns := a.v.GetString("reports-namespace"); len(validation.IsDNS1123Label(ns)) > 0 {
		return nil, usageError{fmt.Errorf("--reports-namespace %q: not a namespace name", ns)}
	}
	kr, err := a.kubeAudit(cmd, set, opts)
	if err == nil && kr == nil && a.v.GetBool("publish-reports") {
		err = usageError{errors.New("--publish-reports writes to a cluster: add --kube (or --kubeconfig, --context)")}
	}
	return kr, err
}

// openReportsOptions place the run's OpenReports: a host the cluster has
// a node for gets a Report in --reports-namespace.
func (a *app) openReportsOptions(kr *kubeRun) reports.OpenReportsOptions {
	o := reports.OpenReportsOptions{Namespace: a.v.GetString("reports-namespace")}
	if kr != nil {
		o.Node = func(host string) string {
			if n := kr.cluster.Lookup(host); n != nil {
				return n.Name
			}
			return ""
		}
	}
	return o
}

// publishReports applies the run's OpenReports to the cluster it read
// (--publish-reports), replacing the last run's.
func (a *app) publishReports(ctx context.Context, kr *kubeRun, res *audit.Result, ropts reports.Options) error {
	if kr == nil || !a.v.GetBool("publish-reports") {
		return nil
	}
	reps := reports.OpenReports(res, ropts)
	out, err := openreports.Publish(ctx, kr.cfg, reps, openreports.Options{Namespace: ropts.OpenReports.Namespace, Prune: !kr.partial})
	if err != nil {
		return fmt.Errorf("--publish-reports: %w", err)
	}
	a.log.Info("published the OpenReports", "server", kr.cluster.Server, "namespace", ropts.OpenReports.Namespace,
		"applied", out.Applied, "deleted", len(out.Deleted))
	if len(out.Stale) > 0 {
		a.log.Warn("reports of hosts this partial run (--shard, --kube-node-selector) did not audit are kept as they were",
			"reports", len(out.Stale), "first", out.Stale[:min(len(out.Stale), 5)])
	}
	return nil
}

func (a *app) kubeAudit(cmd *cobra.Command, set *fleets.Set, opts *audit.Options) (*kubeRun, error) {
	v := a.v
	manifests := v.GetStringSlice("manifests")
	fleet := v.GetString("fleet")
	switch {
	case len(manifests) > 0 && fleet == "":
		return nil, usageError{errors.New("--manifests needs --fleet: the fleet whose rules judge the workloads")}
	case fleet != "" && len(manifests) == 0:
		return nil, usageError{errors.New("--fleet names the fleet of --manifests; give --manifests")}
	case fleet != "" && !slices.Contains(set.Names(), fleet):
		return nil, usageError{fmt.Errorf("--fleet %q: no such fleet profile (have %v)", fleet, set.Names())}
	}
	for _, m := range manifests {
		if _, err := os.Stat(m); err != nil {
			return nil, usageError{fmt.Errorf("--manifests %s: %w", m, err)}
		}
	}
	opts.Manifests, opts.ManifestFleet = manifests, fleet
	if err := checkOutput(v.GetString("output"), inputsOf("--manifests", manifests, 0)); err != nil {
		return nil, err
	}
	if !v.GetBool("kube") && v.GetString("kubeconfig") == "" && v.GetString("context") == "" {
		if v.GetString("kube-node-selector") != "" || v.GetString("kube-host-label") != "" {
			return nil, usageError{errors.New("--kube-node-selector and --kube-host-label need --kube")}
		}
		return nil, nil
	}
	copts := cluster.Options{
		Kubeconfig:   v.GetString("kubeconfig"),
		Context:      v.GetString("context"),
		Getenv:       a.getenv,
		NodeSelector: v.GetString("kube-node-selector"),
		HostLabel:    v.GetString("kube-host-label"),
	}
	if terminalFD(a.err) >= 0 {
		copts.Progress = a.err
	}
	cfg, where, err := cluster.Config(copts)
	if err != nil {
		return nil, usageError{err}
	}
	c, err := cluster.Read(cmd.Context(), cfg, copts)
	if err != nil {
		return nil, err
	}
	a.log.Info("read the cluster", "from", where, "server", c.Server, "nodes", len(c.Nodes), "pods", c.Pods,
		"unscheduled", c.Unscheduled, "on_other_nodes", c.Elsewhere)
	opts.Cluster = c
	return &kubeRun{cfg: cfg, cluster: c, partial: copts.NodeSelector != "" || v.GetString("shard") != ""}, nil
}
