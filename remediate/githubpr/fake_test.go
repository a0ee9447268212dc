package githubpr

import (
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// fakeGitHub serves the REST endpoints the publisher uses as GitHub
// documents them (docs.github.com/rest: git/refs, git/commits, git/blobs,
// git/trees, commits#compare, pulls, issues/labels), keeps the repository's
// state so a rerun sees what the last run did, checks the token on every
// request and fails the test on any call it does not implement.
type fakeGitHub struct {
	t           *testing.T
	srv         *httptest.Server
	token       string
	owner, repo string

	mu      sync.Mutex
	blobs   map[string][]byte
	trees   map[string]map[string]fakeEntry
	commits map[string]*fakeCommit
	refs    map[string]string // "refs/heads/main" -> commit
	prs     []*fakePR
	labels  map[int][]string
	reqs    []fakeReq
	inject  []fakeInjection

	// git, when set, serves the repository over git's smart HTTP protocol
	// (see serveGit); its refs are then the bare repository's.
	git *fakeGitRepo
}

type fakeEntry struct{ Mode, SHA string }

type fakeCommit struct {
	SHA, Tree, Message string
	Parents            []string
	Author, Committer  Identity
}

type fakePR struct {
	Number                         int
	Title, Body, Head, Base, State string
	Merged                         bool
}

// fakeReq is one request as the server saw it; Body is the decoded JSON.
type fakeReq struct {
	Method, Path, Query string
	Body                any
}

// fakeInjection answers the next request matching Method and Path with a
// canned response instead of serving it.
type fakeInjection struct {
	Method, Path string
	Status       int
	Header       map[string]string
	Body         string
}

func newFakeGitHub(t *testing.T, token string) *fakeGitHub {
	t.Helper()
	f := &fakeGitHub{
		t: t, token: token, owner: "acme", repo: "fleet-config",
		blobs: map[string][]byte{}, trees: map[string]map[string]fakeEntry{},
		commits: map[string]*fakeCommit{}, refs: map[string]string{}, labels: map[int][]string{},
	}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	base := f.commit("", map[string]string{
		"fleetaudit.yaml":             "fleets: {}\n",
		"layers/base/etc/hosts":       "127.0.0.1 localhost\n",
		"layers/gpu/etc/modules.conf": "nvidia\n",
	}, Identity{Name: "Ada", Email: "ada@example.com"}, "initial\n")
	f.refs["refs/heads/main"] = base
	return f
}

func gitBlobSHA(content []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(content))
	h.Write(content)
	return hex.EncodeToString(h.Sum(nil))
}

func (f *fakeGitHub) putTree(m map[string]fakeEntry) string {
	paths := make([]string, 0, len(m))
	for p := range m {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	h := sha1.New()
	for _, p := range paths {
		fmt.Fprintf(h, "%s %s %s\n", m[p].Mode, p, m[p].SHA)
	}
	sha := hex.EncodeToString(h.Sum(nil))
	f.trees[sha] = m
	return sha
}

func (f *fakeGitHub) putCommit(c *fakeCommit) string {
	h := sha1.New()
	fmt.Fprintf(h, "tree %s\nparents %v\nauthor %v\ncommitter %v\n\n%s", c.Tree, c.Parents, c.Author, c.Committer, c.Message)
	c.SHA = hex.EncodeToString(h.Sum(nil))
	f.commits[c.SHA] = c
	return c.SHA
}

// commit makes a commit on parent ("" for a root) that writes files, as a
// person pushing would.
func (f *fakeGitHub) commit(parent string, files map[string]string, who Identity, msg string) string {
	tree := map[string]fakeEntry{}
	var parents []string
	if parent != "" {
		for p, e := range f.trees[f.commits[parent].Tree] {
			tree[p] = e
		}
		parents = []string{parent}
	}
	for p, c := range files {
		sha := gitBlobSHA([]byte(c))
		f.blobs[sha] = []byte(c)
		tree[p] = fakeEntry{Mode: "100644", SHA: sha}
	}
	return f.putCommit(&fakeCommit{Tree: f.putTree(tree), Message: msg, Parents: parents, Author: who, Committer: who})
}

// file is a file's content at the head of branch.
func (f *fakeGitHub) file(branch, path string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.commits[f.refs["refs/heads/"+branch]]
	if c == nil {
		return ""
	}
	return string(f.blobs[f.trees[c.Tree][path].SHA])
}

func (f *fakeGitHub) head(branch string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.refs["refs/heads/"+branch]
}

// requests returns what was asked since the last call, and forgets it.
func (f *fakeGitHub) requests() []fakeReq {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.reqs
	f.reqs = nil
	return r
}

func (f *fakeGitHub) fail(inj fakeInjection) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inject = append(f.inject, inj)
}

