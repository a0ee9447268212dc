package githubpr

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fleetaudit/fleetaudit/remediate"
)

// GitTransport makes a Publisher read and write branches with git over
// HTTPS (ls-remote, fetch, push --force-with-lease) instead of the Git Data
// API. Gitea and Forgejo serve that API read-only (no blobs, trees,
// commits or refs to create, no ref to move) and answer its reads in other
// shapes; git's smart HTTP protocol is the same on every forge. It also
// gives what the API lacks: a push that only lands if the branch is still
// where it was read (--force-with-lease), so a person's push in between is
// never overwritten.
type GitTransport struct {
	// URL is the repository's clone URL; "" takes clone_url from the API's
	// answer for the repository. Its host must be the API's (or, for
	// api.github.com, github.com), so the token goes nowhere else.
	URL string
	// Token authenticates git (HTTP Basic, user x-access-token, as GitHub
	// documents for installation tokens; Gitea takes a token as password).
	// It reaches git through its environment, never its arguments.
	Token string
	// Git is the git binary ("" = git from PATH).
	Git string
	// Timeout bounds each git command that talks to the forge: one that
	// moves less than 1 KiB/s for Timeout (a server that accepts and never
	// answers) fails, and so does one still running after 10×Timeout
	// (0 = DefaultRequestTimeout).
	Timeout time.Duration
}

// gitBranches keeps a scratch bare repository for one Publish run: refs
// are read with ls-remote, fetched into it, commits built in it with git's
// plumbing and pushed.
type gitBranches struct {
	p       *Publisher
	git     string
	url     string // clone URL, without credentials
	header  string // "Authorization: Basic ..." for url's scheme://host/ only
	tmp     string // holds dir and index files
	dir     string // the bare repository
	secrets []string
}

func newGitBranches(ctx context.Context, p *Publisher, cloneURL string) (*gitBranches, error) {
	t := p.opts.Git
	if t.URL != "" {
		cloneURL = t.URL
	}
	if strings.TrimSpace(t.Token) == "" {
		return nil, errors.New("git: no token to push with")
	}
	if cloneURL == "" {
		return nil, fmt.Errorf("git: the API's answer for %s/%s has no clone_url", p.owner, p.repo)
	}
	u, err := url.Parse(cloneURL)
	if err != nil {
		return nil, errors.New("git: clone URL is not a URL")
	}
	if u.User != nil {
		return nil, fmt.Errorf("git: clone URL %s carries credentials", u.Redacted())
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && isLoopback(u.Hostname()):
	default:
		return nil, fmt.Errorf("git: clone URL %s: scheme must be https (or http on loopback), so the token does not cross a network in clear", u.Redacted())
	}
	api := p.gh.BaseURL
	if !strings.EqualFold(u.Host, api.Host) && !strings.EqualFold("api."+u.Host, api.Host) {
		return nil, fmt.Errorf("git: clone URL %s is on another host than the API (%s); the token is sent to the API's host only", u.Redacted(), api.Host)
	}
	git := t.Git
	if git == "" {
		git = "git"
	}
	if _, err := exec.LookPath(git); err != nil {
		return nil, fmt.Errorf("git: pushing branches needs git: %w", err)
	}
	tmp, err := os.MkdirTemp("", "fleetaudit-push-")
	if err != nil {
		return nil, fmt.Errorf("git: scratch repository: %w", err)
	}
	basic := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + t.Token))
	g := &gitBranches{
		p: p, git: git, url: u.String(), tmp: tmp, dir: filepath.Join(tmp, "repo.git"),
		header:  "Authorization: Basic " + basic,
		secrets: []string{t.Token, basic},
	}
	if _, err := g.run(ctx, false, nil, nil, "init", "--quiet", "--bare", g.dir); err != nil {
		g.close()
		return nil, err
	}
	return g, nil
}

func (g *gitBranches) close() { os.RemoveAll(g.tmp) }

// env is the environment of every git run: no system or user config (an
// insteadOf or credential helper there must not redirect the token), no
// prompt, and the token, for the clone URL's host only, when remote.
func (g *gitBranches) env(remote bool, extra []string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") && !strings.HasPrefix(kv, "LC_ALL=") && !strings.HasPrefix(kv, "LANG=") {
			env = append(env, kv)
		}
	}
	env = append(env, "GIT_DIR="+g.dir, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=", "SSH_ASKPASS=", "LC_ALL=C")
	cfg := [][2]string{{"credential.helper", ""}, {"http.followRedirects", "false"}, {"protocol.version", "2"}}
	if remote {
		u, _ := url.Parse(g.url)
		cfg = append(cfg, [2]string{"http." + u.Scheme + "://" + u.Host + "/.extraHeader", g.header},
			[2]string{"http.lowSpeedLimit", "1024"}, [2]string{"http.lowSpeedTime", strconv.Itoa(max(1, int(g.timeout().Seconds())))})
	}
	env = append(env, fmt.Sprintf("GIT_CONFIG_COUNT=%d", len(cfg)))
	for i, kv := range cfg {
		env = append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", i, kv[0]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", i, kv[1]))
	}
	return append(env, extra...)
}

