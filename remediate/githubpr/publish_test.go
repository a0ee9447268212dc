package githubpr

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetaudit/fleetaudit/remediate"
)

const testToken = "ghp_t0ken_that_must_never_leak_42"

const (
	repoPath   = "/api/v3/repos/acme/fleet-config"
	gpuBranch  = "fleetaudit/fix/hugetlb-cma-on-gpu/gpu"
	gpuFile    = "layers/gpu/etc/default/grub.d/99-fleetaudit.cfg"
	gpuContent = "GRUB_CMDLINE_LINUX_DEFAULT=\"$GRUB_CMDLINE_LINUX_DEFAULT hugetlb_cma=0\"\n"
)

// sleeper records the waits the publisher asks for instead of waiting.
type sleeper struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (s *sleeper) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waits = append(s.waits, d)
	return ctx.Err()
}

func newPublisher(t *testing.T, f *fakeGitHub, opts Options) (*Publisher, *sleeper) {
	t.Helper()
	gh, err := NewClient(context.Background(), testToken, f.apiURL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &sleeper{}
	opts.Retry.Sleep = s.sleep
	return New(gh, "acme", "fleet-config", opts), s
}

func gpuProposal(f *fakeGitHub, content, fp string) remediate.Proposal {
	return remediate.Proposal{
		Rule: "hugetlb-cma-on-gpu", Fleet: "gpu", Branch: gpuBranch,
		Base: "main", BaseCommit: f.head("main"),
		Title:       "fleetaudit: hugetlb_cma=0 for fleet gpu",
		Body:        "**hugetlb-cma-on-gpu** on 3 hosts of fleet gpu.\n",
		Files:       []remediate.FileChange{{Path: gpuFile, Content: []byte(content), Mode: "100644"}},
		Fingerprint: fp,
	}
}

func webProposal(f *fakeGitHub) remediate.Proposal {
	return remediate.Proposal{
		Rule: "sysctl-somaxconn", Fleet: "web", Branch: "fleetaudit/fix/sysctl-somaxconn/web",
		Base: "main", BaseCommit: f.head("main"), Title: "fleetaudit: somaxconn for fleet web", Body: "web body\n",
		Files:       []remediate.FileChange{{Path: "layers/web/etc/sysctl.d/99-fleetaudit.conf", Content: []byte("net.core.somaxconn = 4096\n")}},
		Fingerprint: "fp-web",
	}
}

func publish(t *testing.T, p *Publisher, props ...remediate.Proposal) []Result {
	t.Helper()
	res, err := p.Publish(context.Background(), props)
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	return res
}

// calls is the requests as "METHOD path?query", for sequence checks.
func calls(reqs []fakeReq) []string {
	out := make([]string, len(reqs))
	for i, r := range reqs {
		out[i] = r.Method + " " + strings.TrimPrefix(r.Path, repoPath)
		if r.Query != "" {
			out[i] += "?" + r.Query
		}
	}
	return out
}

const listGPU = "GET /pulls?head=acme%3Afleetaudit%2Ffix%2Fhugetlb-cma-on-gpu%2Fgpu&per_page=100&state=all"

func TestFirstRunCreatesBranchAndPullRequest(t *testing.T) {
	f := newFakeGitHub(t, testToken)
	p, s := newPublisher(t, f, Options{})
	main := f.head("main")
	prop := gpuProposal(f, gpuContent, "fp1")

	res := publish(t, p, prop)

	want := []Result{{Rule: "hugetlb-cma-on-gpu", Fleet: "gpu", Branch: gpuBranch, Action: ActionCreated, PR: 1, URL: "https://github.example/acme/fleet-config/pull/1"}}
	if d := cmp.Diff(want, res); d != "" {
		t.Errorf("results (-want +got):\n%s", d)
	}
	head := f.head(gpuBranch)
	c := f.commits[head]
	if c == nil {
		t.Fatalf("branch %s was not created", gpuBranch)
	}
	wantBody := "**hugetlb-cma-on-gpu** on 3 hosts of fleet gpu.\n\n---\n<sub>Opened by fleetaudit. A rerun updates this branch and pull request. A commit you push to `fleetaudit/fix/hugetlb-cma-on-gpu/gpu` makes fleetaudit leave the branch alone; closing this pull request without merging declines the fix (delete the branch to ask for it again).</sub>\n\n<!-- fleetaudit-fingerprint: fp1 -->\n"
	bot := map[string]any{"name": "fleetaudit", "email": "fleetaudit@users.noreply.github.com"}
	wantReqs := []fakeReq{
		{Method: "GET", Path: repoPath},
		{Method: "GET", Path: repoPath + "/git/ref/heads/main"},
		{Method: "GET", Path: repoPath + "/pulls", Query: "head=acme%3Afleetaudit%2Ffix%2Fhugetlb-cma-on-gpu%2Fgpu&per_page=100&state=all"},
		{Method: "GET", Path: repoPath + "/git/ref/heads/" + gpuBranch},
		{Method: "GET", Path: repoPath + "/git/commits/" + main},
		{Method: "POST", Path: repoPath + "/git/blobs", Body: map[string]any{"content": base64.StdEncoding.EncodeToString([]byte(gpuContent)), "encoding": "base64"}},
		{Method: "POST", Path: repoPath + "/git/trees", Body: map[string]any{
			"base_tree": f.commits[main].Tree,
			"tree":      []any{map[string]any{"path": gpuFile, "mode": "100644", "type": "blob", "sha": gitBlobSHA([]byte(gpuContent))}},
		}},
		{Method: "POST", Path: repoPath + "/git/commits", Body: map[string]any{
			"message":   "fleetaudit: hugetlb_cma=0 for fleet gpu\n\nProposed by fleetaudit for rule hugetlb-cma-on-gpu, fleet gpu.\n\nFleetaudit-Fingerprint: fp1\n",
			"tree":      c.Tree,
			"parents":   []any{main},
			"author":    bot,
			"committer": bot,
		}},
		{Method: "POST", Path: repoPath + "/git/refs", Body: map[string]any{"ref": "refs/heads/" + gpuBranch, "sha": head}},
		{Method: "POST", Path: repoPath + "/pulls", Body: map[string]any{"title": prop.Title, "head": gpuBranch, "base": "main", "body": wantBody}},
	}
	if d := cmp.Diff(wantReqs, f.requests()); d != "" {
		t.Errorf("requests (-want +got):\n%s", d)
	}
	// What GitHub now holds: one commit on main with the file, by the bot.
	if got := f.file(gpuBranch, gpuFile); got != gpuContent {
		t.Errorf("branch file = %q, want %q", got, gpuContent)
	}
	if got := f.file(gpuBranch, "layers/base/etc/hosts"); got != "127.0.0.1 localhost\n" {
		t.Errorf("base tree not kept: hosts = %q", got)
	}
	if d := cmp.Diff([]*fakePR{{Number: 1, Title: prop.Title, Body: wantBody, Head: gpuBranch, Base: "main", State: "open"}}, f.prs); d != "" {
		t.Errorf("pull requests (-want +got):\n%s", d)
	}
	if len(s.waits) != 0 {
		t.Errorf("slept %v with nothing to retry", s.waits)
	}
}

func TestRerun(t *testing.T) {
	const newContent = "GRUB_CMDLINE_LINUX_DEFAULT=\"$GRUB_CMDLINE_LINUX_DEFAULT hugetlb_cma=0 iommu=pt\"\n"
	person := Identity{Name: "Ada", Email: "ada@example.com"}
	tests := []struct {
		name string
		// between runs, as people and GitHub would
		between func(f *fakeGitHub)
		content string
		fp      string
		want    Result
		calls   []string
		// branchMoved: the rerun pushed a new commit on the base head
		branchMoved bool
	}{{
		name: "same fix: nothing pushed, no second PR", content: gpuContent, fp: "fp1",
		want:  Result{Action: ActionUnchanged, PR: 1, Reason: "branch and pull request already carry this fix"},
		calls: []string{"GET ", "GET /git/ref/heads/main", listGPU, "GET /git/ref/heads/" + gpuBranch, "GET /git/commits/{head}"},
	}, {
		name: "changed fix: own branch recreated, PR edited, no second PR", content: newContent, fp: "fp2",
		want: Result{Action: ActionUpdated, PR: 1, Reason: "the fix changed; branch recreated on main {main}"},
		calls: []string{"GET ", "GET /git/ref/heads/main", listGPU, "GET /git/ref/heads/" + gpuBranch, "GET /git/commits/{head}",
			"GET /git/commits/{main}", "POST /git/blobs", "POST /git/trees", "POST /git/commits", "PATCH /git/refs/heads/" + gpuBranch, "PATCH /pulls/1"},
		branchMoved: true,
	}, {
		name: "base moved elsewhere: same fix left as it is",
		between: func(f *fakeGitHub) {
			f.refs["refs/heads/main"] = f.commit(f.refs["refs/heads/main"], map[string]string{"layers/base/etc/hosts": "10.0.0.1 gw\n"}, person, "gw\n")
		},
		content: gpuContent, fp: "fp1",
		want:  Result{Action: ActionUnchanged, PR: 1, Reason: "branch and pull request already carry this fix"},
		calls: []string{"GET ", "GET /git/ref/heads/main", listGPU, "GET /git/ref/heads/" + gpuBranch, "GET /git/commits/{head}", "GET /compare/{parent}...{main}"},
	}, {
		name: "base changed the fix's file: recreated on the new base",
		between: func(f *fakeGitHub) {
			f.refs["refs/heads/main"] = f.commit(f.refs["refs/heads/main"], map[string]string{gpuFile: "# placeholder\n"}, person, "placeholder\n")
		},
		content: gpuContent, fp: "fp1",
		want: Result{Action: ActionUpdated, PR: 1, Reason: "base main changed " + gpuFile + " since the branch was made; recreated on {main}"},
		calls: []string{"GET ", "GET /git/ref/heads/main", listGPU, "GET /git/ref/heads/" + gpuBranch, "GET /git/commits/{head}", "GET /compare/{parent}...{main}",
			"GET /git/commits/{main}", "POST /git/blobs", "POST /git/trees", "POST /git/commits", "PATCH /git/refs/heads/" + gpuBranch, "PATCH /pulls/1"},
		branchMoved: true,
	}, {
		name: "a person's commit on the branch: left alone, nothing pushed",
		between: func(f *fakeGitHub) {
			b := "refs/heads/" + gpuBranch
			f.refs[b] = f.commit(f.refs[b], map[string]string{gpuFile: "hand-tuned\n"}, person, "tune by hand\n")
		},
		content: newContent, fp: "fp2",
		want: Result{Action: ActionSkippedHumanCommit, PR: 1,
			Reason: "the head of " + gpuBranch + " (commit {head12}) was not made by fleetaudit; it never pushes over a person's commit. To let fleetaudit take over again, close the pull request and delete the branch " + gpuBranch},
		calls: []string{"GET ", "GET /git/ref/heads/main", listGPU, "GET /git/ref/heads/" + gpuBranch, "GET /git/commits/{head}"},
	}, {
		name: "a commit in the bot's name without the trailer: left alone",
		between: func(f *fakeGitHub) {
			b := "refs/heads/" + gpuBranch
			f.refs[b] = f.commit(f.refs[b], map[string]string{gpuFile: "scripted\n"}, DefaultIdentity, "scripted edit\n")
		},
		content: newContent, fp: "fp2",
		want: Result{Action: ActionSkippedHumanCommit, PR: 1,
			Reason: "the head of " + gpuBranch + " (commit {head12}) was not made by fleetaudit; it never pushes over a person's commit. To let fleetaudit take over again, close the pull request and delete the branch " + gpuBranch},
		calls: []string{"GET ", "GET /git/ref/heads/main", listGPU, "GET /git/ref/heads/" + gpuBranch, "GET /git/commits/{head}"},
	}, {
		name: "a PR closed unmerged: not reopened, nothing pushed",
		between: func(f *fakeGitHub) {
			f.prs[0].State = "closed"
		},
		content: newContent, fp: "fp2",
		want: Result{Action: ActionSkippedClosed, PR: 1,
			Reason: "pull request #1 was closed without merging; fleetaudit does not reopen it. To ask for this fix again, delete the branch " + gpuBranch},
		calls: []string{"GET ", "GET /git/ref/heads/main", listGPU, "GET /git/ref/heads/" + gpuBranch},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeGitHub(t, testToken)
			p, _ := newPublisher(t, f, Options{})
			publish(t, p, gpuProposal(f, gpuContent, "fp1"))
			f.requests()
			if tt.between != nil {
				tt.between(f)
			}
			parent := f.commits[f.head(gpuBranch)].Parents[0]
			before, prBefore := f.head(gpuBranch), *f.prs[0]
			prop := gpuProposal(f, tt.content, tt.fp)
			main := f.head("main")

			// A fresh publisher, as a rerun of the command would have.
			p, _ = newPublisher(t, f, Options{})
			res := publish(t, p, prop)

			r := strings.NewReplacer("{main}", short(main), "{head12}", short(before))
			want := tt.want
			want.Rule, want.Fleet, want.Branch = prop.Rule, prop.Fleet, prop.Branch
			want.URL = "https://github.example/acme/fleet-config/pull/1"
			want.Reason = r.Replace(want.Reason)
			if d := cmp.Diff([]Result{want}, res); d != "" {
				t.Errorf("results (-want +got):\n%s", d)
			}
			rc := strings.NewReplacer("{head}", before, "{main}", main, "{parent}", parent)
			var wantCalls []string
			for _, c := range tt.calls {
				wantCalls = append(wantCalls, rc.Replace(c))
			}
			reqs := f.requests()
			if d := cmp.Diff(wantCalls, calls(reqs)); d != "" {
				t.Errorf("calls (-want +got):\n%s", d)
			}
			if len(f.prs) != 1 {
				t.Errorf("%d pull requests, want the one", len(f.prs))
			}
			head := f.head(gpuBranch)
			if !tt.branchMoved {
				if head != before {
					t.Errorf("branch moved from %s to %s", before, head)
				}
				if d := cmp.Diff(prBefore, *f.prs[0]); d != "" {
					t.Errorf("pull request changed (-before +after):\n%s", d)
				}
				return
			}
			c := f.commits[head]
			if d := cmp.Diff([]string{main}, c.Parents); d != "" {
				t.Errorf("new commit's parents (-want +got):\n%s", d)
			}
			if got := f.file(gpuBranch, gpuFile); got != tt.content {
				t.Errorf("branch file = %q, want %q", got, tt.content)
			}
			for _, rq := range reqs {
				if rq.Method == "PATCH" && strings.Contains(rq.Path, "/git/refs/") {
					if d := cmp.Diff(map[string]any{"sha": head, "force": true}, rq.Body); d != "" {
						t.Errorf("ref update body (-want +got):\n%s", d)
					}
				}
			}
			for _, rq := range reqs {
				if rq.Method == "PATCH" && strings.HasSuffix(rq.Path, "/pulls/1") {
					if d := cmp.Diff(map[string]any{"title": prop.Title, "body": prBody(prop), "base": "main"}, rq.Body); d != "" {
						t.Errorf("pull request edit body (-want +got):\n%s", d)
					}
				}
			}
			if !strings.Contains(f.prs[0].Body, "<!-- fleetaudit-fingerprint: "+tt.fp+" -->") {
				t.Errorf("PR body lacks the fingerprint marker: %q", f.prs[0].Body)
			}
		})
	}
}

