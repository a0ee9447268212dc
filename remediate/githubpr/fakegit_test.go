package githubpr

import (
	"net/http"
	"net/http/cgi"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/fleetaudit/fleetaudit/internal/gittest"
)

// fakeGitRepo is a real bare repository served by git http-backend (real
// git, as github.com serves clone URLs) beside the fake REST API. Every git
// request must carry the token as HTTP Basic (user x-access-token), as
// GitHub documents for git over HTTPS with a token.
type fakeGitRepo struct {
	t       *testing.T
	token   string
	root    string // GIT_PROJECT_ROOT
	bare    string // root + urlPath
	urlPath string // "/acme/fleet-config.git"
	work    *gittest.Repo
	backend *cgi.Handler

	mu       sync.Mutex
	requests []string // "METHOD path?query", with whether it was authorised
	refuse   bool     // answer 401 to every request
}

// serveGit makes f serve its repository over git: main holds the same
// files newFakeGitHub commits in its own store.
func (f *fakeGitHub) serveGit(t *testing.T) *fakeGitRepo {
	t.Helper()
	gittest.Require(t)
	execPath, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatal(err)
	}
	work := gittest.New(t)
	work.Write("fleetaudit.yaml", "fleets: {}\n")
	work.Write("layers/base/etc/hosts", "127.0.0.1 localhost\n")
	work.Write("layers/gpu/etc/modules.conf", "nvidia\n")
	work.Commit("initial")
	g := &fakeGitRepo{t: t, token: f.token, root: t.TempDir(), urlPath: "/" + f.owner + "/" + f.repo + ".git", work: work}
	g.bare = filepath.Join(g.root, f.owner, f.repo+".git")
	work.Git("clone", "-q", "--bare", work.Dir, g.bare)
	work.Git("--git-dir", g.bare, "config", "http.receivepack", "true")
	work.Git("remote", "add", "forge", g.bare)
	g.backend = &cgi.Handler{
		Path: filepath.Join(strings.TrimSpace(string(execPath)), "git-http-backend"),
		Env:  []string{"GIT_PROJECT_ROOT=" + g.root, "GIT_HTTP_EXPORT_ALL=1"},
	}
	f.mu.Lock()
	f.git = g
	f.mu.Unlock()
	return g
}

func (g *fakeGitRepo) serve(w http.ResponseWriter, r *http.Request) {
	user, pass, ok := r.BasicAuth()
	authed := ok && user == "x-access-token" && pass == g.token
	g.mu.Lock()
	g.requests = append(g.requests, r.Method+" "+strings.TrimPrefix(r.URL.Path, g.urlPath)+"?"+r.URL.RawQuery)
	refuse := g.refuse
	g.mu.Unlock()
	if !authed || refuse {
		if !refuse {
			g.t.Errorf("fake git: %s %s without the token as Basic auth (Authorization %q)", r.Method, r.URL.Path, r.Header.Get("Authorization"))
		}
		w.Header().Set("WWW-Authenticate", `Basic realm="GitHub"`)
		http.Error(w, "Invalid username or token.", http.StatusUnauthorized)
		return
	}
	g.backend.ServeHTTP(w, r)
}

func (g *fakeGitRepo) gitRequests() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.requests
	g.requests = nil
	return r
}

// head is where branch is in the bare repository, "" when it is not.
func (g *fakeGitRepo) head(branch string) string {
	out, err := exec.Command("git", "--git-dir", g.bare, "rev-parse", "--verify", "-q", "refs/heads/"+branch).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// commitOn commits files on branch as a person pushing would.
func (g *fakeGitRepo) commitOn(branch string, files map[string]string, msg string) string {
	g.t.Helper()
	g.work.Git("fetch", "-q", "forge", "+refs/heads/"+branch+":refs/remotes/forge/"+branch)
	g.work.Git("checkout", "-q", "-B", "scratch", "refs/remotes/forge/"+branch)
	for p, c := range files {
		g.work.Write(p, c)
	}
	sha := g.work.Commit(msg)
	g.work.Git("push", "-q", "forge", "HEAD:refs/heads/"+branch)
	return sha
}

// show returns git's output in the bare repository.
func (g *fakeGitRepo) show(args ...string) string {
	g.t.Helper()
	return g.work.Git(append([]string{"--git-dir", g.bare}, args...)...)
}
