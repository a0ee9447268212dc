package configrepo

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// ErrRenderCommandNotAllowed is returned for a repo whose fleetaudit.yaml
// declares a render command when the caller did not allow running it: the
// command comes from the change under review.
var ErrRenderCommandNotAllowed = errors.New("fleetaudit.yaml declares a render command; it runs code from the repo, so allow it explicitly (--allow-render-command)")

// Rendered is one fleet's root tree at one checkout.
type Rendered struct {
	Fleet string
	// Root is the local directory holding the fleet's files as under /.
	Root string
	// Origins maps a rendered path ("/etc/default/grub") to the repo file
	// that put it there ("layers/base/etc/default/grub"). Empty for a root
	// a render command wrote.
	Origins map[string]string
	// Digests maps every rendered path (and every manifest and the baseline,
	// by repo path) to a digest of its content, to tell which fleets a
	// change reaches.
	Digests map[string][sha256.Size]byte
	// Manifests is the local directory of the fleet's Kubernetes manifests
	// and ManifestsRepo its repo path; both empty when it has none.
	Manifests     string
	ManifestsRepo string
	// Baseline is the local path of the fleet's baseline snapshot, if any.
	Baseline string
	// Refused are repo files of the fleet's layers and manifests that were
	// not rendered (symlinks, paths that leave the repo), with why.
	Refused []string
}

// RenderOptions tune Render.
type RenderOptions struct {
	// AllowCommand lets a manifest's render command run.
	AllowCommand bool
	// CommandTimeout bounds a render command; 5 minutes when zero.
	CommandTimeout time.Duration
}

// Render writes fleet's root under dst (created) from checkout co.
func Render(ctx context.Context, co *Checkout, m *Manifest, fleet, dst string, opts RenderOptions) (*Rendered, error) {
	spec := m.Fleets[fleet]
	if spec == nil {
		return nil, fmt.Errorf("fleet %s: not in %s", fleet, ManifestFile)
	}
	r := &Rendered{Fleet: fleet, Root: filepath.Join(dst, "root"), Origins: map[string]string{}, Digests: map[string][sha256.Size]byte{}}
	if err := os.MkdirAll(r.Root, 0o755); err != nil {
		return nil, err
	}
	prefixes := []string{}
	if m.Render != nil {
		if !opts.AllowCommand {
			return nil, ErrRenderCommandNotAllowed
		}
		if err := runRender(ctx, co, m.Render, fleet, spec.Layers, r.Root, opts.CommandTimeout); err != nil {
			return nil, fmt.Errorf("fleet %s: %w", fleet, err)
		}
		if err := digestTree(r.Root, "", r.Digests); err != nil {
			return nil, fmt.Errorf("fleet %s: reading the rendered root: %w", fleet, err)
		}
	} else {
		for _, layer := range spec.Layers {
			dir := "layers/" + layer
			prefixes = append(prefixes, dir+"/")
			if err := r.stack(co, dir); err != nil {
				return nil, fmt.Errorf("fleet %s: layer %s: %w", fleet, layer, err)
			}
		}
	}
	k8s := spec.K8s
	if k8s == "" {
		k8s = "k8s/" + fleet
	}
	k8s, err := repoPath(k8s)
	if err != nil {
		return nil, fmt.Errorf("fleet %s: k8s: %w", fleet, err)
	}
	prefixes = append(prefixes, k8s+"/")
	local := filepath.Join(co.Dir, filepath.FromSlash(k8s))
	if fi, err := os.Stat(local); err == nil && fi.IsDir() {
		r.Manifests, r.ManifestsRepo = local, k8s
		if err := digestTree(local, k8s, r.Digests); err != nil {
			return nil, fmt.Errorf("fleet %s: %s: %w", fleet, k8s, err)
		}
	} else if spec.K8s != "" {
		return nil, fmt.Errorf("fleet %s: k8s: %s is not a directory in the repo", fleet, k8s)
	}
	if spec.Baseline != "" {
		b, err := repoPath(spec.Baseline)
		if err != nil {
			return nil, fmt.Errorf("fleet %s: baseline: %w", fleet, err)
		}
		prefixes = append(prefixes, b)
		r.Baseline = filepath.Join(co.Dir, filepath.FromSlash(b))
		data, err := os.ReadFile(r.Baseline)
		if err != nil {
			return nil, fmt.Errorf("fleet %s: baseline %s: %w", fleet, b, err)
		}
		r.Digests[b] = sha256.Sum256(data)
	}
	for p, why := range co.Refused {
		for _, pre := range prefixes {
			if strings.HasPrefix(p, pre) || p == pre {
				r.Refused = append(r.Refused, fmt.Sprintf("%s: %s", p, why))
				break
			}
		}
	}
	slices.Sort(r.Refused)
	return r, nil
}

// stack copies one layer over the root: a file replaces the one at the same
// path, directories (the .d ones included) merge by file name.
func (r *Rendered) stack(co *Checkout, dir string) error {
	local := filepath.Join(co.Dir, filepath.FromSlash(dir))
	fi, err := os.Stat(local)
	if err != nil || !fi.IsDir() {
		if _, refused := co.Refused[dir]; refused {
			return fmt.Errorf("%s: %s", dir, co.Refused[dir])
		}
		return fmt.Errorf("%s: no such directory in the repo", dir)
	}
	return filepath.WalkDir(local, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(local, p)
		if err != nil {
			return err
		}
		slashed := "/" + filepath.ToSlash(rel)
		target := filepath.Join(r.Root, rel)
		if d.IsDir() {
			if rel == "." {
				return nil
			}
			if fi, err := os.Lstat(target); err == nil && !fi.IsDir() {
				return fmt.Errorf("%s/%s is a directory, an earlier layer's %s a file", dir, rel, slashed)
			}
			return os.MkdirAll(target, 0o755)
		}
		if fi, err := os.Lstat(target); err == nil {
			if fi.IsDir() {
				return fmt.Errorf("%s/%s is a file, an earlier layer's %s a directory", dir, filepath.ToSlash(rel), slashed)
			}
			if err := os.Remove(target); err != nil {
				return err
			}
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.WriteFile(target, data, 0o644); err != nil {
			return err
		}
		r.Origins[slashed] = path.Join(dir, filepath.ToSlash(rel))
		r.Digests[slashed] = sha256.Sum256(data)
		return nil
	})
}

func runRender(ctx context.Context, co *Checkout, rc *RenderCommand, fleet string, layers []string, root string, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, rc.Command[0], rc.Command[1:]...)
	cmd.Dir = co.Dir
	cmd.Env = append(os.Environ(),
		"FLEETAUDIT_FLEET="+fleet,
		"FLEETAUDIT_ROOT="+root,
		"FLEETAUDIT_LAYERS="+strings.Join(layers, " "),
	)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("render command %q: %w: %s", strings.Join(rc.Command, " "), err, lastLines(out.Bytes(), 5))
	}
	return nil
}

// digestTree records a digest of every regular file under dir, keyed by
// prefix + its slash path (a leading "/" when prefix is empty). Anything but
// a regular file or directory is refused: a render command's output is
// collected as a root and must not point outside it.
func digestTree(dir, prefix string, into map[string][sha256.Size]byte) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		key := path.Join(prefix, filepath.ToSlash(rel))
		if prefix == "" {
			key = "/" + filepath.ToSlash(rel)
		}
		if d.IsDir() {
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file", key)
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			return err
		}
		var sum [sha256.Size]byte
		copy(sum[:], h.Sum(nil))
		into[key] = sum
		return nil
	})
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