func (f *fakeGitHub) writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	if err := json.NewEncoder(w).Encode(v); err != nil {
		f.t.Errorf("fake: encode: %v", err)
	}
}

func (f *fakeGitHub) message(w http.ResponseWriter, status int, msg string) {
	f.writeJSON(w, status, map[string]any{"message": msg, "documentation_url": "https://docs.github.com/rest"})
}

func (f *fakeGitHub) serve(w http.ResponseWriter, r *http.Request) {
	if f.git != nil && strings.HasPrefix(r.URL.Path, f.git.urlPath+"/") {
		f.git.serve(w, r)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.t
	raw, _ := io.ReadAll(r.Body)
	var body any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &body); err != nil {
			t.Errorf("fake: %s %s: body is not JSON: %v", r.Method, r.URL.Path, err)
		}
		if ct := r.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("fake: %s %s: Content-Type %q", r.Method, r.URL.Path, ct)
		}
	}
	f.reqs = append(f.reqs, fakeReq{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query().Encode(), Body: body})
	if got := r.Header.Get("Authorization"); got != "Bearer "+f.token {
		t.Errorf("fake: %s %s: Authorization %q, want the bearer token", r.Method, r.URL.Path, got)
		f.message(w, 401, "Bad credentials")
		return
	}
	for i, inj := range f.inject {
		if inj.Method == r.Method && inj.Path == r.URL.Path {
			f.inject = append(f.inject[:i:i], f.inject[i+1:]...)
			for k, v := range inj.Header {
				w.Header().Set(k, v)
			}
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.WriteHeader(inj.Status)
			io.WriteString(w, inj.Body)
			return
		}
	}
	prefix := "/api/v3/repos/" + f.owner + "/" + f.repo
	rest, ok := strings.CutPrefix(r.URL.Path, prefix)
	if !ok {
		t.Errorf("fake: unexpected call %s %s", r.Method, r.URL.Path)
		f.message(w, 404, "Not Found")
		return
	}
	if f.git != nil && (strings.HasPrefix(rest, "/git/") || strings.HasPrefix(rest, "/compare/")) {
		t.Errorf("fake: %s %s: branches go through git here, not the Git Data API", r.Method, r.URL.Path)
		f.message(w, 404, "Not Found")
		return
	}
	obj, _ := body.(map[string]any)
	str := func(k string) string { s, _ := obj[k].(string); return s }
	switch {
	case r.Method == "GET" && rest == "":
		repo := map[string]any{"full_name": f.owner + "/" + f.repo, "default_branch": "main"}
		if f.git != nil {
			repo["clone_url"] = f.srv.URL + f.git.urlPath
		}
		f.writeJSON(w, 200, repo)

	case r.Method == "GET" && strings.HasPrefix(rest, "/git/ref/"):
		ref := "refs/" + strings.TrimPrefix(rest, "/git/ref/")
		sha, ok := f.refs[ref]
		if !ok {
			f.message(w, 404, "Not Found")
			return
		}
		f.writeJSON(w, 200, map[string]any{"ref": ref, "object": map[string]any{"type": "commit", "sha": sha}})

	case r.Method == "GET" && strings.HasPrefix(rest, "/git/commits/"):
		c, ok := f.commits[strings.TrimPrefix(rest, "/git/commits/")]
		if !ok {
			f.message(w, 404, "Not Found")
			return
		}
		f.writeJSON(w, 200, f.commitJSON(c))

	case r.Method == "POST" && rest == "/git/blobs":
		if str("encoding") != "base64" {
			t.Errorf("fake: blob encoding %q", str("encoding"))
		}
		data, err := base64.StdEncoding.DecodeString(str("content"))
		if err != nil {
			f.message(w, 422, "Invalid request: content is not base64")
			return
		}
		sha := gitBlobSHA(data)
		f.blobs[sha] = data
		f.writeJSON(w, 201, map[string]any{"sha": sha, "url": "blob"})

	case r.Method == "POST" && rest == "/git/trees":
		tree := map[string]fakeEntry{}
		if bt := str("base_tree"); bt != "" {
			base, ok := f.trees[bt]
			if !ok {
				f.message(w, 422, "Invalid tree info")
				return
			}
			for p, e := range base {
				tree[p] = e
			}
		}
		entries, _ := obj["tree"].([]any)
		for _, e := range entries {
			m, _ := e.(map[string]any)
			sha, _ := m["sha"].(string)
			if _, ok := f.blobs[sha]; !ok || m["type"] != "blob" {
				f.message(w, 422, "tree.sha "+sha+" is not a valid blob")
				return
			}
			tree[m["path"].(string)] = fakeEntry{Mode: m["mode"].(string), SHA: sha}
		}
		f.writeJSON(w, 201, map[string]any{"sha": f.putTree(tree)})

	case r.Method == "POST" && rest == "/git/commits":
		c := &fakeCommit{Tree: str("tree"), Message: str("message")}
		if _, ok := f.trees[c.Tree]; !ok {
			f.message(w, 422, "Tree SHA does not exist")
			return
		}
		ps, _ := obj["parents"].([]any)
		for _, p := range ps {
			if _, ok := f.commits[p.(string)]; !ok {
				f.message(w, 422, "Parent SHA does not exist or is not a commit object")
				return
			}
			c.Parents = append(c.Parents, p.(string))
		}
		who := func(k string) Identity {
			m, _ := obj[k].(map[string]any)
			n, _ := m["name"].(string)
			e, _ := m["email"].(string)
			return Identity{Name: n, Email: e}
		}
		c.Author, c.Committer = who("author"), who("committer")
		f.putCommit(c)
		f.writeJSON(w, 201, f.commitJSON(c))

	case r.Method == "POST" && rest == "/git/refs":
		ref, sha := str("ref"), str("sha")
		if _, ok := f.refs[ref]; ok {
			f.message(w, 422, "Reference already exists")
			return
		}
		if _, ok := f.commits[sha]; !ok {
			f.message(w, 422, "Object does not exist")
			return
		}
		f.refs[ref] = sha
		f.writeJSON(w, 201, map[string]any{"ref": ref, "object": map[string]any{"type": "commit", "sha": sha}})

	case r.Method == "PATCH" && strings.HasPrefix(rest, "/git/refs/"):
		ref := "refs/" + strings.TrimPrefix(rest, "/git/refs/")
		old, ok := f.refs[ref]
		if !ok {
			f.message(w, 422, "Reference does not exist")
			return
		}
		sha := str("sha")
		if _, ok := f.commits[sha]; !ok {
			f.message(w, 422, "Object does not exist")
			return
		}
		if force, _ := obj["force"].(bool); !force && !f.ancestor(old, sha) {
			f.message(w, 422, "Update is not a fast forward")
			return
		}
		f.refs[ref] = sha
		f.writeJSON(w, 200, map[string]any{"ref": ref, "object": map[string]any{"type": "commit", "sha": sha}})

	case r.Method == "GET" && strings.HasPrefix(rest, "/compare/"):
		base, head, ok := strings.Cut(strings.TrimPrefix(rest, "/compare/"), "...")
		if !ok || f.commits[base] == nil || f.commits[head] == nil {
			f.message(w, 404, "Not Found")
			return
		}
		f.writeJSON(w, 200, f.compare(base, head))

	case r.Method == "GET" && rest == "/pulls":
		q := r.URL.Query()
		state := q.Get("state")
		if state == "" {
			state = "open"
		}
		list := []any{}
		for i := len(f.prs) - 1; i >= 0; i-- { // newest first, as GitHub sorts by default
			pr := f.prs[i]
			if state != "all" && pr.State != state {
				continue
			}
			if h := q.Get("head"); h != "" && h != f.owner+":"+pr.Head {
				continue
			}
			list = append(list, f.prJSON(pr))
		}
		f.writeJSON(w, 200, list)

	case r.Method == "POST" && rest == "/pulls":
		head, base := str("head"), str("base")
		if f.refOf(head) == "" {
			f.message(w, 422, "Validation Failed: head invalid")
			return
		}
		for _, pr := range f.prs {
			if pr.Head == head && pr.State == "open" {
				f.writeJSON(w, 422, map[string]any{"message": "Validation Failed", "errors": []any{map[string]any{"resource": "PullRequest", "code": "custom", "message": "A pull request already exists for " + f.owner + ":" + head + "."}}})
				return
			}
		}
		pr := &fakePR{Number: len(f.prs) + 1, Title: str("title"), Body: str("body"), Head: head, Base: base, State: "open"}
		f.prs = append(f.prs, pr)
		f.writeJSON(w, 201, f.prJSON(pr))

	case r.Method == "PATCH" && strings.HasPrefix(rest, "/pulls/"):
		pr := f.pr(strings.TrimPrefix(rest, "/pulls/"))
		if pr == nil {
			f.message(w, 404, "Not Found")
			return
		}
		if v, ok := obj["title"].(string); ok {
			pr.Title = v
		}
		if v, ok := obj["body"].(string); ok {
			pr.Body = v
		}
		if v, ok := obj["base"].(string); ok {
			pr.Base = v
		}
		if v, ok := obj["state"].(string); ok {
			pr.State = v
		}
		f.writeJSON(w, 200, f.prJSON(pr))

	case r.Method == "POST" && strings.HasPrefix(rest, "/issues/") && strings.HasSuffix(rest, "/labels"):
		pr := f.pr(strings.TrimSuffix(strings.TrimPrefix(rest, "/issues/"), "/labels"))
		names, ok := body.([]any)
		if pr == nil || !ok {
			f.message(w, 422, "Invalid request")
			return
		}
		out := []any{}
		for _, n := range names {
			f.labels[pr.Number] = append(f.labels[pr.Number], n.(string))
			out = append(out, map[string]any{"name": n})
		}
		f.writeJSON(w, 200, out)

	default:
		t.Errorf("fake: unexpected call %s %s", r.Method, r.URL.Path)
		f.message(w, 404, "Not Found")
	}
}