func TestDeletingTheBranchOfAClosedPRAsksAgain(t *testing.T) {
	f := newFakeGitHub(t, testToken)
	p, _ := newPublisher(t, f, Options{})
	publish(t, p, gpuProposal(f, gpuContent, "fp1"))
	f.prs[0].State = "closed"
	delete(f.refs, "refs/heads/"+gpuBranch)

	res := publish(t, p, gpuProposal(f, gpuContent, "fp1"))

	if res[0].Action != ActionCreated || res[0].PR != 2 {
		t.Errorf("result = %+v, want a new pull request #2", res[0])
	}
	if f.prs[0].State != "closed" {
		t.Errorf("closed pull request #1 is %s now", f.prs[0].State)
	}
}

func TestProvenBaseChangedRefuses(t *testing.T) {
	f := newFakeGitHub(t, testToken)
	p, _ := newPublisher(t, f, Options{})
	prop := gpuProposal(f, gpuContent, "fp1") // proven at the current main
	proven := prop.BaseCommit
	f.refs["refs/heads/main"] = f.commit(proven, map[string]string{gpuFile: "someone else's line\n"}, Identity{Name: "Ada", Email: "ada@example.com"}, "x\n")

	res := publish(t, p, prop)

	want := "main changed " + gpuFile + " since commit " + short(proven) + " the fix was proven against: rerun remediate on a fresh checkout of main"
	if res[0].Action != ActionFailed || res[0].Reason != want {
		t.Errorf("result = %+v, want failed with %q", res[0], want)
	}
	for _, r := range f.requests() {
		if r.Method != "GET" {
			t.Errorf("wrote %s %s", r.Method, r.Path)
		}
	}
}

