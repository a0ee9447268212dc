package configrepo

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing/fstest"
	"time"

	"github.com/fleetaudit/fleetaudit/internal/safeio"
)

// WorkTree names the uncommitted state of the repo as a ref.
const WorkTree = ""

// limits bound what one checkout holds, so a hostile repo cannot exhaust
// memory (or the disk a render command's checkout is written to).
type limits struct {
	// files bounds the paths listed; bytes the content held, a file at
	// several paths counting at each (a render command gets every copy).
	files int
	bytes int64
}

const (
	maxRepoFiles = 200_000
	maxRepoBytes = 1 << 30
	// maxRecord bounds one path (or ls-tree line) read from git.
	maxRecord = 64 << 10
	// maxLinkTarget is what a message keeps of a symlink's target.
	maxLinkTarget = 256
	// maxGitOutput bounds the output of git commands read whole (rev-parse).
	maxGitOutput = 64 << 10
	// maxGitMessage is what an error keeps of git's stderr.
	maxGitMessage = 4 << 10
	// gitWaitDelay bounds waiting for git's pipes once it exited or was
	// killed.
	gitWaitDelay = 5 * time.Second
)

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
	lim  limits
}

// Label names the checkout for people: the ref, or "work tree".
func (c *Checkout) Label() string {
	if c.Ref == WorkTree {
		return "work tree"
	}
	return c.Ref
}

// CheckoutRef reads ref of the git repo at repo as committed: the tree is
// listed with git ls-tree and every blob's bytes are streamed with git
// cat-file --batch. Nothing goes through .gitattributes (export-ignore,
// export-subst, eol, working-tree-encoding), filter drivers or replace refs,
// so the change under review cannot alter what the gate reads; and the
// repo's own work tree and index are never touched.
func CheckoutRef(ctx context.Context, repo, ref string) (*Checkout, error) {
	return checkoutRef(ctx, repo, ref, limits{files: maxRepoFiles, bytes: maxRepoBytes})
}

func checkoutRef(ctx context.Context, repo, ref string, lim limits) (*Checkout, error) {
	if ref == "" || strings.HasPrefix(ref, "-") {
		return nil, fmt.Errorf("ref %q: want a commit, branch or tag", ref)
	}
	commit, err := git(ctx, repo, "rev-parse", "--verify", "--end-of-options", ref+"^{commit}")
	if err != nil {
		return nil, fmt.Errorf("ref %s: %w", ref, err)
	}
	c := &Checkout{Files: fstest.MapFS{}, Ref: ref, Commit: strings.TrimSpace(string(commit)), Refused: map[string]string{}, lim: lim}
	// The config repo may be a directory inside a larger git repo: read
	// that directory's tree, whose paths are relative to the config repo.
	prefix, err := git(ctx, repo, "rev-parse", "--show-prefix")
	if err != nil {
		return nil, fmt.Errorf("ref %s: %w", ref, err)
	}
	tree := c.Commit + "^{tree}"
	if p := strings.TrimSuffix(strings.TrimSpace(string(prefix)), "/"); p != "" {
		oid, err := git(ctx, repo, "rev-parse", "--verify", "--quiet", "--end-of-options", c.Commit+":"+p)
		if err != nil {
			return c, nil // the config repo's directory does not exist yet at ref
		}
		typ, err := git(ctx, repo, "cat-file", "-t", strings.TrimSpace(string(oid)))
		if err != nil {
			return nil, fmt.Errorf("ref %s: %w", ref, err)
		}
		if t := strings.TrimSpace(string(typ)); t != "tree" {
			return nil, fmt.Errorf("ref %s: %s is a %s there, not a directory", ref, p, t)
		}
		tree = strings.TrimSpace(string(oid))
	}
	entries, err := listTree(ctx, repo, tree, lim.files)
	if err != nil {
		return nil, fmt.Errorf("ref %s: %w", ref, err)
	}
	if err := c.readBlobs(ctx, repo, entries); err != nil {
		return nil, fmt.Errorf("ref %s: %w", ref, err)
	}
	return c, nil
}

// treeEntry is one line of git ls-tree -r.
type treeEntry struct {
	mode, typ, oid, path string
}

