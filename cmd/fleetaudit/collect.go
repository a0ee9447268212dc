package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/fleetaudit/fleetaudit/collectors"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

func newCollectCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "collect",
		Short: "Write a snapshot of one host's configuration facts",
		Long: `collect reads the boot command line, sysctls, pam limits, logind, kernel and OS release,
NVIDIA driver, kernel modules, NCCL and CUDA libraries, memory, RDMA devices, IOMMU, PCIe
ACS and NCCL settings of one host, and writes them as one JSON snapshot with the file and
line each value came from.

Every path is read under --root, so a mounted image or a copied tree can be collected like
a live host. Files that cannot be read or parsed are listed in the snapshot's "errors" and
the rest is still collected; running unprivileged only loses the root-only facts.

Collecting the live host (--root /, the default) also runs nvidia-smi on a GPU host, with a
10s timeout, for each GPU's persistence mode, which no file shows. --no-exec runs no
command; any other --root never runs one, since the commands would describe this machine
and not the tree.

--pods adds the host's Kubernetes pods for the pod rules: a file or directory of manifests
(*.yaml, *.yml, *.json), read from the local filesystem and not under --root. Pods are kept
as they are; the pod template of a workload (Deployment, Job, CronJob, PyTorchJob, MPIJob,
LeaderWorkerSet, ...) becomes the pod its controller would create.`,
		Example: `  # This host, to stdout
  fleetaudit collect

  # A fixture tree or mounted image, to a file
  fleetaudit collect --root testdata/hosts/gpu-node -o gpu-a-001.json

  # This host, reading files only (no nvidia-smi)
  fleetaudit collect --no-exec

  # Also read two more sysctls and the limits a job user gets
  fleetaudit collect --sysctl net.ipv4.tcp_rmem --limits-domain trainer --limits-domain @hpc

  # With the pods running on this node
  kubectl get pods -A --field-selector spec.nodeName=$(hostname) -o json > pods.json
  fleetaudit collect --pods pods.json

  # With the pod templates of a directory of job manifests
  fleetaudit collect --pods k8s/training/

  # This host into a directory of snapshots, as HOSTNAME.json
  fleetaudit collect --out /var/lib/fleetaudit/snapshots

  # Every inventory host with an address, over SSH, one snapshot each
  fleetaudit collect --inventory hosts.ini --out snapshots/ --parallel 50`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runCollect(cmd)
		},
	}
	f := cmd.Flags()
	f.String("root", "/", "directory to read as the host's /")
	f.String("hostname", "", "host name to record (default: the root's /proc/sys/kernel/hostname or /etc/hostname)")
	f.StringP("output", "o", "-", "write the snapshot to FILE (- for stdout): a file is replaced atomically keeping its mode, a FIFO or device written through")
	f.StringSlice("sysctl", nil, "extra sysctl key to read from /proc/sys (repeatable)")
	f.StringSlice("limits-domain", nil, "user or @group whose effective pam limits to compute besides * (repeatable)")
	f.Bool("no-exec", false, "run no command (nvidia-smi) on the live host; only files are read")
	f.StringSlice("pods", nil, "Kubernetes manifest FILE or DIR whose pods and pod templates to record, e.g. kubectl get pods -o json output (repeatable)")
	addCollectInventoryFlags(f)
	addCollectEvery(a, cmd)
	return cmd
}

func (a *app) runCollect(cmd *cobra.Command) error {
	v := a.v
	out := v.GetString("out")
	if out != "" && cmd.Flags().Changed("output") {
		return usageError{errors.New("-o and --out: choose one (-o names the file, --out the directory for HOST.json)")}
	}
	if v.GetString("inventory") != "" {
		return a.runCollectInventory(cmd)
	}
	if h := v.GetString("hostname"); h != "" {
		if err := snapshot.CheckHostName(h); err != nil {
			return usageError{fmt.Errorf("--hostname: %w", err)}
		}
	}
	root := v.GetString("root")
	info, err := os.Stat(root)
	if err != nil {
		return usageError{fmt.Errorf("--root %s: %w", root, err)}
	}
	if !info.IsDir() {
		return usageError{fmt.Errorf("--root %s: not a directory", root)}
	}
	manifests := v.GetStringSlice("pods")
	if err := checkOutput(v.GetString("output"), inputsOf("--pods", manifests, 0)); err != nil {
		return err
	}
	for _, m := range manifests {
		if _, err := os.Stat(m); err != nil {
			return usageError{fmt.Errorf("--pods %s: %w", m, err)}
		}
	}
	target, err := collectors.Local(root, collectors.LocalOptions{NoExec: v.GetBool("no-exec"), Manifests: manifests})
	if err != nil {
		return err
	}
	snap, err := collectors.Collect(cmd.Context(), target, collectors.Options{
		Hostname:      v.GetString("hostname"),
		ExtraSysctls:  v.GetStringSlice("sysctl"),
		LimitsDomains: v.GetStringSlice("limits-domain"),
		Version:       version,
	})
	if err != nil {
		if cmd.Context().Err() != nil {
			return fmt.Errorf("the collection stopped before its snapshot: nothing was written (%w)", err)
		}
		return err
	}
	if e := collectors.Unread(snap); e != nil {
		return fmt.Errorf("--root %s: %s", root, e.Reason)
	}
	if snap.Host == "" {
		return usageError{errors.New("no host name under --root (no /proc/sys/kernel/hostname or /etc/hostname): pass --hostname")}
	}
	output := v.GetString("output")
	if out != "" {
		// The host's name becomes the file's: only ever one name in out.
		name, err := snapshot.FileName(snap.Host)
		if err != nil {
			return fmt.Errorf("--out %s: %w", out, err)
		}
		if err := outDir(out); err != nil {
			return err
		}
		output = filepath.Join(out, name)
	}
	var buf bytes.Buffer
	if err := snapshot.Encode(&buf, snap); err != nil {
		return fmt.Errorf("encoding snapshot of %s: %w", snap.Host, err)
	}
	if err := writeOutput(cmd.Context(), a, output, buf.Bytes()); err != nil {
		return err
	}
	for _, e := range snap.Errors {
		a.log.Warn("collection error", "host", snap.Host, "collector", e.Collector, "path", e.Path, "reason", e.Reason)
	}
	if snap.Source.Image {
		a.log.Info("offline image: nothing mounted on /proc, so no running state is read", "root", target.Origin.Root)
	}
	a.log.Info("collected", "host", snap.Host, "root", target.Origin.Root, "facts", len(snap.Sources), "pods", len(snap.Pods), "errors", len(snap.Errors))
	return nil
}