func (f *fakeGitHub) pr(num string) *fakePR {
	n, err := strconv.Atoi(num)
	if err != nil || n < 1 || n > len(f.prs) {
		return nil
	}
	return f.prs[n-1]
}

func (f *fakeGitHub) commitJSON(c *fakeCommit) map[string]any {
	ps := []any{}
	for _, p := range c.Parents {
		ps = append(ps, map[string]any{"sha": p})
	}
	who := func(i Identity) map[string]any {
		return map[string]any{"name": i.Name, "email": i.Email, "date": "2026-12-01T12:00:00Z"}
	}
	return map[string]any{"sha": c.SHA, "message": c.Message, "tree": map[string]any{"sha": c.Tree}, "parents": ps, "author": who(c.Author), "committer": who(c.Committer)}
}

func (f *fakeGitHub) prJSON(pr *fakePR) map[string]any {
	var merged any
	if pr.Merged {
		merged = "2026-12-01T12:00:00Z"
	}
	return map[string]any{
		"number": pr.Number, "state": pr.State, "title": pr.Title, "body": pr.Body, "merged_at": merged,
		"html_url": fmt.Sprintf("https://github.example/%s/%s/pull/%d", f.owner, f.repo, pr.Number),
		"head":     map[string]any{"ref": pr.Head, "sha": f.refOf(pr.Head), "repo": map[string]any{"full_name": f.owner + "/" + f.repo}},
		"base":     map[string]any{"ref": pr.Base},
	}
}

