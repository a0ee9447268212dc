package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

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
  fleetaudit collect --pods k8s/training/`,
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
	return cmd
}

func (a *app) runCollect(cmd *cobra.Command) error {
	v := a.v
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
	label, err := filepath.Abs(root)
	if err != nil {
		return err
	}
	snap, err := collectors.Collect(cmd.Context(), collectors.Dir(root), collectors.Options{
		Hostname:      v.GetString("hostname"),
		Kind:          "local",
		RootLabel:     label,
		ExtraSysctls:  v.GetStringSlice("sysctl"),
		LimitsDomains: v.GetStringSlice("limits-domain"),
		Manifests:     manifests,
		Version:       version,
		Exec:          commandRunner(label, v.GetBool("no-exec")),
	})
	if err != nil {
		return err
	}
	if e := collectors.Unread(snap); e != nil {
		return fmt.Errorf("--root %s: %s", root, e.Reason)
	}
	if snap.Host == "" {
		return usageError{errors.New("no host name under --root (no /proc/sys/kernel/hostname or /etc/hostname): pass --hostname")}
	}
	var buf bytes.Buffer
	if err := snapshot.Encode(&buf, snap); err != nil {
		return fmt.Errorf("encoding snapshot of %s: %w", snap.Host, err)
	}
	if err := writeOutput(cmd.Context(), a, v.GetString("output"), buf.Bytes()); err != nil {
		return err
	}
	for _, e := range snap.Errors {
		a.log.Warn("collection error", "host", snap.Host, "collector", e.Collector, "path", e.Path, "reason", e.Reason)
	}
	a.log.Info("collected", "host", snap.Host, "root", label, "facts", len(snap.Sources), "pods", len(snap.Pods), "errors", len(snap.Errors))
	return nil
}

// execTimeout bounds each command collect runs on the live host.
const execTimeout = 10 * time.Second

// maxCommandOutput caps what one command's output may hold.
const maxCommandOutput = 1 << 20

// commandRunner is the collectors' Exec for root: commands run only when the
// root is this machine's own "/" (they describe this machine, not a fixture
// tree or a mounted image) and --no-exec is not given.
func commandRunner(root string, noExec bool) func(context.Context, string, ...string) ([]byte, error) {
	if noExec || filepath.Clean(root) != "/" {
		return nil
	}
	return runCommand
}

// runCommand runs name with args under execTimeout and returns its standard
// output. The child gets only PATH and LC_ALL=C, and an error names the
// command, its exit status and the first line it printed, never the
// environment. A missing binary stays an *exec.Error wrapping
// exec.ErrNotFound.
func runCommand(ctx context.Context, name string, args ...string) ([]byte, error) {
	path, err := lookCommand(name, commandDirs)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, execTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "LC_ALL=C"}
	cmd.WaitDelay = time.Second
	var stdout, stderr cappedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if err == nil {
		return stdout.Bytes(), nil
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil, fmt.Errorf("%s: timed out after %s", name, execTimeout)
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		msg := firstLine(stderr.Bytes())
		if msg == "" {
			msg = firstLine(stdout.Bytes())
		}
		if msg != "" {
			return nil, fmt.Errorf("%s: %s: %s", name, exit.ProcessState, msg)
		}
		return nil, fmt.Errorf("%s: %s", name, exit.ProcessState)
	}
	return nil, err
}

// commandDirs are searched after PATH: sudo's secure_path and systemd units
// leave out /usr/local/nvidia/bin, where the GPU operator and container
// images put nvidia-smi.
var commandDirs = []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin", "/usr/local/nvidia/bin"}

// lookCommand finds name in PATH, else in dirs. Not found anywhere is
// exec.LookPath's error, which wraps exec.ErrNotFound.
func lookCommand(name string, dirs []string) (string, error) {
	path, err := exec.LookPath(name)
	if err == nil || strings.Contains(name, "/") {
		return path, err
	}
	for _, dir := range dirs {
		if p, e := exec.LookPath(filepath.Join(dir, name)); e == nil {
			return p, nil
		}
	}
	return "", err
}

// firstLine is the first non-blank line of out, capped for an error message.
func firstLine(out []byte) string {
	for _, line := range strings.Split(string(out), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			if len(line) > 200 {
				line = line[:200] + "..."
			}
			return line
		}
	}
	return ""
}

// cappedBuffer keeps the first maxCommandOutput bytes written to it and
// drops the rest, so a runaway command cannot exhaust memory.
type cappedBuffer struct{ bytes.Buffer }

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := maxCommandOutput - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