// listTree lists the files, symlinks and submodules under tree, streaming
// git's output and stopping past maxFiles entries.
func listTree(ctx context.Context, repo, tree string, maxFiles int) ([]treeEntry, error) {
	var entries []treeEntry
	err := gitRecords(ctx, repo, func(line string) error {
		if len(entries) == maxFiles {
			return fmt.Errorf("the repo holds more than %d files", maxFiles)
		}
		e, err := parseTreeLine(line)
		if err != nil {
			return err
		}
		entries = append(entries, e)
		return nil
	}, "ls-tree", "-r", "-z", "--full-tree", "--end-of-options", tree)
	return entries, err
}

// parseTreeLine parses "<mode> SP <type> SP <object> TAB <path>".
func parseTreeLine(line string) (treeEntry, error) {
	meta, name, ok := strings.Cut(line, "\t")
	f := strings.Fields(meta)
	if !ok || len(f) != 3 || !isHex(f[2]) {
		return treeEntry{}, fmt.Errorf("git ls-tree: unexpected line %q", line)
	}
	return treeEntry{mode: f[0], typ: f[1], oid: f[2], path: name}, nil
}

// readBlobs streams the blobs of entries through one git cat-file --batch
// and keeps the regular files; symlinks, submodules and paths that could
// leave the checkout are recorded as refused.
func (c *Checkout) readBlobs(ctx context.Context, repo string, entries []treeEntry) error {
	// want lists each blob once with the entries that hold it: identical
	// files are common in layers and read once.
	var want []string
	holders := map[string][]treeEntry{}
	for _, e := range entries {
		name, err := checkoutPath(e.path)
		if err != nil {
			c.Refused[e.path] = err.Error()
			continue
		}
		e.path = name
		switch {
		case (e.mode == "100644" || e.mode == "100755" || e.mode == "120000") && e.typ == "blob":
			if len(holders[e.oid]) == 0 {
				want = append(want, e.oid)
			}
			holders[e.oid] = append(holders[e.oid], e)
		case e.mode == "160000":
			// A gitlink names a commit of another repo; there are no
			// files here to read.
			c.Refused[name] = "a submodule: its files are another repo's, not part of this repo's layers"
		default:
			c.Refused[name] = fmt.Sprintf("not a regular file (git mode %s %s)", e.mode, e.typ)
		}
	}
	if len(want) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd, stderr := gitCommand(ctx, repo, "cat-file", "--batch", "--buffer")
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("git cat-file: %w", err)
	}
	go func() {
		// Object ids only, one a line: nothing of the tree's paths reaches
		// git's input.
		w := bufio.NewWriter(in)
		for _, oid := range want {
			if _, err := w.WriteString(oid + "\n"); err != nil {
				break
			}
		}
		w.Flush()
		in.Close()
	}()
	readErr := c.readBatch(bufio.NewReader(out), want, holders)
	if readErr != nil {
		stopped := ctx.Err() // git killed by the caller's cancellation
		cancel()             // stop git; its own error is then the cancellation
		waitGit(ctx, cmd, stderr, "cat-file")
		if stopped != nil {
			return fmt.Errorf("git cat-file: %w", stopped)
		}
		return readErr
	}
	if err := waitGit(ctx, cmd, stderr, "cat-file"); err != nil {
		return err
	}
	return c.checkClashes()
}

// checkClashes refuses a tree where a path is a file and also a directory
// of other files: git never writes one, and it cannot be checked out.
func (c *Checkout) checkClashes() error {
	for name := range c.Files {
		for p := path.Dir(name); p != "."; p = path.Dir(p) {
			if _, ok := c.Files[p]; ok {
				return fmt.Errorf("%s is a file and the directory of %s", p, name)
			}
		}
	}
	return nil
}

