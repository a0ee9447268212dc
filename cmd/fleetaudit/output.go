package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

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
// large fleet is never held in memory whole: stdout for "-", else the file
// name as safeio.WriteOutput writes it (atomically replaced, or written
// through for a FIFO or a character device).
func writeOutputWith(ctx context.Context, a *app, name string, render func(io.Writer) error) error {
	if name == "-" || name == "" {
		bw := bufio.NewWriter(a.out)
		if err := render(bw); err != nil {
			return err
		}
		return bw.Flush()
	}
	return flagged(safeio.WriteOutput(ctx, name, render))
}

// flagged names -o in an error about the name it gave.
func flagged(err error) error {
	if _, ok := errors.AsType[*safeio.UnwritableError](err); ok {
		return fmt.Errorf("-o %w", err)
	}
	return err
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
	if err := safeio.CheckOutput(output); err != nil {
		return usageError{flagged(err)}
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
