package configrepo

import (
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
	"strconv"
	"strings"
	"syscall"
	"testing/fstest"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/fleetaudit/fleetaudit/collectors"
	"github.com/fleetaudit/fleetaudit/internal/safeio"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

// ErrRenderCommandNotAllowed is returned for a repo whose fleetaudit.yaml
// declares a render command when the caller did not allow running it: the
// command comes from the change under review.
var ErrRenderCommandNotAllowed = errors.New("fleetaudit.yaml declares a render command; it runs code from the repo, so allow it explicitly (--allow-render-command)")

// Rendered is one fleet's root tree at one checkout.
type Rendered struct {
	Fleet string
	// Root is the fleet's files as under /: the stacked layers in memory,
	// or the directory a render command wrote.
	Root collectors.Source
	// Origins maps a rendered path ("/etc/default/grub") to the repo file
	// that put it there ("layers/base/etc/default/grub"). Empty for a root
	// a render command wrote.
	Origins map[string]string
	// Digests maps every rendered path (and every manifest and the baseline,
	// by repo path) to a digest of its content, to tell which fleets a
	// change reaches.
	Digests map[string][sha256.Size]byte
	// Manifests is the repo directory of the fleet's Kubernetes manifests,
	// "" when it has none.
	Manifests string
	// Baseline is the fleet's baseline snapshot, if any.
	Baseline []byte
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
	// WorkDir is where a render command's checkout and root are written.
	WorkDir string
}

// overlay is a fleet's stacked layers; it describes each file by the layer
// that put it there, so provenance and errors name the repo file.
type overlay struct {
	collectors.Source
	// layers maps a rendered path ("/etc/default/grub") to its layer.
	layers map[string]string
}

func (o overlay) Describe(name string) (snapshot.Provenance, bool) {
	file := "/" + name
	layer, ok := o.layers[file]
	if !ok {
		return snapshot.Provenance{}, false
	}
	return snapshot.Provenance{Layer: layer, File: file}, true
}

// Render stacks fleet's layers from checkout co (or runs the render command).
func Render(ctx context.Context, co *Checkout, m *Manifest, fleet string, opts RenderOptions) (*Rendered, error) {
	spec := m.Fleets[fleet]
	if spec == nil {
		return nil, fmt.Errorf("fleet %s: not in %s", fleet, ManifestFile)
	}
	r := &Rendered{Fleet: fleet, Origins: map[string]string{}, Digests: map[string][sha256.Size]byte{}}
	var prefixes []string
	if m.Render != nil {
		if !opts.AllowCommand {
			return nil, ErrRenderCommandNotAllowed
		}
		if opts.WorkDir == "" {
			return nil, fmt.Errorf("fleet %s: a render command needs a work directory", fleet)
		}
		tree, root := filepath.Join(opts.WorkDir, "tree"), filepath.Join(opts.WorkDir, "root")
		if err := co.Materialize(tree); err != nil {
			return nil, fmt.Errorf("fleet %s: %w", fleet, err)
		}
		if err := os.MkdirAll(root, 0o755); err != nil {
			return nil, err
		}
		if err := runRender(ctx, opts.WorkDir, tree, m.Render, fleet, spec.Layers, root, opts.CommandTimeout); err != nil {
			return nil, fmt.Errorf("fleet %s: %w", fleet, err)
		}
		if err := digestTree(root, r.Digests); err != nil {
			return nil, fmt.Errorf("fleet %s: reading the rendered root: %w", fleet, err)
		}
		r.Root = collectors.Dir(root)
	} else {
		files := fstest.MapFS{}
		layers := map[string]string{}
		for _, layer := range spec.Layers {
			dir := "layers/" + layer
			prefixes = append(prefixes, dir+"/")
			if err := r.stack(co, dir, files); err != nil {
				return nil, fmt.Errorf("fleet %s: layer %s: %w", fleet, layer, err)
			}
			for p, origin := range r.Origins {
				if strings.HasPrefix(origin, dir+"/") {
					layers[p] = layer
				}
			}
		}
		r.Root = overlay{Source: collectors.FS(files), layers: layers}
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
	if fi, err := fs.Stat(co.Files, k8s); err == nil && fi.IsDir() {
		r.Manifests = k8s
		for name, f := range co.Files {
			if strings.HasPrefix(name, k8s+"/") {
				r.Digests[name] = sha256.Sum256(f.Data)
			}
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
		f, ok := co.Files[b]
		if !ok {
			return nil, fmt.Errorf("fleet %s: baseline %s: no such file in the repo", fleet, b)
		}
		r.Baseline = f.Data
		r.Digests[b] = sha256.Sum256(f.Data)
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

// stack lays one layer over files: a file replaces the one at the same
// path, directories (the .d ones included) merge by file name.
func (r *Rendered) stack(co *Checkout, dir string, files fstest.MapFS) error {
	fi, err := fs.Stat(co.Files, dir)
	if err != nil || !fi.IsDir() {
		if why, refused := co.Refused[dir]; refused {
			return fmt.Errorf("%s: %s", dir, why)
		}
		return fmt.Errorf("%s: no such directory in the repo", dir)
	}
	prefix := dir + "/"
	for name, f := range co.Files {
		rel, ok := strings.CutPrefix(name, prefix)
		if !ok {
			continue
		}
		// A path that is a file in one layer and a directory in another
		// cannot be stacked.
		for p := path.Dir(rel); p != "."; p = path.Dir(p) {
			if _, clash := files[p]; clash {
				return fmt.Errorf("%s is under %s, a file in an earlier layer (%s)", name, "/"+p, r.Origins["/"+p])
			}
		}
		files[rel] = f
		r.Origins["/"+rel] = name
		r.Digests["/"+rel] = sha256.Sum256(f.Data)
	}
	for rel := range files {
		for p := path.Dir(rel); p != "."; p = path.Dir(p) {
			if _, isFile := files[p]; isFile {
				return fmt.Errorf("%s is a file here and a directory in another layer", "/"+p)
			}
		}
	}
	return nil
}

const (
	// renderWaitDelay bounds waiting for a render command once it was told
	// to stop, and for its output once it exited.
	renderWaitDelay = 3 * time.Second
	// maxRenderOutput is what is kept of a render command's output (its
	// end), for the error message of a failed render.
	maxRenderOutput = 16 << 10
	// renderMessageLines and renderMessageLineBytes bound what of that
	// output an error message carries.
	renderMessageLines     = 5
	renderMessageLineBytes = 300
)

// runRender runs the render command for one fleet in tree, writing root.
// The command runs in a process group of its own, killed as a whole when it
// times out or the gate is cancelled, and after it exits: a background
// child (sleep 45 &) neither holds the gate nor outlives the render. Its
// environment is renderEnv, nothing of the gate's.
func runRender(ctx context.Context, work, tree string, rc *RenderCommand, fleet string, layers []string, root string, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	name := commandLabel(rc.Command)
	home, tmp := filepath.Join(work, "home"), filepath.Join(work, "tmp")
	for _, d := range []string{home, tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, rc.Command[0], rc.Command[1:]...)
	cmd.Dir = tree
	cmd.Env = renderEnv(fleet, root, layers, home, tmp)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return killGroup(cmd.Process.Pid) }
	cmd.WaitDelay = renderWaitDelay
	// Output goes through a pipe of our own, not one exec copies from: Wait
	// then returns when the command exits, however many children still
	// hold the pipe.
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	err = cmd.Start()
	pw.Close()
	if err != nil {
		pr.Close()
		return fmt.Errorf("render command %s: %w", name, err)
	}
	out := &tailBuffer{max: maxRenderOutput}
	copied := make(chan struct{})
	go func() {
		io.Copy(out, pr)
		close(copied)
	}()
	waitErr := cmd.Wait()
	// What the command left running in its group goes with it. (A child
	// that left the group, setsid, is out of reach of this; its pipe is cut
	// below.)
	killGroup(cmd.Process.Pid)
	select {
	case <-copied:
	case <-time.After(renderWaitDelay):
	}
	pr.Close() // unblocks the copy if a child outside the group holds the pipe
	<-copied
	switch {
	case waitErr == nil:
		return nil
	case parent.Err() != nil:
		return fmt.Errorf("render command %s: %w", name, parent.Err())
	case ctx.Err() != nil:
		return fmt.Errorf("render command %s: timed out after %s%s", name, timeout, renderOutput(out.Bytes()))
	default:
		return fmt.Errorf("render command %s: %w%s", name, waitErr, renderOutput(out.Bytes()))
	}
}

// renderEnv is all a render command gets of an environment: PATH (to find
// its tools), a scratch HOME and TMPDIR, the C locale, and what it is asked
// to render. Tokens and credentials of the gate's environment (GITHUB_TOKEN,
// SSH_AUTH_SOCK, cloud keys) never reach code from the change under review.
func renderEnv(fleet, root string, layers []string, home, tmp string) []string {
	path := os.Getenv("PATH")
	if path == "" {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	return []string{
		"PATH=" + path,
		"HOME=" + home,
		"TMPDIR=" + tmp,
		"LANG=C",
		"LC_ALL=C",
		"FLEETAUDIT_FLEET=" + fleet,
		"FLEETAUDIT_ROOT=" + root,
		"FLEETAUDIT_LAYERS=" + strings.Join(layers, " "),
	}
}

// killGroup kills the process group led by pid; an empty group is fine.
func killGroup(pid int) error {
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

// commandLabel names a render command (from the repo) for a message:
// quoted, so control characters are escaped, and bounded.
func commandLabel(argv []string) string {
	return truncate(strconv.Quote(strings.Join(argv, " ")), renderMessageLineBytes)
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

// renderOutput is the end of a failed render command's output for its
// error: the last lines, each bounded, with control characters escaped.
func renderOutput(b []byte) string {
	text := strings.TrimSpace(string(b))
	if text == "" {
		return ""
	}
	lines := strings.Split(text, "\n")
	if len(lines) > renderMessageLines {
		lines = lines[len(lines)-renderMessageLines:]
	}
	for i, l := range lines {
		lines[i] = truncate(escapeControl(strings.TrimRight(l, "\r")), renderMessageLineBytes)
	}
	return ": " + strings.Join(lines, "\n")
}

// escapeControl writes control and format characters (escape sequences,
// bidi overrides) and invalid UTF-8 as Go escapes.
func escapeControl(s string) string {
	var b strings.Builder
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, "\\x%02x", s[0])
		case r != '\t' && (unicode.IsControl(r) || unicode.Is(unicode.Cf, r)):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
		s = s[size:]
	}
	return b.String()
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	buf []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) >= t.max {
		t.buf = append(t.buf[:0], p[len(p)-t.max:]...)
		return n, nil
	}
	if over := len(t.buf) + len(p) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

func (t *tailBuffer) Bytes() []byte { return t.buf }

// digestTree records a digest of every file under dir, keyed by "/" + its
// slash path; a symbolic link is digested by its target (collection
// resolves it inside the root, as after chroot). Devices, sockets and pipes
// are refused.
func digestTree(dir string, into map[string][sha256.Size]byte) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		key := "/" + filepath.ToSlash(rel)
		if d.IsDir() {
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			into[key] = sha256.Sum256([]byte("symlink\x00" + target))
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file, directory or symbolic link", key)
		}
		// A child the render left behind may have swapped in a FIFO since
		// the walk saw a regular file.
		f, err := safeio.Open(p)
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