// readBatch reads git cat-file --batch output for want, in order.
func (c *Checkout) readBatch(r *bufio.Reader, want []string, holders map[string][]treeEntry) error {
	for _, oid := range want {
		header, err := r.ReadSlice('\n')
		if err != nil {
			return fmt.Errorf("git cat-file: reading object %s: %w", oid, err)
		}
		f := strings.Fields(string(header))
		if len(f) != 3 || f[0] != oid || f[1] != "blob" {
			return fmt.Errorf("git cat-file: object %s: unexpected header %q", oid, strings.TrimSpace(string(header)))
		}
		size, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil || size < 0 {
			return fmt.Errorf("git cat-file: object %s: bad size %q", oid, f[2])
		}
		var data []byte
		files := 0
		for _, e := range holders[oid] {
			if e.mode != "120000" {
				files++
			}
		}
		if files > 0 {
			// Every path holding the blob counts: each is written out for a
			// render command.
			if size > c.lim.bytes || c.size+size*int64(files) > c.lim.bytes {
				return fmt.Errorf("the repo's files exceed %d bytes (%s is %d bytes)", c.lim.bytes, holders[oid][0].path, size)
			}
			c.size += size * int64(files)
			data = make([]byte, size)
			if _, err := io.ReadFull(r, data); err != nil {
				return fmt.Errorf("git cat-file: reading %s: %w", holders[oid][0].path, err)
			}
		} else {
			// Only symlinks: keep what a message needs of the target.
			keep := min(size, maxLinkTarget+1)
			data = make([]byte, keep)
			if _, err := io.ReadFull(r, data); err != nil {
				return fmt.Errorf("git cat-file: reading %s: %w", holders[oid][0].path, err)
			}
			if _, err := io.CopyN(io.Discard, r, size-keep); err != nil {
				return fmt.Errorf("git cat-file: reading %s: %w", holders[oid][0].path, err)
			}
		}
		if b, err := r.ReadByte(); err != nil || b != '\n' {
			return fmt.Errorf("git cat-file: object %s: missing end of record", oid)
		}
		for _, e := range holders[oid] {
			if e.mode == "120000" {
				c.Refused[e.path] = fmt.Sprintf("symlink to %q: layers must hold regular files", trimTarget(string(data)))
				continue
			}
			if err := c.put(e.path, data, e.mode == "100755"); err != nil {
				return err
			}
		}
	}
	return nil
}

// put adds a file read from git: mode 100755 is executable (a render script
// may be), anything else 0644, as git checks files out.
func (c *Checkout) put(name string, data []byte, exec bool) error {
	if _, dup := c.Files[name]; dup {
		return fmt.Errorf("%s: listed twice in the tree", name)
	}
	if len(c.Files) >= c.lim.files {
		return fmt.Errorf("the repo holds more than %d files", c.lim.files)
	}
	mode := fs.FileMode(0o644)
	if exec {
		mode = 0o755
	}
	c.Files[name] = &fstest.MapFile{Data: data, Mode: mode}
	return nil
}

// CheckoutWorkTree reads the work tree's tracked and untracked files (not
// the ignored ones) as the user has them. Files are opened inside the repo
// only: a path under a symlinked directory is refused, a FIFO or device is
// refused without being opened for reading.
func CheckoutWorkTree(ctx context.Context, repo string) (*Checkout, error) {
	return checkoutWorkTree(ctx, repo, limits{files: maxRepoFiles, bytes: maxRepoBytes})
}

