package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/viper"

	"github.com/fleetaudit/fleetaudit/configrepo"
	"github.com/fleetaudit/fleetaudit/internal/safeio"
)

// writeOutput writes data to stdout for "-", else to the file name as
// writeOutputWith does.
func writeOutput(ctx context.Context, a *app, name string, data []byte) error {
	return writeOutputWith(ctx, a, name, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// writeOutputWith renders straight into the destination, so a report of a
// large fleet is never held in memory whole. What is written depends on
// what name is:
//   - a regular file, or none yet: a temp file in the same directory renamed
//     over it, so a reader never sees half a report; an existing file keeps
//     its mode (and, as root, its owner);
//   - a symlink to a regular file: the file it points to, the same way; the
//     link stays a link;
//   - a character device or a FIFO (or a link to one, /dev/stdout): written
//     through, never replaced; a FIFO nobody reads fails at once;
//   - a directory, socket or block device: refused.
func writeOutputWith(ctx context.Context, a *app, name string, render func(io.Writer) error) error {
	if name == "-" || name == "" {
		bw := bufio.NewWriter(a.out)
		if err := render(bw); err != nil {
			return err
		}
		return bw.Flush()
	}
	target, info, through, err := outputTarget(name)
	if err != nil {
		return err
	}
	if through {
		return writeThrough(ctx, name, info, render)
	}
	return replaceFile(target, info, render)
}

// outputTarget says where name's bytes go: the path to replace and what is
// there now (nil: nothing yet), or through: write through name itself.
func outputTarget(name string) (target string, info fs.FileInfo, through bool, err error) {
	info, err = os.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return name, nil, false, nil
	}
	if err != nil {
		return "", nil, false, fmt.Errorf("writing %s: %w", name, err)
	}
	if info.Mode()&fs.ModeSymlink != 0 {
		if viaProcFD(name) {
			// /dev/stdout and friends: the file behind the descriptor is the
			// one the caller opened; replacing its path would lose the output.
			info, err = os.Stat(name)
			if err != nil {
				return "", nil, false, fmt.Errorf("writing %s: %w", name, err)
			}
			return name, info, true, checkWritable(name, info)
		}
		target, err = filepath.EvalSymlinks(name)
		if errors.Is(err, fs.ErrNotExist) {
			dest, _ := os.Readlink(name)
			return "", nil, false, fmt.Errorf("writing %s: a symlink to %s, which does not exist", name, dest)
		}
		if err != nil {
			return "", nil, false, fmt.Errorf("writing %s: %w", name, err)
		}
		if info, err = os.Lstat(target); err != nil {
			return "", nil, false, fmt.Errorf("writing %s: %w", name, err)
		}
	} else {
		target = name
	}
	if err := checkWritable(name, info); err != nil {
		return "", nil, false, err
	}
	return target, info, !info.Mode().IsRegular(), nil
}

// checkWritable refuses what a report cannot be written to.
func checkWritable(name string, info fs.FileInfo) error {
	mode := info.Mode()
	var what string
	switch {
	case mode.IsRegular(), mode&fs.ModeNamedPipe != 0, mode&fs.ModeCharDevice != 0:
		return nil
	case mode.IsDir():
		what = "a directory"
	case mode&fs.ModeSocket != 0:
		what = "a socket"
	case mode&fs.ModeDevice != 0:
		what = "a block device"
	default:
		what = "not a file fleetaudit can write (" + mode.Type().String() + ")"
	}
	return fmt.Errorf("-o %s: %s; name a file, a FIFO or a character device", name, what)
}

// viaProcFD reports whether name reaches its file through /proc (as
// /dev/stdout -> /proc/self/fd/1 does), following the links one by one.
func viaProcFD(name string) bool {
	p := name
	for range 40 {
		dir, err := filepath.EvalSymlinks(filepath.Dir(p))
		if err != nil {
			return false
		}
		if dir == "/proc" || strings.HasPrefix(dir, "/proc/") {
			return true
		}
		p = filepath.Join(dir, filepath.Base(p))
		dest, err := os.Readlink(p)
		if err != nil {
			return false
		}
		if !filepath.IsAbs(dest) {
			dest = filepath.Join(dir, dest)
		}
		p = dest
	}
	return false
}

// writeThrough writes into name in place: a character device, a FIFO, or the
// file behind a /proc descriptor link.
func writeThrough(ctx context.Context, name string, info fs.FileInfo, render func(io.Writer) error) error {
	flags := syscall.O_WRONLY | syscall.O_CLOEXEC | syscall.O_NOCTTY | syscall.O_NONBLOCK
	if info.Mode().IsRegular() {
		flags |= syscall.O_APPEND
	}
	// O_NONBLOCK: opening a FIFO without a reader fails with ENXIO instead of
	// waiting for one, and opening a device never waits for it.
	fd, err := syscall.Open(name, flags, 0)
	if errors.Is(err, syscall.ENXIO) && info.Mode()&fs.ModeNamedPipe != 0 {
		return fmt.Errorf("writing %s: a FIFO that no process is reading; start its reader first", name)
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", name, &fs.PathError{Op: "open", Path: name, Err: err})
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		syscall.Close(fd)
		return fmt.Errorf("writing %s: %w", name, err)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFIFO {
		// Writes to a device wait as usual. A FIFO stays non-blocking: Go's
		// poller then waits for the reader, and the wait can be cancelled.
		if err := syscall.SetNonblock(fd, false); err != nil {
			syscall.Close(fd)
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	f := os.NewFile(uintptr(fd), name)
	stop := context.AfterFunc(ctx, func() { _ = f.SetWriteDeadline(time.Now()) })
	defer stop()
	bw := bufio.NewWriter(f)
	err = render(bw)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if ctx.Err() != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		err = ctx.Err()
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	return nil
}

// replaceFile writes a temp file beside target and renames it over target.
// old is the file there now, nil when there is none: the new file gets its
// mode (and owner, when root may set it), else 0644 less the umask.
func replaceFile(target string, old fs.FileInfo, render func(io.Writer) error) (err error) {
	perm := fs.FileMode(0o644)
	if old != nil {
		// Created private, opened up to the old mode below: a 0600 report is
		// never readable by others, not even while it is being written.
		perm = 0o600
	}
	tmp, err := createTemp(filepath.Dir(target), filepath.Base(target), perm)
	if err != nil {
		return fmt.Errorf("writing %s: %w", target, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if old != nil {
		if err := tmp.Chmod(old.Mode().Perm()); err != nil {
			return fmt.Errorf("writing %s: %w", target, err)
		}
		if st, ok := old.Sys().(*syscall.Stat_t); ok && os.Geteuid() == 0 && (int(st.Uid) != 0 || int(st.Gid) != os.Getegid()) {
			if err := tmp.Chown(int(st.Uid), int(st.Gid)); err != nil {
				return fmt.Errorf("writing %s: keeping its owner: %w", target, err)
			}
		}
	}
	bw := bufio.NewWriter(tmp)
	if err := render(bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing %s: %w", target, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("writing %s: %w", target, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", target, err)
	}
	if err := os.Rename(tmp.Name(), target); err != nil {
		return fmt.Errorf("writing %s: %w", target, err)
	}
	return nil
}

// createTemp is os.CreateTemp with a mode: the kernel applies the umask, as
// it does to any new file. The name stays within NAME_MAX however long base is.
func createTemp(dir, base string, perm fs.FileMode) (*os.File, error) {
	if len(base) > 200 {
		base = base[:200]
	}
	var err error
	for range 100 {
		name := filepath.Join(dir, "."+base+"."+strconv.FormatUint(rand.Uint64(), 36))
		var f *os.File
		f, err = os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
	return nil, err
}

// input is something a command reads, which -o must not overwrite: a file,
// or a directory whose files are read to depth (0: any depth).
type input struct {
	flag, path string
	depth      int
}

// checkOutput fails, before anything runs, when -o names one of the
// command's inputs or something a report cannot be written to (a directory,
// a socket, a dangling symlink). An input the command creates (the store)
// may not exist yet: then it is the same file when both names resolve to
// one path.
func checkOutput(output string, inputs []input) error {
	if output == "-" || output == "" {
		return nil
	}
	if _, _, _, err := outputTarget(output); err != nil {
		return usageError{err}
	}
	out, err := os.Stat(output)
	if err == nil && out.IsDir() {
		return nil // refused by the writer
	}
	resolved, err := resolvePath(output)
	if err != nil {
		return nil
	}
	for _, in := range inputs {
		info, err := os.Stat(in.path)
		if err != nil {
			if r, err := resolvePath(in.path); err == nil && r == resolved {
				return usageError{fmt.Errorf("-o %s is the %s input %s: refusing to overwrite an input", output, in.flag, in.path)}
			}
			continue // the command reports a missing input itself
		}
		if out == nil {
			continue // a new file is no file of an input
		}
		if !info.IsDir() {
			if os.SameFile(info, out) {
				return usageError{fmt.Errorf("-o %s is the %s input %s: refusing to overwrite an input", output, in.flag, in.path)}
			}
			continue
		}
		dir := resolved
		for level := 1; ; level++ {
			parent := filepath.Dir(dir)
			if parent == dir || (in.depth > 0 && level > in.depth) {
				break
			}
			dir = parent
			if d, err := os.Stat(dir); err == nil && os.SameFile(d, info) {
				return usageError{fmt.Errorf("-o %s is a file in the %s input %s: refusing to overwrite an input", output, in.flag, in.path)}
			}
		}
	}
	return nil
}

// resolvePath is p absolute, with the symlinks of the part of it that
// exists resolved: two names of one file that does not exist yet (a
// relative one, one through a linked directory) resolve alike.
func resolvePath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	var rest []string
	for dir, links := abs, 0; ; {
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(append([]string{r}, rest...)...), nil
		}
		if dest, err := os.Readlink(dir); err == nil && links < 40 {
			// A dangling link: a file created through it lands there.
			if !filepath.IsAbs(dest) {
				dest = filepath.Join(filepath.Dir(dir), dest)
			}
			dir, links = dest, links+1
			continue
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return abs, nil
		}
		rest = append([]string{filepath.Base(dir)}, rest...)
		dir = parent
	}
}

// inputsOf lists the paths of flags as inputs, read to depth when directories.
func inputsOf(flag string, paths []string, depth int) []input {
	var out []input
	for _, p := range paths {
		if p != "" {
			out = append(out, input{flag: flag, path: p, depth: depth})
		}
	}
	return out
}

// auditInputs are what audit reads: snapshot files and the *.json files of
// snapshot directories, the inventory, policy directories (any depth) and
// fleet profiles.
func auditInputs(v *viper.Viper) []input {
	ins := inputsOf("--snapshots", v.GetStringSlice("snapshots"), 1)
	ins = append(ins, reportInputsOf(v)...)
	return ins
}

// gateInputs are what gate reads: the repo's manifest, layers and manifests
// (the work tree is read when --head is not given), the inventory and
// baselines the manifest names, and the report inputs.
func gateInputs(v *viper.Viper) []input {
	repo := v.GetString("repo")
	manifest := filepath.Join(repo, configrepo.ManifestFile)
	ins := []input{{flag: "--repo", path: manifest}}
	paths := []string{filepath.Join(repo, "layers"), filepath.Join(repo, "k8s")}
	if data, err := safeio.ReadFile(manifest, 1<<20); err == nil {
		if m, err := configrepo.ParseManifest(data); err == nil {
			if m.Inventory != "" {
				paths = append(paths, filepath.Join(repo, m.Inventory))
			}
			for _, f := range m.Fleets {
				for _, p := range []string{f.Baseline, f.K8s} {
					if p != "" {
						paths = append(paths, filepath.Join(repo, p))
					}
				}
			}
		}
	}
	ins = append(ins, inputsOf("--repo", paths, 0)...)
	return append(ins, reportInputsOf(v)...)
}

// reportInputsOf are the inputs of the flags audit and gate share.
func reportInputsOf(v *viper.Viper) []input {
	ins := inputsOf("--inventory", []string{v.GetString("inventory")}, 0)
	ins = append(ins, inputsOf("--policies", v.GetStringSlice("policies"), 0)...)
	return append(ins, inputsOf("--fleets", v.GetStringSlice("fleets"), 1)...)
}
