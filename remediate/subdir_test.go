package remediate

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/fleetaudit/fleetaudit/configrepo"
	"github.com/fleetaudit/fleetaudit/internal/gittest"
)

// A config repo in a subdirectory of its git repository: the proposal's
// files and diff name paths from the repository's top, so the pull
// request writes them where the config repo is and git apply, run at the
// top or in the directory, applies the diff (a diff relative to the
// directory would be ignored there without an error).
func TestPlanConfigRepoInSubdirectory(t *testing.T) {
	top := cmaRepo(t, twoFleets)
	// Move everything under fleet/ in a second commit.
	sub := filepath.Join(top.Dir, "fleet")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{configrepo.ManifestFile, "baselines", "layers"} {
		top.Git("mv", name, "fleet/"+name)
	}
	top.Commit("config repo under fleet/")
	p, err := MakePlan(context.Background(), Options{Repo: sub, Rule: ruleCMA, Fleets: testFleets(t)})
	if err != nil {
		t.Fatal(err)
	}
	prop := proposal(t, onlyGroup(t, p))
	want := "fleet/" + fixCMAPath
	if len(prop.Files) != 1 || prop.Files[0].Path != want {
		t.Fatalf("files %+v, want %s", prop.Files, want)
	}
	if prop.Base != "main" {
		t.Errorf("base %q, want main (HEAD is on main)", prop.Base)
	}
	patch := filepath.Join(t.TempDir(), "fix.patch")
	if err := os.WriteFile(patch, []byte(prop.Diff), 0o644); err != nil {
		t.Fatal(err)
	}
	inSub := &gittest.Repo{T: t, Dir: sub}
	inSub.Git("apply", patch)
	if got := top.Read(want); got != string(prop.Files[0].Content) {
		t.Errorf("%s after git apply in fleet/:\n%s", want, got)
	}
}

// The pull request's base is the branch the proven ref names, or none (the
// repository's default branch) for a detached HEAD or a commit.
func TestPlanBaseBranch(t *testing.T) {
	r := cmaRepo(t, twoFleets)
	head := r.Git("rev-parse", "HEAD")
	r.Git("update-ref", "refs/remotes/origin/release", head)
	for ref, want := range map[string]string{"HEAD": "main", "main": "main", "origin/release": "release", head: "", "HEAD~0": ""} {
		if got := baseBranch(context.Background(), r.Dir, ref); got != want {
			t.Errorf("--base %s: branch %q, want %q", ref, got, want)
		}
	}
	r.Git("checkout", "-q", "--detach")
	if got := baseBranch(context.Background(), r.Dir, "HEAD"); got != "" {
		t.Errorf("detached HEAD: branch %q, want none", got)
	}
}