func checkoutWorkTree(ctx context.Context, repo string, lim limits) (*Checkout, error) {
	c := &Checkout{Files: fstest.MapFS{}, Ref: WorkTree, Refused: map[string]string{}, lim: lim}
	if head, err := git(ctx, repo, "rev-parse", "--verify", "--quiet", "HEAD"); err == nil {
		c.Commit = strings.TrimSpace(string(head))
	}
	root, err := os.OpenRoot(repo)
	if err != nil {
		return nil, fmt.Errorf("work tree: %w", err)
	}
	defer root.Close()
	seen := map[string]bool{}
	dirs := map[string]string{} // parent directory -> why it cannot hold files ("" if it can)
	err = gitRecords(ctx, repo, func(p string) error {
		if p == "" || seen[p] {
			return nil
		}
		if len(seen) == lim.files {
			return fmt.Errorf("the repo holds more than %d files", lim.files)
		}
		seen[p] = true
		name, err := checkoutPath(p)
		if err != nil {
			c.Refused[p] = err.Error()
			return nil
		}
		if why := parentsOK(root, name, dirs); why != "" {
			c.Refused[name] = why
			return nil
		}
		return c.readWorkFile(root, name)
	}, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	if err != nil {
		return nil, fmt.Errorf("work tree: %w", err)
	}
	if err := c.checkClashes(); err != nil {
		return nil, fmt.Errorf("work tree: %w", err)
	}
	return c, nil
}

// parentsOK says why name's directories cannot hold a file of the repo ("" if
// they can): a symlinked directory leads elsewhere.
func parentsOK(root *os.Root, name string, dirs map[string]string) string {
	dir := path.Dir(name)
	if dir == "." {
		return ""
	}
	if why, ok := dirs[dir]; ok {
		return why
	}
	why := parentsOK(root, dir, dirs)
	if why == "" {
		fi, err := root.Lstat(filepath.FromSlash(dir))
		switch {
		case err != nil:
			why = err.Error()
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := root.Readlink(filepath.FromSlash(dir))
			why = fmt.Sprintf("under %s, a symlink to %q: layers must hold regular files", dir, trimTarget(target))
		case !fi.IsDir():
			why = fmt.Sprintf("under %s, which is not a directory", dir)
		}
	}
	dirs[dir] = why
	return why
}

// readWorkFile adds one work tree file, or records why it was refused.
func (c *Checkout) readWorkFile(root *os.Root, name string) error {
	local := filepath.FromSlash(name)
	fi, err := root.Lstat(local)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // deleted in the work tree, not yet staged
	}
	if err != nil {
		return err
	}
	switch {
	case fi.Mode().IsRegular():
	case fi.Mode()&fs.ModeSymlink != 0:
		target, _ := root.Readlink(local)
		c.Refused[name] = fmt.Sprintf("symlink to %q: layers must hold regular files", trimTarget(target))
		return nil
	case fi.IsDir():
		// A submodule: its files are another repo's.
		c.Refused[name] = "a submodule or nested repo: not part of this repo's layers"
		return nil
	default:
		c.Refused[name] = fmt.Sprintf("not a regular file (%s)", safeio.Kind(fi.Mode()))
		return nil
	}
	// O_NONBLOCK: a FIFO swapped in after the Lstat cannot hang the open;
	// the type is checked again on the open file.
	f, err := root.OpenFile(local, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		c.Refused[name] = fmt.Sprintf("not a regular file (%s)", safeio.Kind(fi.Mode()))
		return nil
	}
	room := c.lim.bytes - c.size
	data, err := io.ReadAll(io.LimitReader(f, room+1))
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if int64(len(data)) > room {
		return fmt.Errorf("the repo's files exceed %d bytes (at %s)", c.lim.bytes, name)
	}
	c.size += int64(len(data))
	return c.put(name, data, fi.Mode()&0o111 != 0)
}

func trimTarget(s string) string { return truncate(s, maxLinkTarget) }

