// Package collectors turns a host's files into a snapshot. Every read goes
// through a Source rooted at the host's "/", so the same code reads a live
// host, a fixture tree in a test, a remote host or a rendered config repo.
//
// Collectors report raw facts and where they came from. They never judge a
// value: that is policy's job.
package collectors

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

// DefaultMaxFileSize caps any single configuration or pseudo-file read.
const DefaultMaxFileSize = 1 << 20

// Options tune one collection.
type Options struct {
	// Hostname overrides the name read from the root.
	Hostname string
	// Kind and RootLabel describe the source in the snapshot ("local", "/").
	Kind      string
	RootLabel string
	// ExtraSysctls are read from /proc/sys in addition to the built-in set and
	// every configured key.
	ExtraSysctls []string
	// LimitsDomains are users ("alice") or groups ("@hpc") whose effective
	// pam_limits values are computed besides the wildcard domain.
	LimitsDomains []string
	// MaxFileSize caps each read; DefaultMaxFileSize when zero.
	MaxFileSize int64
	// Now stamps collected_at; time.Now when nil.
	Now func() time.Time
	// Version is written as the collector version.
	Version string
	// Exec runs a command on the host being collected and returns its
	// standard output; a non-zero exit is an error, and a missing binary an
	// error wrapping exec.ErrNotFound (as os/exec reports it). It is called
	// with the collection's context. Nil (the default) runs no command, and
	// the facts only a command can give (each GPU's persistence mode,
	// through nvidia-smi) are left unknown. Set it only when the Source is
	// the live host that the commands run on: a fixture tree or mounted image
	// must not be mixed with the facts of the machine running fleetaudit.
	Exec func(ctx context.Context, name string, args ...string) ([]byte, error)
	// Manifests are Kubernetes manifest files or directories (kubectl get
	// pods -o json output, workload YAML) whose pods and pod templates become
	// the snapshot's pods. They are read from the local filesystem, not
	// through the Source: they describe the host's workload, not its files.
	Manifests []string
	// ManifestFS, when set, is where Manifests are read instead of the
	// local filesystem (a config repo's files), and sources name them by
	// their path in it.
	ManifestFS fs.FS
}

// collection is the state of one Collect call, shared by the fact families.
type collection struct {
	ctx  context.Context
	src  Source
	snap *snapshot.Snapshot
	opts Options
}

type family struct {
	name string
	run  func(*collection)
}

// families run in this order: later ones may read facts earlier ones set
// (logind's default depends on the OS, IOMMU passthrough on the cmdline).
var families = []family{
	{"os", collectOS},
	{"kernel", collectKernel},
	{"boot", collectBoot},
	{"sysctl", collectSysctl},
	{"limits", collectLimits},
	{"logind", collectLogind},
	{"nvidia", collectNVIDIA},
	{"modules", collectModules},
	{"libraries", collectLibraries},
	{"memory", collectMemory},
	{"rdma", collectRDMA},
	{"iommu", collectIOMMU},
	{"pci", collectPCI},
	{"nccl_config", collectNCCLConfig},
	{"processes", collectProcesses},
	{"pods", collectPods},
}

// Collect reads every fact family from src. Unreadable or malformed sources
// become entries in the snapshot's Errors, and a root that cannot be listed
// at all one snapshot.CollectorSource error (see Unread) with no facts; the
// error result is only for a cancelled context.
func Collect(ctx context.Context, src Source, opts Options) (*snapshot.Snapshot, error) {
	if opts.MaxFileSize <= 0 {
		opts.MaxFileSize = DefaultMaxFileSize
	}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	snap := snapshot.New("")
	snap.CollectedAt = now().UTC()
	snap.Source = snapshot.Origin{Kind: opts.Kind, Root: opts.RootLabel, Collector: opts.Version}
	c := &collection{ctx: ctx, src: src, snap: snap, opts: opts}
	snap.Host = opts.Hostname
	if _, err := src.ReadDir("."); err != nil {
		// Every read would fail the same way (a root of mode 000 read
		// unprivileged): one error saying the host was not read, instead of
		// a snapshot of per-file failures and no host name.
		c.fail(snapshot.CollectorSource, rootName(opts.RootLabel), fmt.Errorf("cannot read the root: %w", rootCause(err)))
		snap.Normalize()
		return snap, nil
	}
	if snap.Host == "" {
		snap.Host = c.hostname()
	}
	defer snap.Normalize()
	for _, f := range families {
		if err := ctx.Err(); err != nil {
			return snap, fmt.Errorf("collecting %s: %w", f.name, err)
		}
		c.runFamily(f)
	}
	if err := ctx.Err(); err != nil {
		// The last family may have stopped half way.
		return snap, fmt.Errorf("collecting: %w", err)
	}
	slices.SortStableFunc(snap.Errors, func(a, b snapshot.CollectionError) int {
		return strings.Compare(a.Collector+"\x00"+a.Path, b.Collector+"\x00"+b.Path)
	})
	return snap, nil
}