func TestRetries(t *testing.T) {
	secondary := `{"message":"You have exceeded a secondary rate limit.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}`
	tests := []struct {
		name   string
		inject []fakeInjection
		want   string // action
		// prs: pull requests opened when the run goes on (0 = 2)
		prs   int
		waits []time.Duration
		// errWant: Publish stops with an error containing each
		errWant []string
	}{{
		name:   "5xx then success",
		inject: []fakeInjection{{Method: "POST", Path: repoPath + "/pulls", Status: 502, Body: `{"message":"Server Error"}`}},
		want:   ActionCreated, waits: []time.Duration{time.Second},
	}, {
		name: "422: that proposal fails with GitHub's message, the run goes on",
		inject: []fakeInjection{{Method: "POST", Path: repoPath + "/pulls", Status: 422,
			Body: `{"message":"Validation Failed","errors":[{"resource":"PullRequest","code":"custom","message":"No commits between main and fleetaudit/fix/hugetlb-cma-on-gpu/gpu"}]}`}},
		want: ActionFailed, prs: 1,
	}, {
		name:   "429 with Retry-After",
		inject: []fakeInjection{{Method: "GET", Path: repoPath + "/pulls", Status: 429, Header: map[string]string{"Retry-After": "1"}, Body: `{"message":"Too Many Requests"}`}},
		want:   ActionCreated, waits: []time.Duration{time.Second},
	}, {
		name:   "secondary rate limit, short",
		inject: []fakeInjection{{Method: "POST", Path: repoPath + "/git/blobs", Status: 403, Header: map[string]string{"Retry-After": "0"}, Body: secondary}},
		want:   ActionCreated, waits: []time.Duration{0},
	}, {
		name:    "secondary rate limit, long: stops",
		inject:  []fakeInjection{{Method: "POST", Path: repoPath + "/git/blobs", Status: 403, Header: map[string]string{"Retry-After": "3600"}, Body: secondary}},
		want:    ActionFailed,
		errWant: []string{"create blob", "secondary rate limit", "retry after 1h0m0s", "longer than the 1m0s this run waits: rerun later"},
	}, {
		name: "primary rate limit exhausted for an hour: stops",
		inject: []fakeInjection{{Method: "GET", Path: repoPath + "/git/ref/heads/main", Status: 403, Header: map[string]string{
			"X-RateLimit-Limit": "5000", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10),
		}, Body: `{"message":"API rate limit exceeded"}`}},
		want:    ActionFailed,
		errWant: []string{"get ref heads/main", "rate limit of 5000 requests exhausted; it resets at", "rerun later"},
	}, {
		name: "403 without permission: stops, names what the token needs",
		inject: []fakeInjection{{Method: "POST", Path: repoPath + "/git/blobs", Status: 403,
			Body: `{"message":"Resource not accessible by personal access token","documentation_url":"https://docs.github.com/rest/git/blobs#create-a-blob"}`}},
		want:    ActionFailed,
		errWant: []string{"create blob " + gpuFile + " (POST " + repoPath + "/git/blobs): 403 the token lacks permission on acme/fleet-config (needs contents:write and pull_requests:write): Resource not accessible by personal access token"},
	}, {
		name:    "401: stops",
		inject:  []fakeInjection{{Method: "GET", Path: repoPath + "/git/ref/heads/main", Status: 401, Body: `{"message":"Bad credentials"}`}},
		want:    ActionFailed,
		errWant: []string{"401 the token was refused (Bad credentials): check GITHUB_TOKEN"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeGitHub(t, testToken)
			for _, inj := range tt.inject {
				f.fail(inj)
			}
			p, s := newPublisher(t, f, Options{})
			// A second proposal shows whether the run went on.
			res, err := p.Publish(context.Background(), []remediate.Proposal{gpuProposal(f, gpuContent, "fp1"), webProposal(f)})
			if len(tt.errWant) == 0 {
				if err != nil {
					t.Fatalf("Publish: %v", err)
				}
				if len(res) != 2 || res[0].Action != tt.want || res[1].Action != ActionCreated {
					t.Fatalf("results = %+v, want %s and created", res, tt.want)
				}
				wantPRs := tt.prs
				if wantPRs == 0 {
					wantPRs = 2
				}
				if len(f.prs) != wantPRs {
					t.Errorf("%d pull requests, want %d", len(f.prs), wantPRs)
				}
				if tt.want == ActionFailed {
					want := "github: create pull request (POST " + repoPath + "/pulls): 422 Validation Failed; No commits between main and " + gpuBranch
					if res[0].Reason != want {
						t.Errorf("reason = %q, want %q", res[0].Reason, want)
					}
				}
			} else {
				if err == nil {
					t.Fatalf("Publish succeeded, want an error; results %+v", res)
				}
				for _, w := range tt.errWant {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				if len(res) != 1 || res[0].Action != ActionFailed || res[0].Reason != err.Error() {
					t.Errorf("results = %+v, want the first failed with the error and the second not tried", res)
				}
				if len(f.prs) != 0 {
					t.Errorf("%d pull requests opened", len(f.prs))
				}
			}
			if err != nil && strings.Contains(err.Error(), testToken) {
				t.Errorf("the token is in the error: %v", err)
			}
			for _, r := range res {
				if strings.Contains(r.Reason, testToken) {
					t.Errorf("the token is in a result: %+v", r)
				}
			}
			if d := cmp.Diff(tt.waits, s.waits); d != "" {
				t.Errorf("waits (-want +got):\n%s", d)
			}
		})
	}
}

