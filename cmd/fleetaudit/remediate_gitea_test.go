package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetaudit/fleetaudit/internal/giteatest"
)

// giteaPR is the part of Gitea's pull request answer the test reads.
type giteaPR struct {
	Number   int    `json:"number"`
	State    string `json:"state"`
	Title    string `json:"title"`
	Body     string `json:"body"`
	HTMLURL  string `json:"html_url"`
	MergedAt any    `json:"merged_at"`
	Head     struct {
		Ref string `json:"ref"`
		SHA string `json:"sha"`
	} `json:"head"`
	Base struct {
		Ref string `json:"ref"`
	} `json:"base"`
}

// End to end against a real forge: Gitea on loopback, the example config
// repo with the hugetlb_cma incident pushed to it over HTTP with real git,
// and remediate --github pointed at it through --github-api. Branches go
// by git push (Gitea's Git Data API cannot write), pull requests through
// its REST API. Checks through Gitea's API and git what the first run made
// and what each rerun does: nothing new, a changed fix, a person's commit,
// a closed pull request, and asking again by deleting the branch.
func TestRemediateGiteaEndToEnd(t *testing.T) {
	srv := giteatest.Start(t)
	ctx := context.Background()
	dir, _ := cmaExampleRepo(t)
	owner, name := srv.User, "fleet-config"
	repoAPI := "repos/" + owner + "/" + name
	const branch = "fleetaudit/fix/hugetlb-cma-on-gpu/gpu-training"
	const dropIn = "layers/gpu/etc/default/grub.d/99-fleetaudit.cfg"
	if _, err := srv.API(ctx, "POST", "user/repos", map[string]any{"name": name, "private": true, "default_branch": "main"}, nil); err != nil {
		t.Fatal(err)
	}
	cloneURL := srv.URL + owner + "/" + name + ".git"
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=Ada", "-c", "user.email=ada@example.com"}, args...)...)
		cmd.Env = srv.GitEnv()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("push", "-q", cloneURL, "main:refs/heads/main")
	// Gitea marks the repository non-empty (and so allows pull requests)
	// from its push queue, after the push returned.
	srv.WaitFor(t, "the repository is no longer empty", func() bool {
		var repo struct{ Empty bool }
		_, err := srv.API(ctx, "GET", repoAPI, nil, &repo)
		return err == nil && !repo.Empty
	})

	remediate := func(want string, extra ...string) string {
		t.Helper()
		r := runCLI(t, map[string]string{"GITHUB_TOKEN": srv.Token, "COLUMNS": "400"}, append([]string{"remediate", "--repo", dir,
			"--rule", "hugetlb-cma-on-gpu", "--github", owner + "/" + name, "--github-api", srv.URL + "api/v1/"}, extra...)...)
		if strings.Contains(r.stdout+r.stderr, srv.Token) {
			t.Fatal("the token was printed")
		}
		if r.code != exitOK || !strings.Contains(r.stdout, "\npull request: "+want) {
			t.Fatalf("exit %d, want 0 and \"pull request: %s\"\nstdout:\n%s\nstderr:\n%s\ngitea log %s:\n%s", r.code, want, r.stdout, r.stderr, srv.Log, srv.LogTail())
		}
		return r.stdout
	}
	pulls := func() []giteaPR {
		t.Helper()
		var prs []giteaPR
		if _, err := srv.API(ctx, "GET", repoAPI+"/pulls?state=all", nil, &prs); err != nil {
			t.Fatal(err)
		}
		return prs
	}
	// head fetches the branch with git and returns its commit.
	head := func() string {
		t.Helper()
		git("fetch", "-q", cloneURL, "+refs/heads/"+branch+":refs/remotes/gitea/fix")
		return git("rev-parse", "refs/remotes/gitea/fix")
	}

	// First run: a branch of one commit on main, and one pull request.
	out := remediate("created " + srv.URL + owner + "/" + name + "/pulls/1")
	if !strings.Contains(out, "== hugetlb-cma-on-gpu in fleet gpu-training: proven") {
		t.Errorf("output:\n%s", out)
	}
	main := git("rev-parse", "main")
	h := head()
	if got := git("log", "-1", "--format=%P|%ae|%ce", h); got != main+"|fleetaudit@users.noreply.github.com|fleetaudit@users.noreply.github.com" {
		t.Errorf("branch commit parent|author|committer = %s", got)
	}
	if got := git("log", "-1", "--format=%B", h); !strings.Contains(got, "Fleetaudit-Fingerprint: ") {
		t.Errorf("commit message lacks the trailer:\n%s", got)
	}
	if got := git("diff", "--name-only", main, h); got != dropIn {
		t.Errorf("the commit changes %q, want only %s", got, dropIn)
	}
	if got := git("show", h+":"+dropIn); !strings.Contains(got, `hugetlb_cma=0`) {
		t.Errorf("%s on the branch:\n%s", dropIn, got)
	}
	var br struct {
		Name   string `json:"name"`
		Commit struct {
			ID string `json:"id"`
		} `json:"commit"`
	}
	if _, err := srv.API(ctx, "GET", repoAPI+"/branches/"+branch, nil, &br); err != nil || br.Commit.ID != h {
		t.Errorf("Gitea's branch %s: %+v, %v; want commit %s", branch, br, err, h)
	}
	prs := pulls()
	if len(prs) != 1 {
		t.Fatalf("%d pull requests, want 1: %+v", len(prs), prs)
	}
	pr := prs[0]
	if pr.State != "open" || pr.Head.Ref != branch || pr.Base.Ref != "main" || pr.Head.SHA != h || pr.Title == "" {
		t.Errorf("pull request: %+v", pr)
	}
	for _, want := range []string{
		"## hugetlb-cma-on-gpu in fleet gpu-training",
		"**Finding** (critical): hugetlb_cma=6G on the configured kernel command line",
		"**Evidence**", "layers/base/etc/default/grub.d/60-hugetlb.cfg",
		"**Fix**: boot-param: set hugetlb_cma=0",
		"**Placement**: layer gpu is the last layer of gpu-training's stack",
		"- `" + dropIn + "`",
		"**Blast radius**: fleets whose rendered files change: gpu-training",
		"**Gate proof** (`HEAD` at " + main[:12],
		"- resolved in gpu-training: hugetlb-cma-on-gpu",
		"- introduced in any fleet: nothing",
		"**Rollback**: revert this pull request's commit",
		"<!-- fleetaudit-fingerprint: ",
	} {
		if !strings.Contains(pr.Body, want) {
			t.Errorf("pull request body lacks %q:\n%s", want, pr.Body)
		}
	}

	t.Run("rerun: nothing pushed, no second pull request", func(t *testing.T) {
		remediate("unchanged")
		if got := head(); got != h {
			t.Errorf("branch moved from %s to %s", h, got)
		}
		if n := len(pulls()); n != 1 {
			t.Errorf("%d pull requests, want 1", n)
		}
	})

	t.Run("at the cap of open pull requests its own is still kept up to date", func(t *testing.T) {
		// Counting the open ones (GET /pulls?state=open) finds #1; it is
		// fleetaudit's own, so the cap holds no update back.
		remediate("unchanged", "--max-open-prs", "1")
	})

	t.Run("changed fix: own branch rewritten on the new main, pull request edited", func(t *testing.T) {
		// Someone adds the drop-in with another parameter: the fix now edits it.
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, dropIn)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, dropIn), []byte("GRUB_CMDLINE_LINUX_DEFAULT=\"$GRUB_CMDLINE_LINUX_DEFAULT iommu=pt\"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		git("add", "-A")
		git("commit", "-q", "-m", "iommu=pt for the gpu layer")
		git("push", "-q", cloneURL, "main:refs/heads/main")
		main := git("rev-parse", "main")
		remediate("updated " + srv.URL + owner + "/" + name + "/pulls/1 (the fix changed; branch recreated on main " + main[:12] + ")")
		h = head()
		if got := git("log", "-1", "--format=%P", h); got != main {
			t.Errorf("branch parent %s, want the new main %s", got, main)
		}
		if got := git("show", h+":"+dropIn); !strings.Contains(got, "iommu=pt") || !strings.Contains(got, "hugetlb_cma=0") {
			t.Errorf("%s on the branch:\n%s", dropIn, got)
		}
		// The pull request's head follows the push in Gitea's queue.
		srv.WaitFor(t, "pull request #1's head moves to "+h, func() bool {
			prs := pulls()
			return len(prs) == 1 && prs[0].Head.SHA == h
		})
		if prs := pulls(); !strings.Contains(prs[0].Body, "at "+main[:12]) {
			t.Errorf("pull request body does not name the new base %s:\n%s", main[:12], prs[0].Body)
		}
	})

	t.Run("a person's commit on the branch: left alone", func(t *testing.T) {
		git("checkout", "-q", "-b", "tune", "refs/remotes/gitea/fix")
		if err := os.WriteFile(filepath.Join(dir, dropIn), []byte("# tuned by hand\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		git("commit", "-q", "-am", "tune by hand")
		git("push", "-q", cloneURL, "tune:refs/heads/"+branch)
		theirs := git("rev-parse", "tune")
		git("checkout", "-q", "main")
		remediate("skipped-human-commit")
		if got := head(); got != theirs {
			t.Errorf("branch at %s, want the person's commit %s", got, theirs)
		}
	})

	t.Run("a pull request closed unmerged: not reopened", func(t *testing.T) {
		if _, err := srv.API(ctx, "PATCH", repoAPI+"/pulls/1", map[string]any{"state": "closed"}, nil); err != nil {
			t.Fatal(err)
		}
		out := remediate("skipped-closed")
		if !strings.Contains(out, "To ask for this fix again, delete the branch "+branch) {
			t.Errorf("output does not say how to ask again:\n%s", out)
		}
		prs := pulls()
		if len(prs) != 1 || prs[0].State != "closed" {
			t.Errorf("pull requests: %+v", prs)
		}
	})

	t.Run("deleting the branch asks again", func(t *testing.T) {
		if _, err := srv.API(ctx, "DELETE", repoAPI+"/branches/"+branch, nil, nil); err != nil {
			t.Fatal(err)
		}
		remediate("created " + srv.URL + owner + "/" + name + "/pulls/2")
		prs := pulls()
		if len(prs) != 2 {
			t.Errorf("%d pull requests, want the closed #1 and a new #2", len(prs))
		}
		// Nothing after this depends on #2's state: Gitea closes the pull
		// requests of a deleted branch from its queue, which can run after
		// #2 was opened on the recreated branch.
	})
}
