package githubpr

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetaudit/fleetaudit/remediate"
)

// newGitPublisher is a publisher whose branches go through git over HTTP
// (the fake's git http-backend), pull requests through the fake REST API.
func newGitPublisher(t *testing.T, f *fakeGitHub) *Publisher {
	t.Helper()
	p, _ := newPublisher(t, f, Options{Git: &GitTransport{Token: testToken}})
	return p
}

func gitProposal(g *fakeGitRepo, content, fp string) remediate.Proposal {
	return remediate.Proposal{
		Rule: "hugetlb-cma-on-gpu", Fleet: "gpu", Branch: gpuBranch,
		Base: "main", BaseCommit: g.head("main"),
		Title:       "fleetaudit: hugetlb_cma=0 for fleet gpu",
		Body:        "**hugetlb-cma-on-gpu** on 3 hosts of fleet gpu.\n",
		Files:       []remediate.FileChange{{Path: gpuFile, Content: []byte(content), Mode: "100644"}},
		Fingerprint: fp,
	}
}

// The git transport: the branch is one commit on main by the bot with the
// trailer, pushed over git's HTTP protocol with the token as Basic auth;
// the REST API sees only the repository and pull request calls; a rerun
// pushes nothing and opens no second pull request; a changed fix moves the
// branch; a person's commit is left alone.
func TestGitTransport(t *testing.T) {
	f := newFakeGitHub(t, testToken)
	g := f.serveGit(t)
	main := g.head("main")

	res := publish(t, newGitPublisher(t, f), gitProposal(g, gpuContent, "fp1"))

	want := []Result{{Rule: "hugetlb-cma-on-gpu", Fleet: "gpu", Branch: gpuBranch, Action: ActionCreated, PR: 1, URL: "https://github.example/acme/fleet-config/pull/1"}}
	if d := cmp.Diff(want, res); d != "" {
		t.Fatalf("results (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"GET ", listGPU, "POST /pulls"}, calls(f.requests())); d != "" {
		t.Errorf("API calls (-want +got):\n%s", d)
	}
	gitCalls := strings.Join(g.gitRequests(), "\n")
	for _, want := range []string{"GET /info/refs?service=git-upload-pack", "GET /info/refs?service=git-receive-pack", "POST /git-receive-pack?"} {
		if !strings.Contains(gitCalls, want) {
			t.Errorf("git requests lack %q:\n%s", want, gitCalls)
		}
	}
	head := g.head(gpuBranch)
	if got := g.show("log", "--format=%P|%an <%ae>|%cn <%ce>", "-1", head); got != main+"|fleetaudit <fleetaudit@users.noreply.github.com>|fleetaudit <fleetaudit@users.noreply.github.com>" {
		t.Errorf("branch commit: %s", got)
	}
	if got := g.show("log", "--format=%B", "-1", head); !strings.Contains(got, "\n\nFleetaudit-Fingerprint: fp1") {
		t.Errorf("commit message lacks the trailer:\n%s", got)
	}
	if got := g.show("show", head+":"+gpuFile) + "\n"; got != gpuContent {
		t.Errorf("file on the branch = %q", got)
	}
	if got := g.show("diff", "--name-only", main, head); got != gpuFile {
		t.Errorf("the commit changes %q, want only %s", got, gpuFile)
	}

	t.Run("rerun, same fix", func(t *testing.T) {
		res := publish(t, newGitPublisher(t, f), gitProposal(g, gpuContent, "fp1"))
		if res[0].Action != ActionUnchanged || res[0].PR != 1 {
			t.Errorf("result %+v, want unchanged #1", res[0])
		}
		if g.head(gpuBranch) != head || len(f.prs) != 1 {
			t.Errorf("branch moved or a PR was added (%d PRs)", len(f.prs))
		}
		if d := cmp.Diff([]string{"GET ", listGPU}, calls(f.requests())); d != "" {
			t.Errorf("API calls (-want +got):\n%s", d)
		}
		for _, r := range g.gitRequests() {
			if strings.Contains(r, "receive-pack") {
				t.Errorf("pushed on an unchanged rerun: %s", r)
			}
		}
	})

	newContent := "GRUB_CMDLINE_LINUX_DEFAULT=\"$GRUB_CMDLINE_LINUX_DEFAULT hugetlb_cma=0 iommu=pt\"\n"
	t.Run("base changed the fix's file", func(t *testing.T) {
		prop := gitProposal(g, gpuContent, "fp1") // proven before main moved
		newMain := g.commitOn("main", map[string]string{gpuFile: "# placeholder\n"}, "placeholder")
		res := publish(t, newGitPublisher(t, f), prop)
		want := "main changed " + gpuFile + " since commit " + short(prop.BaseCommit) + " the fix was proven against: rerun remediate on a fresh checkout of main"
		if res[0].Action != ActionFailed || res[0].Reason != want {
			t.Errorf("result %+v, want failed: %s", res[0], want)
		}
		// Proven on the new main: the branch is recreated there.
		res = publish(t, newGitPublisher(t, f), gitProposal(g, gpuContent, "fp1"))
		if res[0].Action != ActionUpdated || !strings.Contains(res[0].Reason, "base main changed "+gpuFile) {
			t.Errorf("result %+v, want updated because main changed the file", res[0])
		}
		if got := g.show("log", "--format=%P", "-1", gpuBranch); got != newMain {
			t.Errorf("branch parent %s, want the new main %s", got, newMain)
		}
		f.requests()
	})

	t.Run("changed fix", func(t *testing.T) {
		before := g.head(gpuBranch)
		res := publish(t, newGitPublisher(t, f), gitProposal(g, newContent, "fp2"))
		if res[0].Action != ActionUpdated || res[0].PR != 1 || len(f.prs) != 1 {
			t.Errorf("result %+v (%d PRs), want #1 updated", res[0], len(f.prs))
		}
		after := g.head(gpuBranch)
		if after == before || g.show("log", "--format=%P", "-1", after) != g.head("main") {
			t.Errorf("branch %s -> %s, want one new commit on main", before, after)
		}
		if d := cmp.Diff([]string{"GET ", listGPU, "PATCH /pulls/1"}, calls(f.requests())); d != "" {
			t.Errorf("API calls (-want +got):\n%s", d)
		}
	})

	t.Run("a person's commit", func(t *testing.T) {
		theirs := g.commitOn(gpuBranch, map[string]string{gpuFile: "hand-tuned\n"}, "tune by hand")
		res := publish(t, newGitPublisher(t, f), gitProposal(g, gpuContent, "fp3"))
		if res[0].Action != ActionSkippedHumanCommit {
			t.Errorf("result %+v, want skipped-human-commit", res[0])
		}
		if g.head(gpuBranch) != theirs {
			t.Error("fleetaudit pushed over a person's commit")
		}
	})
}

// The push carries a lease: a branch that moved after it was read is not
// overwritten, whatever fleetaudit believed.
func TestGitTransportLease(t *testing.T) {
	f := newFakeGitHub(t, testToken)
	g := f.serveGit(t)
	p := newGitPublisher(t, f)
	publish(t, p, gitProposal(g, gpuContent, "fp1"))
	ours := g.head(gpuBranch)
	theirs := g.commitOn(gpuBranch, map[string]string{gpuFile: "mine\n"}, "mine")

	gb, err := newGitBranches(context.Background(), p, f.srv.URL+g.urlPath)
	if err != nil {
		t.Fatal(err)
	}
	defer gb.close()
	ctx := context.Background()
	main, err := gb.head(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	err = gb.write(ctx, gitProposal(g, "x=1\n", "fp2"), main, ours)
	if err == nil || !strings.Contains(err.Error(), "the branch moved while fleetaudit was updating it") {
		t.Errorf("write over a moved branch: %v", err)
	}
	if g.head(gpuBranch) != theirs {
		t.Error("the person's commit was overwritten")
	}
	// Creating a branch that appeared meanwhile is refused the same way.
	err = gb.write(ctx, gitProposal(g, "x=1\n", "fp2"), main, "")
	if err == nil || !strings.Contains(err.Error(), "the branch moved") {
		t.Errorf("create over an existing branch: %v", err)
	}
}

// A token git's server refuses stops the run (401, fatal) and is printed
// nowhere.
func TestGitTransportTokenRefused(t *testing.T) {
	f := newFakeGitHub(t, testToken)
	g := f.serveGit(t)
	g.refuse = true
	res, err := newGitPublisher(t, f).Publish(context.Background(), []remediate.Proposal{gitProposal(g, gpuContent, "fp1")})
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != 401 || !ae.Fatal {
		t.Fatalf("err = %v, want a fatal 401 (results %+v)", err, res)
	}
	if len(res) != 1 || res[0].Action != ActionFailed {
		t.Errorf("results %+v", res)
	}
	if strings.Contains(err.Error()+res[0].Reason, testToken) {
		t.Error("the token is in the error")
	}
}

// The token goes to the API's host only: a clone URL elsewhere, with
// credentials, or in clear over a network is refused before git runs.
func TestGitTransportCloneURL(t *testing.T) {
	f := newFakeGitHub(t, testToken)
	p := newGitPublisher(t, f)
	for _, tc := range []struct{ url, want string }{
		{"https://elsewhere.example/acme/fleet-config.git", "another host than the API"},
		{"http://user:pw@127.0.0.1/acme/fleet-config.git", "carries credentials"},
		{"http://git.example/acme/fleet-config.git", "scheme must be https"},
		{"", "has no clone_url"},
	} {
		_, err := newGitBranches(context.Background(), p, tc.url)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("clone URL %q: %v, want %q", tc.url, err, tc.want)
		}
	}
}

// Through the Git Data API a Gitea server answers 404 for every ref: the
// failure says to push with git instead.
func TestGitDataAPIOnGiteaSaysPushWithGit(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/api/v1/repos/acme/fleet-config" {
			io.WriteString(w, `{"full_name": "acme/fleet-config", "default_branch": "main"}`)
			return
		}
		w.WriteHeader(http.StatusNotFound) // Gitea has no GET /git/ref/{ref}
		io.WriteString(w, `{"message": "not found"}`)
	}))
	defer srv.Close()
	gh, err := NewClient(context.Background(), testToken, srv.URL+"/api/v1/", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := New(gh, "acme", "fleet-config", Options{}).Publish(context.Background(), []remediate.Proposal{{
		Rule: "r", Fleet: "f", Branch: BranchPrefix + "r/f", Base: "main", Fingerprint: "fp",
		Files: []remediate.FileChange{{Path: "a", Content: []byte("b\n")}},
	}})
	if err != nil || len(res) != 1 || !strings.Contains(res[0].Reason, "--push git") {
		t.Errorf("results %+v, err %v; want a hint to push with git", res, err)
	}
}