func TestPersistent5xxFailsOneProposalOnly(t *testing.T) {
	f := newFakeGitHub(t, testToken)
	for range 3 {
		f.fail(fakeInjection{Method: "GET", Path: repoPath + "/git/ref/heads/" + gpuBranch, Status: 500, Body: `{"message":"Server Error"}`})
	}
	p, s := newPublisher(t, f, Options{})

	res := publish(t, p, gpuProposal(f, gpuContent, "fp1"), webProposal(f))

	wantReason := "github: get ref heads/" + gpuBranch + " (GET " + repoPath + "/git/ref/heads/" + gpuBranch + "): 500 server error: Server Error (gave up after 3 attempts)"
	if res[0].Action != ActionFailed || res[0].Reason != wantReason {
		t.Errorf("first = %+v, want failed: %s", res[0], wantReason)
	}
	if res[1].Action != ActionCreated {
		t.Errorf("second = %+v, want created", res[1])
	}
	if d := cmp.Diff([]time.Duration{time.Second, 2 * time.Second}, s.waits); d != "" {
		t.Errorf("backoff (-want +got):\n%s", d)
	}
}

func TestCancelStopsAtOnce(t *testing.T) {
	f := newFakeGitHub(t, testToken)
	f.fail(fakeInjection{Method: "GET", Path: repoPath + "/git/ref/heads/main", Status: 503, Body: `{"message":"unavailable"}`})
	gh, err := NewClient(context.Background(), testToken, f.apiURL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := New(gh, "acme", "fleet-config", Options{Retry: Retry{Sleep: func(ctx context.Context, _ time.Duration) error {
		cancel()
		return ctx.Err()
	}}})

	res, err := p.Publish(ctx, []remediate.Proposal{gpuProposal(f, gpuContent, "fp1"), webProposal(f)})

	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if len(res) != 1 {
		t.Errorf("results = %+v, want the one interrupted", res)
	}
	if d := cmp.Diff([]string{"GET ", "GET /git/ref/heads/main"}, calls(f.requests())); d != "" {
		t.Errorf("calls (-want +got):\n%s", d)
	}
}

func TestMaxOpenPRs(t *testing.T) {
	f := newFakeGitHub(t, testToken)
	// One open fleetaudit PR from an earlier run and one a person opened.
	main := f.head("main")
	for _, b := range []string{"fleetaudit/fix/other/db", "ada/typo"} {
		f.refs["refs/heads/"+b] = main
		f.prs = append(f.prs, &fakePR{Number: len(f.prs) + 1, Title: b, Head: b, Base: "main", State: "open"})
	}
	p, _ := newPublisher(t, f, Options{MaxOpenPRs: 2, Labels: []string{"fleetaudit"}})

	res := publish(t, p, gpuProposal(f, gpuContent, "fp1"), webProposal(f))

	if res[0].Action != ActionCreated || res[0].PR != 3 {
		t.Errorf("first = %+v, want created #3", res[0])
	}
	wantCap := Result{Rule: "sysctl-somaxconn", Fleet: "web", Branch: "fleetaudit/fix/sysctl-somaxconn/web", Action: ActionSkippedCap,
		Reason: "2 fleetaudit pull requests are open, the cap (max open PRs) is 2; merge or close some and rerun"}
	if d := cmp.Diff(wantCap, res[1]); d != "" {
		t.Errorf("second (-want +got):\n%s", d)
	}
	if _, ok := f.refs["refs/heads/fleetaudit/fix/sysctl-somaxconn/web"]; ok {
		t.Error("a branch was pushed for a pull request over the cap")
	}
	if d := cmp.Diff(map[int][]string{3: {"fleetaudit"}}, f.labels); d != "" {
		t.Errorf("labels (-want +got):\n%s", d)
	}
	reqs := f.requests()
	if got := calls(reqs)[1]; got != "GET /pulls?per_page=100&state=open" {
		t.Errorf("second call = %q, want the open pull requests counted once", got)
	}

	// At the cap, an existing pull request is still updated.
	p, _ = newPublisher(t, f, Options{MaxOpenPRs: 2})
	res = publish(t, p, gpuProposal(f, "new\n", "fp2"), webProposal(f))
	if res[0].Action != ActionUpdated || res[1].Action != ActionSkippedCap {
		t.Errorf("rerun = %+v, want updated and skipped-cap", res)
	}
	if got := f.file(gpuBranch, gpuFile); got != "new\n" {
		t.Errorf("branch file = %q after the update", got)
	}
}

func TestNewClient(t *testing.T) {
	tests := []struct {
		name, token, api string
		wantBase         string
		wantErr          string
	}{
		{name: "github.com", token: "t", api: "", wantBase: "https://api.github.com/"},
		{name: "enterprise", token: "t", api: "https://ghe.example.com", wantBase: "https://ghe.example.com/api/v3/"},
		{name: "enterprise with path", token: "t", api: "https://ghe.example.com/api/v3", wantBase: "https://ghe.example.com/api/v3/"},
		{name: "gitea on loopback", token: "t", api: "http://127.0.0.1:3000/api/v1", wantBase: "http://127.0.0.1:3000/api/v1/"},
		{name: "no token", token: " ", api: "", wantErr: "no token (set GITHUB_TOKEN)"},
		{name: "cleartext to the network", token: "t", api: "http://ghe.example.com", wantErr: "plain http to a host that is not loopback"},
		{name: "credentials in the URL", token: "t", api: "https://bot:" + testToken + "@ghe.example.com", wantErr: "carries credentials: pass the token in GITHUB_TOKEN instead"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewClient(context.Background(), tt.token, tt.api, nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), testToken) {
					t.Errorf("the token is in the error: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := c.BaseURL.String(); got != tt.wantBase {
				t.Errorf("base URL = %s, want %s", got, tt.wantBase)
			}
		})
	}
}