// checkoutPath is repoPath for a path git lists: one that is not already
// clean (empty, "." or ".." parts), or that has a .git part (git never
// checks one out; written for a render command it would be a repo's
// config), is refused rather than cleaned.
func checkoutPath(p string) (string, error) {
	name, err := repoPath(p)
	if err != nil {
		return "", err
	}
	if name != p {
		return "", fmt.Errorf("%q: not a clean path", p)
	}
	for part := range strings.SplitSeq(name, "/") {
		if strings.EqualFold(part, ".git") {
			return "", fmt.Errorf("%q: a .git path is not part of the repo's files", p)
		}
	}
	return name, nil
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

// gitEnv is the fixed environment of every git the gate runs. Of the
// caller's it keeps PATH (git's helpers), HOME and XDG_CONFIG_HOME (the
// user's global config: safe.directory lives there); anything else (GIT_DIR,
// GIT_WORK_TREE, GIT_CONFIG_*, GIT_NAMESPACE, GIT_OBJECT_DIRECTORY, ...)
// would make git read another repo, or this one differently. System config
// is not read.
func gitEnv() []string {
	env := []string{
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_ATTR_NOSYSTEM=1",
		"GIT_NO_REPLACE_OBJECTS=1",
		"GIT_NO_LAZY_FETCH=1", // a partial clone never fetches from a remote
		"GIT_OPTIONAL_LOCKS=0",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_PAGER=cat",
		"LANG=C",
		"LC_ALL=C",
	}
	for _, k := range []string{"PATH", "HOME", "XDG_CONFIG_HOME"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// gitCommand is git in dir with the fixed environment and options that keep
// repo config from changing what is read: no replace refs, no attributes
// file, no fsmonitor hook. stderr keeps the start of git's messages.
func gitCommand(ctx context.Context, dir string, args ...string) (*exec.Cmd, *cappedBuffer) {
	pre := []string{
		"--no-replace-objects",
		"-c", "core.attributesFile=/dev/null",
		"-c", "core.fsmonitor=false",
		"-C", dir,
	}
	cmd := exec.CommandContext(ctx, "git", append(pre, args...)...)
	cmd.Env = gitEnv()
	cmd.WaitDelay = gitWaitDelay
	stderr := &cappedBuffer{max: maxGitMessage}
	cmd.Stderr = stderr
	return cmd, stderr
}

// waitGit waits for git and names what went wrong.
func waitGit(ctx context.Context, cmd *exec.Cmd, stderr *cappedBuffer, what string) error {
	err := cmd.Wait()
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("git %s: %w", what, ctx.Err())
	}
	if msg := strings.TrimSpace(stderr.String()); msg != "" {
		return fmt.Errorf("git %s: %s", what, msg)
	}
	return fmt.Errorf("git %s: %w", what, err)
}

// git runs git in repo and returns its output, which must be small.
func git(ctx context.Context, repo string, args ...string) ([]byte, error) {
	cmd, stderr := gitCommand(ctx, repo, args...)
	stdout := &cappedBuffer{max: maxGitOutput}
	cmd.Stdout = stdout
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("git %s: %w", args[0], err)
	}
	if err := waitGit(ctx, cmd, stderr, args[0]); err != nil {
		return nil, err
	}
	if stdout.over {
		return nil, fmt.Errorf("git %s: more than %d bytes of output", args[0], maxGitOutput)
	}
	return stdout.Bytes(), nil
}

// gitRecords runs git in repo and hands each NUL-terminated record of its
// output to fn, without holding the output; fn's error stops git.
func gitRecords(ctx context.Context, repo string, fn func(string) error, args ...string) error {
	return gitRecordsEnv(ctx, repo, nil, fn, args...)
}

// gitRecordsEnv is gitRecords with env added to the fixed environment.
func gitRecordsEnv(ctx context.Context, repo string, env []string, fn func(string) error, args ...string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd, stderr := gitCommand(ctx, repo, args...)
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("git %s: %w", args[0], err)
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 0, 4096), maxRecord)
	sc.Split(splitNUL)
	var readErr error
	for readErr == nil && sc.Scan() {
		readErr = fn(sc.Text())
	}
	if readErr == nil && sc.Err() != nil {
		readErr = fmt.Errorf("git %s: %w", args[0], sc.Err())
	}
	if readErr != nil {
		stopped := ctx.Err() // git killed by the caller's cancellation
		cancel()             // stop git; its own error is then the cancellation
		waitGit(ctx, cmd, stderr, args[0])
		if stopped != nil {
			return fmt.Errorf("git %s: %w", args[0], stopped)
		}
		return readErr
	}
	return waitGit(ctx, cmd, stderr, args[0])
}

// splitNUL is a bufio.SplitFunc for NUL-terminated records.
func splitNUL(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.IndexByte(data, 0); i >= 0 {
		return i + 1, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return 0, nil, errors.New("output ends inside a record")
	}
	return 0, nil, nil
}

func isHex(s string) bool {
	if len(s) != 40 && len(s) != 64 { // SHA-1 or SHA-256 repos
		return false
	}
	for _, r := range s {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') {
			return false
		}
	}
	return true
}

// cappedBuffer keeps the first max bytes written to it and drops the rest,
// so a command's output held for a message stays bounded.
type cappedBuffer struct {
	bytes.Buffer
	max  int
	over bool
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room < len(p) {
		b.over = true
		b.Buffer.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return b.Buffer.Write(p)
}
