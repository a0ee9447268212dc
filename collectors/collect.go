// Package collectors turns one host into a snapshot. Collect reads a
// Target, and every read goes through it, so the same code reads a live
// host, a fixture tree in a test, a remote host or a rendered config repo.
//
// A Target is the seam between transports and collectors. A transport
// builds one per host and the collectors never learn which transport it
// was:
//
//   - Files: a Source rooted at the host's "/". Dir is a local directory
//     (links resolved inside it as after chroot, by the one resolver every
//     source shares); FS adapts any fs.FS. A source whose files come from
//     elsewhere than their host path (a config-repo layer) also implements
//     Describer, and provenance and error entries name files through it.
//   - Exec: runs a command on that host, nil for none.
//   - Pods: the host's pods (ManifestFiles, ManifestsIn), nil for none.
//   - Origin: kind, address and root label, as the snapshot records them.
//
// Local is the local directory's target; configrepo builds the overlay's.
// A remote transport (SSH, the Kubernetes API) lives in a package of its
// own and fills the same fields: a Source over its connection, a Runner
// that runs there, a PodSource over its API.
//
// Collectors report raw facts and where they came from (snapshot.Provenance,
// written only by this package's from/at/defaulted/byCommand helpers). They
// never judge a value: that is policy's job.
package collectors

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

// DefaultMaxFileSize caps any single configuration or pseudo-file read.
const DefaultMaxFileSize = 1 << 20

// Options tune one collection; what is collected comes from the Target.
type Options struct {
	// Hostname overrides the name read from the root.
	Hostname string
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
	// ConfigOnly says the target is configuration, not a host (a rendered
	// config repo): it has no running state, so a missing /proc file is
	// expected rather than a blind spot.
	ConfigOnly bool
}

// collection is the state of one Collect call, shared by the fact families.
type collection struct {
	ctx  context.Context
	src  Source
	exec Runner
	pods PodSource
	snap *snapshot.Snapshot
	opts Options
	// loginLibraryPath is LD_LIBRARY_PATH as the login environment exports
	// it (/etc/environment, profile.d), set by nccl_config for libraries.
	loginLibraryPath ncclSetting
	// proc is the one scan of /proc (procs), nil until a family asks.
	proc *procScan
}

// Collect reads every fact family from target. Unreadable or malformed
// sources become entries in the snapshot's Errors, and a root that cannot be
// listed at all one snapshot.CollectorSource error (see Unread) with no
// facts; the error result is only for a cancelled context.
func Collect(ctx context.Context, target Target, opts Options) (*snapshot.Snapshot, error) {
	if opts.MaxFileSize <= 0 {
		opts.MaxFileSize = DefaultMaxFileSize
	}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	snap := snapshot.New("")
	snap.CollectedAt = now().UTC()
	snap.Source = target.Origin
	snap.Source.Collector = opts.Version
	src := target.Files
	c := &collection{ctx: ctx, src: src, exec: target.Exec, pods: target.Pods, snap: snap, opts: opts}
	snap.Host = opts.Hostname
	if _, err := src.ReadDir("."); err != nil {
		// Every read would fail the same way (a root of mode 000 read
		// unprivileged): one error saying the host was not read, instead of
		// a snapshot of per-file failures and no host name.
		c.failAs(snapshot.CollectorSource, rootName(target.Origin.Root), fmt.Errorf("cannot read the root: %w", rootCause(err)))
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
		if snap.Source.Image && f.running() {
			continue
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

// fail records that path could not be read or parsed, naming path as
// provenance does (its repo path for a config-repo file).
func (c *collection) fail(collector, path string, err error) {
	c.failAs(collector, c.at(path, 0).Path(), err)
}

// skipped records a bad line that the file's reader skips: reported, yet
// the facts computed without it are what the reader applies.
func (c *collection) skipped(collector, path string, err error) {
	c.fail(collector, path, err)
	c.snap.Errors[len(c.snap.Errors)-1].Skipped = true
}

// failAs records an error about something that is not a file in the root
// (a pod manifest, a command), named as given.
func (c *collection) failAs(collector, name string, err error) {
	c.snap.Errors = append(c.snap.Errors, snapshot.CollectionError{
		Collector: collector, Path: name, Reason: c.reason(err),
	})
}

// reason strips the path from fs errors: the entry names it already. An
// error that names a file in its text names it as provenance does.
func (c *collection) reason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Op + ": " + pe.Err.Error()
	}
	var tl *tooLargeError
	if errors.As(err, &tl) {
		return c.at(tl.name, 0).Path() + ": " + tl.cause()
	}
	return err.Error()
}

// The provenance writer: every value of snapshot.Sources (and every source
// a section carries) is made here.

// from records the provenance of a fact as file:line (line 0: the whole file).
func (c *collection) from(fact, file string, line int) {
	c.snap.Sources[fact] = c.at(file, line)
}

// at is the provenance of a line (0: the whole file) of a file in the root:
// the source's own description of the file (a config-repo layer) when it has
// one.
func (c *collection) at(file string, line int) snapshot.Provenance {
	if d, ok := c.src.(Describer); ok {
		if p, ok := d.Describe(rel(file)); ok {
			p.Line = line
			return p
		}
	}
	return snapshot.FileAt(file, line)
}

// defaulted records that a fact has no source file and took a default.
func (c *collection) defaulted(fact, why string) {
	c.snap.Sources[fact] = snapshot.Defaulted(why)
}

// byCommand records that a fact came from a command's output.
func (c *collection) byCommand(fact, cmdline string) {
	c.snap.Sources[fact] = snapshot.FromCommand(cmdline)
}

// fromManifest records that a fact came from line of a pod manifest, a
// file outside the root named as the target's PodSource names it.
func (c *collection) fromManifest(fact, file string, line int) {
	c.snap.Sources[fact] = snapshot.FileAt(file, line)
}

// fromAll records a fact read from several places, in order.
func (c *collection) fromAll(fact string, places []snapshot.Provenance) {
	if len(places) == 0 {
		return
	}
	var all snapshot.Provenance
	for i, p := range places {
		more := p.More
		p.More = nil
		if i == 0 {
			all = p
		} else {
			all.More = append(all.More, p)
		}
		all.More = append(all.More, more...)
	}
	c.snap.Sources[fact] = all
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

// errRunningStateUnknown is a /proc file absent under the root.
var errRunningStateUnknown = errors.New("not present under the root, so the running state is unknown")

// missing reports that name does not exist under the root (read reports
// other failures itself).
func (c *collection) missing(name string) bool {
	_, err := c.src.Stat(rel(name))
	return errors.Is(err, fs.ErrNotExist)
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

func (c *collection) hostname() string { return Hostname(c.src) }

// Hostname is the host name Collect records for a host whose name is not
// given: the first line of /proc/sys/kernel/hostname, else of /etc/hostname;
// "" when neither names one.
func Hostname(src Source) string {
	for _, name := range []string{"/proc/sys/kernel/hostname", "/etc/hostname"} {
		data, err := readCapped(src, name, 4096)
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