// A redirect to another host must not carry the token (go-github's own
// WithAuthToken sets it on every request, wherever it goes).
func TestTokenNotSentToAnotherHost(t *testing.T) {
	var mu sync.Mutex
	var elsewhere []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		elsewhere = append(elsewhere, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"full_name":"acme/fleet-config"}`))
	}))
	defer other.Close()
	otherURL := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("Authorization"); got != "Bearer "+testToken {
			t.Errorf("API got Authorization %q", got)
		}
		http.Redirect(w, r, otherURL+r.URL.Path, http.StatusFound)
	}))
	defer api.Close()
	gh, err := NewClient(context.Background(), testToken, api.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := gh.Repositories.Get(context.Background(), "acme", "fleet-config"); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{""}, elsewhere); d != "" {
		t.Errorf("Authorization seen by the other host (-want +got):\n%s", d)
	}
}

func TestUnreachableAPIErrorHasNoToken(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	gh, err := NewClient(context.Background(), testToken, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := New(gh, "acme", "fleet-config", Options{Retry: Retry{Sleep: func(context.Context, time.Duration) error { return nil }}})
	res, err := p.Publish(context.Background(), []remediate.Proposal{{Branch: gpuBranch}})
	if err == nil {
		t.Fatalf("Publish reached a closed server: %+v", res)
	}
	if !strings.Contains(err.Error(), "get repository") || strings.Contains(err.Error(), testToken) {
		t.Errorf("error = %v, want it to name the call and not the token", err)
	}
}

func TestRepositoryNotFound(t *testing.T) {
	f := newFakeGitHub(t, testToken)
	f.fail(fakeInjection{Method: "GET", Path: repoPath, Status: 404, Body: `{"message":"Not Found"}`})
	p, _ := newPublisher(t, f, Options{})

	res, err := p.Publish(context.Background(), []remediate.Proposal{gpuProposal(f, gpuContent, "fp1")})

	want := "github: get repository (GET " + repoPath + "): 404 repository acme/fleet-config not found, or the token has no access to it: Not Found"
	if err == nil || err.Error() != want || len(res) != 0 {
		t.Errorf("Publish = %+v, %v; want no results and %q", res, err, want)
	}
	if d := cmp.Diff([]string{"GET "}, calls(f.requests())); d != "" {
		t.Errorf("calls (-want +got):\n%s", d)
	}
}

func TestSameFixNewTextEditsOnlyThePullRequest(t *testing.T) {
	f := newFakeGitHub(t, testToken)
	p, _ := newPublisher(t, f, Options{})
	publish(t, p, gpuProposal(f, gpuContent, "fp1"))
	head := f.head(gpuBranch)
	f.requests()
	prop := gpuProposal(f, gpuContent, "fp1")
	prop.Body = "**hugetlb-cma-on-gpu** on 4 hosts of fleet gpu.\n"

	res := publish(t, p, prop)

	if res[0].Action != ActionUpdated || res[0].Reason != "pull request text updated; branch unchanged" {
		t.Errorf("result = %+v", res[0])
	}
	if f.head(gpuBranch) != head {
		t.Error("the branch was pushed for a change of text alone")
	}
	want := []string{"GET ", "GET /git/ref/heads/main", listGPU, "GET /git/ref/heads/" + gpuBranch, "GET /git/commits/" + head, "PATCH /pulls/1"}
	if d := cmp.Diff(want, calls(f.requests())); d != "" {
		t.Errorf("calls (-want +got):\n%s", d)
	}
	if !strings.HasPrefix(f.prs[0].Body, prop.Body) {
		t.Errorf("PR body = %q", f.prs[0].Body)
	}
}

// A server that ignores the head filter and has more pull requests than
// maxPages pages: fleetaudit cannot tell whether its PR exists, so it
// fails that proposal instead of risking a duplicate.
func TestTooManyPullRequestPagesFails(t *testing.T) {
	f := newFakeGitHub(t, testToken)
	p, _ := newPublisher(t, f, Options{})
	for i := 1; i <= maxPages; i++ {
		f.fail(fakeInjection{Method: "GET", Path: repoPath + "/pulls", Status: 200, Body: "[]",
			Header: map[string]string{"Link": fmt.Sprintf(`<%s%s/pulls?page=%d>; rel="next"`, f.srv.URL, repoPath, i+1)}})
	}
	res := publish(t, p, gpuProposal(f, gpuContent, "fp1"))
	if res[0].Action != ActionFailed || !strings.Contains(res[0].Reason, "cannot tell whether fleetaudit already opened one") {
		t.Errorf("result %+v, want failed: cannot tell", res[0])
	}
	if f.head(gpuBranch) != "" || len(f.prs) != 0 {
		t.Error("wrote a branch or a pull request without knowing")
	}
}

// A fix proven at a commit no branch names targets the repository's
// default branch (the API's default_branch), which must hold that commit.
func TestNoBaseBranchTargetsTheDefaultBranch(t *testing.T) {
	f := newFakeGitHub(t, testToken)
	p, _ := newPublisher(t, f, Options{})
	prop := gpuProposal(f, gpuContent, "fp1")
	prop.Base = ""
	res := publish(t, p, prop)
	if res[0].Action != ActionCreated || f.prs[0].Base != "main" {
		t.Errorf("result %+v, PR base %q; want created on main", res[0], f.prs[0].Base)
	}
}
