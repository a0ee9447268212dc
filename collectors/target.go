package collectors

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/fleetaudit/fleetaudit/internal/safeio"
	"github.com/fleetaudit/fleetaudit/kube"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

// Target is one host as a transport hands it to Collect: everything the
// collectors read from that host, and nothing about how it is reached.
type Target struct {
	// Origin says where the host was read from: its Kind ("local",
	// "config-repo", "ssh", ...), Address for a remote host, and Root as
	// the snapshot records it. Collect fills in Collector.
	Origin snapshot.Origin
	// Files is the host's file tree as under "/". Sources whose files come
	// from elsewhere than the host path (a config-repo layer) also
	// implement Describer.
	Files Source
	// Exec runs commands on the host. Nil runs none, and the facts only a
	// command gives are left unknown.
	Exec Runner
	// Pods are the host's Kubernetes pods; nil for none.
	Pods PodSource
}

// Runner runs a command on the host being collected and returns its
// standard output; a non-zero exit is an error, and a missing binary an
// error wrapping exec.ErrNotFound (as os/exec reports it). It is called with
// the collection's context. A transport sets one only when the commands run
// on the host its Files are: a fixture tree or mounted image must not be
// mixed with the facts of the machine running fleetaudit.
type Runner func(ctx context.Context, name string, args ...string) ([]byte, error)

// PodSource reads a host's pods and pod templates.
type PodSource interface {
	// ReadPods returns every pod with the file (as provenance should name
	// it) and line it came from, and one *kube.ManifestError, naming the file
	// the same way, per file that could not be read or parsed. It stops
	// early when ctx is done.
	ReadPods(ctx context.Context) ([]kube.Object, []error)
}

// LocalOptions tune Local.
type LocalOptions struct {
	// NoExec runs no command even on this machine's own "/".
	NoExec bool
	// Manifests are Kubernetes manifest files or directories on the local
	// filesystem (not under root): they describe the host's workload.
	Manifests []string
}

// Local is the target of a directory on this machine read as a host's "/":
// this machine itself when root is "/", else a fixture tree or a mounted
// image. Commands (nvidia-smi) run only on this machine's own "/", unless
// opts.NoExec; under any other root they would describe this machine and not
// the tree. A root with nothing mounted on /proc is an offline OS image
// (IsImage): Origin.Image says so, and Collect reads no running state there.
// The Source is Dir(root), so make a new target per collection.
func Local(root string, opts LocalOptions) (Target, error) {
	label, err := filepath.Abs(root)
	if err != nil {
		return Target{}, fmt.Errorf("root %s: %w", root, err)
	}
	t := Target{
		Origin: snapshot.Origin{Kind: "local", Root: label},
		Files:  Dir(root),
	}
	// A directory with nothing mounted on /proc is an offline image, decided
	// once here and recorded in the snapshot's source.
	t.Origin.Image = IsImage(t.Files)
	if !opts.NoExec && filepath.Clean(label) == "/" && !t.Origin.Image {
		t.Exec = runLocalCommand
	}
	if len(opts.Manifests) > 0 {
		t.Pods = ManifestFiles(opts.Manifests...)
	}
	return t, nil
}

// ManifestFiles reads pods from manifest files or directories on the local
// filesystem, naming each file as the caller did (a directory joined with
// the file's path in it). FIFOs and devices are never opened.
func ManifestFiles(names ...string) PodSource { return manifestFiles(names) }

type manifestFiles []string

func (m manifestFiles) ReadPods(ctx context.Context) ([]kube.Object, []error) {
	var objs []kube.Object
	var errs []error
	for _, name := range m {
		if ctx.Err() != nil {
			break
		}
		info, err := os.Stat(name)
		if err != nil {
			errs = append(errs, &kube.ManifestError{File: name, Err: err})
			continue
		}
		// Read through a DirFS so kube names files relative to dir, and
		// name them as the user did by joining dir back.
		dir, root := name, "."
		if !info.IsDir() {
			dir, root = filepath.Dir(name), filepath.Base(name)
		}
		o, e := kube.ReadManifests(safeio.DirFS(dir), root)
		local := func(file string) string { return filepath.Join(dir, filepath.FromSlash(file)) }
		for i := range o {
			o[i].File = local(o[i].File)
		}
		objs = append(objs, o...)
		for _, err := range e {
			var me *kube.ManifestError
			if errors.As(err, &me) {
				me.File = local(me.File)
			} else {
				err = &kube.ManifestError{File: name, Err: err}
			}
			errs = append(errs, err)
		}
	}
	return objs, errs
}

// ManifestsIn reads pods from manifest files or directories of fsys (a
// config repo's files), named by their path in fsys.
func ManifestsIn(fsys fs.FS, names ...string) PodSource {
	return manifestsIn{fsys: fsys, names: names}
}

type manifestsIn struct {
	fsys  fs.FS
	names []string
}

func (m manifestsIn) ReadPods(ctx context.Context) ([]kube.Object, []error) {
	var objs []kube.Object
	var errs []error
	for _, name := range m.names {
		if ctx.Err() != nil {
			break
		}
		o, e := kube.ReadManifests(m.fsys, name)
		objs = append(objs, o...)
		for _, err := range e {
			if !errors.As(err, new(*kube.ManifestError)) {
				err = &kube.ManifestError{File: name, Err: err}
			}
			errs = append(errs, err)
		}
	}
	return objs, errs
}

// localExecTimeout bounds each command run on this machine.
const localExecTimeout = 10 * time.Second

// maxCommandOutput caps what one command's output may hold.
const maxCommandOutput = 1 << 20

// runLocalCommand runs name with args under localExecTimeout and returns its
// standard output. The child gets only PATH and LC_ALL=C, and an error names
// the command, its exit status and the first line it printed, never the
// environment. A missing binary stays an *exec.Error wrapping
// exec.ErrNotFound.
func runLocalCommand(ctx context.Context, name string, args ...string) ([]byte, error) {
	path, err := lookCommand(name, commandDirs)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, localExecTimeout)
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
		return nil, fmt.Errorf("%s: timed out after %s", name, localExecTimeout)
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