// refOf is the commit a branch points at, "" for none.
func (f *fakeGitHub) refOf(branch string) string {
	if f.git != nil {
		return f.git.head(branch)
	}
	return f.refs["refs/heads/"+branch]
}

// ancestor reports whether a is b or one of b's ancestors.
func (f *fakeGitHub) ancestor(a, b string) bool {
	seen := map[string]bool{}
	stack := []string{b}
	for len(stack) > 0 {
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if c == a {
			return true
		}
		if seen[c] || f.commits[c] == nil {
			continue
		}
		seen[c] = true
		stack = append(stack, f.commits[c].Parents...)
	}
	return false
}

// compare answers as GitHub's compare does: status of head relative to
// base, and the files changed from their merge base to head.
func (f *fakeGitHub) compare(base, head string) map[string]any {
	mb := ""
	for c := head; c != ""; {
		if f.ancestor(c, base) {
			mb = c
			break
		}
		if ps := f.commits[c].Parents; len(ps) > 0 {
			c = ps[0]
		} else {
			c = ""
		}
	}
	status := "diverged"
	switch {
	case base == head:
		status = "identical"
	case mb == base:
		status = "ahead"
	case mb == head:
		status = "behind"
	}
	files := []any{}
	if mb != "" {
		from, to := f.trees[f.commits[mb].Tree], f.trees[f.commits[head].Tree]
		var names []string
		for p, e := range to {
			if from[p] != e {
				names = append(names, p)
			}
		}
		for p := range from {
			if _, ok := to[p]; !ok {
				names = append(names, p)
			}
		}
		sort.Strings(names)
		for _, n := range names {
			files = append(files, map[string]any{"filename": n, "status": "modified"})
		}
	}
	return map[string]any{"status": status, "files": files}
}

// apiURL is the server's address as a --github-api value.
func (f *fakeGitHub) apiURL() string {
	u, _ := url.Parse(f.srv.URL)
	return u.String()
}