// run runs git once; stdin nil is empty input, so git never waits on it.
func (g *gitBranches) run(ctx context.Context, remote bool, stdin []byte, extraEnv []string, args ...string) (string, error) {
	parent := ctx
	if remote {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 10*g.timeout())
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, g.git, args...)
	cmd.Env = g.env(remote, extraEnv)
	cmd.Dir = g.tmp
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.WaitDelay = 5 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		if cerr := parent.Err(); cerr != nil {
			return "", fmt.Errorf("git %s: %w", args[0], cerr)
		}
		if ctx.Err() != nil {
			return out.String(), &gitError{args: args[0], msg: fmt.Sprintf("%s timed out: still running after %s", g.url, 10*g.timeout()), err: ctx.Err()}
		}
		msg := g.redact(strings.TrimSpace(errb.String()))
		if msg == "" {
			msg = g.redact(strings.TrimSpace(out.String()))
		}
		return out.String(), &gitError{args: args[0], msg: msg, err: err}
	}
	return out.String(), nil
}

func (g *gitBranches) timeout() time.Duration {
	if t := g.p.opts.Git.Timeout; t > 0 {
		return t
	}
	return DefaultRequestTimeout
}

func (g *gitBranches) redact(s string) string {
	for _, sec := range g.secrets {
		s = strings.ReplaceAll(s, sec, "***")
	}
	return s
}

type gitError struct {
	args, msg string
	err       error
}

func (e *gitError) Error() string { return fmt.Sprintf("git %s: %s (%v)", e.args, e.msg, e.err) }
func (e *gitError) Unwrap() error { return e.err }

// remote runs a git command that talks to the forge, retrying what may
// pass (5xx, a dropped connection) within Retry and stopping the run on a
// refused token, as call does for the API.
func (g *gitBranches) remote(ctx context.Context, name string, args ...string) (string, error) {
	p := g.p
	repo := p.owner + "/" + p.repo
	for attempt := 1; ; attempt++ {
		out, err := g.run(ctx, true, nil, nil, args...)
		var ge *gitError
		if err == nil || !errors.As(err, &ge) {
			return out, err
		}
		ae := &APIError{Call: name, Err: err}
		retry := false
		switch m := ge.msg; {
		// A 401 makes git ask for a password, which it may not here.
		case strings.Contains(m, "error: 401"), strings.Contains(m, "Authentication failed"), strings.Contains(m, "could not read Username"), strings.Contains(m, "could not read Password"):
			ae.Status, ae.Fatal = http.StatusUnauthorized, true
			ae.Msg = fmt.Sprintf("git: %s: 401 the token was refused by %s: check GITHUB_TOKEN", name, g.url)
		case strings.Contains(m, "error: 403"):
			ae.Status, ae.Fatal = http.StatusForbidden, true
			ae.Msg = fmt.Sprintf("git: %s: 403 the token may not push to %s (needs contents:write): %s", name, repo, m)
		case strings.Contains(m, "error: 404") || strings.Contains(m, "not found"):
			ae.Status, ae.Fatal = http.StatusNotFound, true
			ae.Msg = fmt.Sprintf("git: %s: repository %s not found at %s, or the token has no access to it", name, repo, g.url)
		case strings.Contains(m, "error: 5"), strings.Contains(m, "Failed to connect"), strings.Contains(m, "Connection reset"),
			strings.Contains(m, "early EOF"), strings.Contains(m, "the remote end hung up"), strings.Contains(m, "timed out"),
			strings.Contains(m, "Operation too slow"):
			retry = true
			ae.Msg = fmt.Sprintf("git: %s: %s", name, m)
			if !strings.Contains(m, g.url) {
				ae.Msg = fmt.Sprintf("git: %s: %s: %s", name, g.url, m)
			}
		default:
			ae.Msg = fmt.Sprintf("git: %s: %s", name, m)
		}
		if !retry || attempt >= p.opts.Retry.Attempts {
			if retry {
				ae.Msg += fmt.Sprintf(" (gave up after %d attempts)", attempt)
			}
			return out, ae
		}
		wait := p.opts.Retry.Backoff << (attempt - 1)
		p.log.Warn("git failed, retrying", "call", name, "attempt", attempt, "wait", wait)
		if err := p.opts.Retry.Sleep(ctx, wait); err != nil {
			return "", fmt.Errorf("git: %s: %w", name, err)
		}
	}
}

