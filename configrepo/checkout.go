package configrepo

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing/fstest"
)

// WorkTree names the uncommitted state of the repo as a ref.
const WorkTree = ""

// maxRepoBytes bounds the files of one checkout held in memory.
const maxRepoBytes = 1 << 30

// Checkout is one state of the repo, held in memory: config repos are
// small, and rendering a fleet then writes nothing to disk.
type Checkout struct {
	// Files are the repo's regular files by slash path.
	Files fstest.MapFS
	// Ref is what was checked out ("" for the work tree) and Commit the
	// commit it resolved to.
	Ref    string
	Commit string
	// Refused maps repo paths that were not materialised to why: symlinks
	// and other non-regular files never enter a rendered root.
	Refused map[string]string

	size int64
}

// Label names the checkout for people: the ref, or "work tree".
func (c *Checkout) Label() string {
	if c.Ref == WorkTree {
		return "work tree"
	}
	return c.Ref
}

// CheckoutRef reads ref of the git repo at repo with git archive, so the
// repo's own work tree and index are never touched.
func CheckoutRef(ctx context.Context, repo, ref string) (*Checkout, error) {
	if ref == "" || strings.HasPrefix(ref, "-") {
		return nil, fmt.Errorf("ref %q: want a commit, branch or tag", ref)
	}
	commit, err := git(ctx, repo, nil, "rev-parse", "--verify", "--end-of-options", ref+"^{commit}")
	if err != nil {
		return nil, fmt.Errorf("ref %s: %w", ref, err)
	}
	c := &Checkout{Files: fstest.MapFS{}, Ref: ref, Commit: strings.TrimSpace(string(commit)), Refused: map[string]string{}}
	// The config repo may be a directory inside a larger git repo: archive
	// that tree from the top (git archive in a subdirectory limits itself
	// to the subdirectory's path a second time).
	top, err := git(ctx, repo, nil, "rev-parse", "--show-toplevel", "--show-prefix")
	if err != nil {
		return nil, err
	}
	lines := strings.SplitN(string(top), "\n", 3)
	if len(lines) < 2 {
		return nil, fmt.Errorf("git rev-parse: unexpected output %q", top)
	}
	topDir, prefix := lines[0], strings.TrimSuffix(strings.TrimSpace(lines[1]), "/")
	treeish := c.Commit
	if prefix != "" {
		treeish += ":" + prefix
		if _, err := git(ctx, topDir, nil, "cat-file", "-e", treeish); err != nil {
			return c, nil // the config repo's directory does not exist yet at ref
		}
	}
	// Stream the archive: only the files are kept, never the whole tar.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := git(ctx, topDir, pw, "archive", "--format=tar", treeish)
		pw.CloseWithError(err)
		done <- err
	}()
	readErr := c.readArchive(pr)
	if readErr == nil {
		// tar ends before git's padding to a full record: let git finish.
		_, readErr = io.Copy(io.Discard, pr)
	}
	if readErr != nil {
		cancel() // stop git; its error is then the cancellation
		pr.CloseWithError(readErr)
	}
	gitErr := <-done
	if readErr != nil {
		return nil, fmt.Errorf("ref %s: %w", ref, readErr)
	}
	if gitErr != nil {
		return nil, fmt.Errorf("ref %s: %w", ref, gitErr)
	}
	return c, nil
}

// readArchive keeps the regular files of a git archive stream and records
// everything else as refused.
func (c *Checkout) readArchive(r io.Reader) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("reading git archive: %w", err)
		}
		if h.Typeflag == tar.TypeXGlobalHeader {
			continue
		}
		name, err := repoPath(strings.TrimSuffix(h.Name, "/"))
		if err != nil {
			c.Refused[h.Name] = err.Error()
			continue
		}
		switch h.Typeflag {
		case tar.TypeDir:
		case tar.TypeReg:
			if err := c.add(name, tr, fs.FileMode(h.Mode)); err != nil {
				return err
			}
		case tar.TypeSymlink:
			c.Refused[name] = fmt.Sprintf("symlink to %s: layers must hold regular files", h.Linkname)
		default:
			c.Refused[name] = fmt.Sprintf("not a regular file (tar type %q)", h.Typeflag)
		}
	}
	return nil
}

// CheckoutWorkTree reads the work tree's tracked and untracked files (not
// the ignored ones).
func CheckoutWorkTree(ctx context.Context, repo string) (*Checkout, error) {
	c := &Checkout{Files: fstest.MapFS{}, Ref: WorkTree, Refused: map[string]string{}}
	if head, err := git(ctx, repo, nil, "rev-parse", "--verify", "--quiet", "HEAD"); err == nil {
		c.Commit = strings.TrimSpace(string(head))
	}
	list, err := git(ctx, repo, nil, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	if err != nil {
		return nil, fmt.Errorf("work tree: %w", err)
	}
	seen := map[string]bool{}
	for _, p := range strings.Split(string(list), "\x00") {
		if p == "" || seen[p] {
			continue
		}
		seen[p] = true
		name, err := repoPath(p)
		if err != nil {
			c.Refused[p] = err.Error()
			continue
		}
		local := filepath.Join(repo, filepath.FromSlash(name))
		fi, err := os.Lstat(local)
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted in the work tree, not yet staged
		}
		if err != nil {
			return nil, fmt.Errorf("work tree: %w", err)
		}
		switch {
		case fi.Mode().IsRegular():
			f, err := os.Open(local)
			if err != nil {
				return nil, fmt.Errorf("work tree: %w", err)
			}
			err = c.add(name, f, fi.Mode())
			f.Close()
			if err != nil {
				return nil, fmt.Errorf("work tree: %w", err)
			}
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(local)
			c.Refused[name] = fmt.Sprintf("symlink to %s: layers must hold regular files", target)
		case fi.IsDir():
			// A submodule: its files are another repo's.
			c.Refused[name] = "a submodule or nested repo: not part of this repo's layers"
		default:
			c.Refused[name] = "not a regular file"
		}
	}
	return c, nil
}

func (c *Checkout) add(name string, r io.Reader, mode fs.FileMode) error {
	data, err := io.ReadAll(io.LimitReader(r, maxRepoBytes-c.size+1))
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if c.size += int64(len(data)); c.size > maxRepoBytes {
		return fmt.Errorf("the repo's files exceed %d bytes", int64(maxRepoBytes))
	}
	c.Files[name] = &fstest.MapFile{Data: data, Mode: mode.Perm()}
	return nil
}

// Materialize writes the checkout's files under dir, for a render command.
func (c *Checkout) Materialize(dir string) error {
	for name, f := range c.Files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.Data, f.Mode.Perm()|0o600); err != nil {
			return err
		}
	}
	return nil
}

// git runs git in repo; stdout goes to out when given, else is returned.
func git(ctx context.Context, repo string, out io.Writer, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", repo}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if out != nil {
		cmd.Stdout = out
	}
	// Keep the user's pager, editor and prompts out of a batch run.
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_PAGER=cat", "LC_ALL=C")
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			return nil, fmt.Errorf("git %s: %w", args[0], err)
		}
		return nil, fmt.Errorf("git %s: %s", args[0], msg)
	}
	return stdout.Bytes(), nil
}