// Unread returns the error that kept Collect from reading the source at all
// (its root cannot be listed), or nil when the snapshot was collected.
func Unread(snap *snapshot.Snapshot) *snapshot.CollectionError {
	for i, e := range snap.Errors {
		if e.Collector == snapshot.CollectorSource {
			return &snap.Errors[i]
		}
	}
	return nil
}

func rootName(label string) string {
	if label == "" {
		return "/"
	}
	return label
}

// rootCause drops the Source's name for its root ("/.") from err.
func rootCause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// runFamily keeps one family's bug from losing the rest of the snapshot.
func (c *collection) runFamily(f family) {
	defer func() {
		if r := recover(); r != nil {
			c.fail(f.name, "", fmt.Errorf("collector panicked: %v", r))
		}
	}()
	f.run(c)
}

// fail records that path could not be read or parsed.
func (c *collection) fail(collector, path string, err error) {
	c.snap.Errors = append(c.snap.Errors, snapshot.CollectionError{
		Collector: collector, Path: path, Reason: reason(err),
	})
}

// reason strips the path from fs errors: the entry names it already.
func reason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Op + ": " + pe.Err.Error()
	}
	return err.Error()
}

// from records the provenance of a fact as file:line (line 0: the whole file).
func (c *collection) from(fact, file string, line int) {
	c.snap.Sources[fact] = c.where(file, line)
}

// where formats a provenance: the source's own description of the file
// (a config-repo layer) when it has one, and the line when known.
func (c *collection) where(file string, line int) string {
	where := file
	if d, ok := c.src.(Describer); ok {
		if desc := d.Describe(rel(file)); desc != "" {
			where = desc
		}
	}
	if line > 0 {
		where += ":" + strconv.Itoa(line)
	}
	return where
}

// defaulted records that a fact has no source file and took a default.
func (c *collection) defaulted(fact, why string) {
	c.snap.Sources[fact] = "default: " + why
}

// read returns a file's contents. A missing file returns ok=false with no
// error recorded: absence is a fact. Any other failure is recorded against
// collector and also returns ok=false.
func (c *collection) read(collector, name string) ([]byte, bool) {
	data, err := readCapped(c.src, name, c.opts.MaxFileSize)
	if err == nil {
		return data, true
	}
	if !errors.Is(err, fs.ErrNotExist) {
		c.fail(collector, name, err)
	}
	return nil, false
}

// readDir lists a directory sorted by name. A missing directory is empty;
// any other failure is recorded.
func (c *collection) readDir(collector, name string) []fs.DirEntry {
	entries, err := c.src.ReadDir(rel(name))
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			c.fail(collector, name, err)
		}
		return nil
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries
}

// readTrimmed is read for one-value pseudo-files such as /sys/module/x/version.
func (c *collection) readTrimmed(collector, name string) (string, bool) {
	data, ok := c.read(collector, name)
	return strings.TrimSpace(string(data)), ok
}

func (c *collection) hostname() string {
	for _, name := range []string{"/proc/sys/kernel/hostname", "/etc/hostname"} {
		data, err := readCapped(c.src, name, 4096)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			line = strings.TrimSpace(line)
			if line != "" && !strings.HasPrefix(line, "#") {
				return line
			}
		}
	}
	return ""
}