// head asks the forge where branch is and fetches it (with its history,
// which compare needs) when the scratch repository lacks the commit.
func (g *gitBranches) head(ctx context.Context, branch string) (string, error) {
	ref := "refs/heads/" + branch
	out, err := g.remote(ctx, "list "+ref, "ls-remote", "--heads", g.url, ref)
	if err != nil {
		return "", err
	}
	sha := ""
	for _, line := range strings.Split(out, "\n") {
		if s, name, ok := strings.Cut(line, "\t"); ok && name == ref {
			sha = s
		}
	}
	if sha == "" || g.has(ctx, sha) {
		return sha, nil
	}
	local := "refs/fleetaudit/" + branch
	if _, err := g.remote(ctx, "fetch "+ref, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", g.url, "+"+ref+":"+local); err != nil {
		return "", err
	}
	// The branch may have moved since ls-remote: what was fetched is where it is.
	got, err := g.run(ctx, false, nil, nil, "rev-parse", "--verify", local+"^{commit}")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(got), nil
}

func (g *gitBranches) has(ctx context.Context, sha string) bool {
	_, err := g.run(ctx, false, nil, nil, "cat-file", "-e", sha+"^{commit}")
	return err == nil
}

func (g *gitBranches) commit(ctx context.Context, sha string) (commitInfo, error) {
	raw, err := g.run(ctx, false, nil, nil, "cat-file", "commit", sha)
	if err != nil {
		return commitInfo{}, err
	}
	hdr, msg, _ := strings.Cut(raw, "\n\n")
	ci := commitInfo{Message: msg}
	email := func(v string) string { // "Name <email> 1700000000 +0000"
		_, rest, _ := strings.Cut(v, "<")
		e, _, _ := strings.Cut(rest, ">")
		return e
	}
	for _, line := range strings.Split(hdr, "\n") {
		k, v, _ := strings.Cut(line, " ")
		switch k {
		case "parent":
			ci.Parents = append(ci.Parents, v)
		case "author":
			ci.AuthorEmail = email(v)
		case "committer":
			ci.CommitterEmail = email(v)
		}
	}
	return ci, nil
}

// compare needs both commits fetched: to is always a branch head read by
// head; from is the proven base or the branch's parent.
func (g *gitBranches) compare(ctx context.Context, _, from, to string) (comparison, error) {
	if !g.has(ctx, from) {
		return comparison{}, fmt.Errorf("git: %s: %w", short(from), errUnknownCommit)
	}
	if from == to {
		return comparison{status: "identical"}, nil
	}
	out, err := g.run(ctx, false, nil, nil, "merge-base", from, to)
	mb := strings.TrimSpace(out)
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 1 {
			return comparison{status: "diverged"}, nil // no common history
		}
		return comparison{}, err
	}
	c := comparison{status: "diverged"}
	switch mb {
	case from:
		c.status = "ahead"
	case to:
		c.status = "behind"
	}
	names, err := g.run(ctx, false, nil, nil, "diff", "--name-only", "-z", "--no-renames", mb, to)
	if err != nil {
		return comparison{}, err
	}
	for _, n := range strings.Split(names, "\x00") {
		if n != "" {
			c.files = append(c.files, n)
		}
	}
	return c, nil
}

// write builds the commit in the scratch repository (base's tree with the
// proposal's files, one parent) and pushes it with a lease on old: the
// push lands only if the branch is still at old ("" = still absent).
func (g *gitBranches) write(ctx context.Context, prop remediate.Proposal, base, old string) error {
	index := filepath.Join(g.tmp, "index")
	os.Remove(index)
	idx := []string{"GIT_INDEX_FILE=" + index}
	if _, err := g.run(ctx, false, nil, idx, "read-tree", base); err != nil {
		return err
	}
	for _, f := range prop.Files {
		blob, err := g.run(ctx, false, f.Content, nil, "hash-object", "-w", "--stdin")
		if err != nil {
			return err
		}
		mode := f.Mode
		if mode == "" {
			mode = "100644"
		}
		if _, err := g.run(ctx, false, nil, idx, "update-index", "--add", "--cacheinfo", mode+","+strings.TrimSpace(blob)+","+f.Path); err != nil {
			return err
		}
	}
	tree, err := g.run(ctx, false, nil, idx, "write-tree")
	if err != nil {
		return err
	}
	id := g.p.opts.Identity
	who := []string{"GIT_AUTHOR_NAME=" + id.Name, "GIT_AUTHOR_EMAIL=" + id.Email, "GIT_COMMITTER_NAME=" + id.Name, "GIT_COMMITTER_EMAIL=" + id.Email}
	sha, err := g.run(ctx, false, []byte(commitMessage(prop)), who, "commit-tree", strings.TrimSpace(tree), "-p", base, "-F", "-")
	if err != nil {
		return err
	}
	sha = strings.TrimSpace(sha)
	ref := "refs/heads/" + prop.Branch
	out, err := g.remote(ctx, "push "+ref, "push", "--porcelain", "--no-verify",
		"--force-with-lease="+ref+":"+old, g.url, sha+":"+ref)
	if err != nil {
		if strings.Contains(out, "stale info") || strings.Contains(out, "[rejected]") {
			return fmt.Errorf("git: push %s: the branch moved while fleetaudit was updating it (someone pushed?); nothing was overwritten, rerun to look again", prop.Branch)
		}
		return err
	}
	return nil
}
