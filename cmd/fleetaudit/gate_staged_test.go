package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const hugetlbFile = "layers/base/etc/default/grub.d/60-hugetlb.cfg"

// TestGateStagedReadsTheIndexOnly: --staged gates what git commit would
// record. The incident staged is stopped whatever the work tree holds; the
// incident only in the work tree (untracked, or its staged copy edited
// away) is not what the commit would record and passes.
func TestGateStagedReadsTheIndexOnly(t *testing.T) {
	dir, _ := exampleRepo(t)
	gate := func(env map[string]string, extra ...string) result {
		return runCLI(t, env, append([]string{"gate", "--repo", dir, "--base", "HEAD", "--staged"}, extra...)...)
	}

	// In the work tree, not staged: the commit would not hold it.
	plantHugetlbCMA(t, dir)
	if r := gate(nil); r.code != exitOK || !strings.Contains(r.stdout, "0 introduced") {
		t.Fatalf("unstaged incident: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// Staged: stopped, cited at the staged file.
	gitIn(t, dir, "add", hugetlbFile)
	r := gate(nil)
	if r.code != exitFindings || !strings.Contains(r.stdout, "hugetlb-cma-on-gpu") || !strings.Contains(r.stdout, hugetlbFile) {
		t.Fatalf("staged incident: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "-> index") {
		t.Errorf("the report does not say the head is the index:\n%s", r.stdout)
	}
	// Staged, then removed from the work tree without staging that: still
	// what the commit records.
	if err := os.Remove(filepath.Join(dir, hugetlbFile)); err != nil {
		t.Fatal(err)
	}
	if r := gate(nil); r.code != exitFindings {
		t.Fatalf("staged incident deleted in the work tree: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// git commit PATH runs its hooks with a temporary index in
	// GIT_INDEX_FILE: that index is the one read, relative paths included.
	gitIn(t, dir, "rm", "-q", "--cached", hugetlbFile)
	alt := filepath.Join(t.TempDir(), "next-index")
	data, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alt, data, 0o644); err != nil {
		t.Fatal(err)
	}
	plantHugetlbCMA(t, dir)
	addAlt := runGit(t, dir, []string{"GIT_INDEX_FILE=" + alt}, "add", hugetlbFile)
	if addAlt != nil {
		t.Fatal(addAlt)
	}
	if r := gate(nil); r.code != exitOK {
		t.Fatalf("own index without the incident: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := gate(map[string]string{"GIT_INDEX_FILE": alt}); r.code != exitFindings {
		t.Fatalf("GIT_INDEX_FILE with the incident: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	if r := gate(nil, "--head", "HEAD"); r.code != exitError || !strings.Contains(r.stderr, "--staged and --head") {
		t.Errorf("--staged with --head: exit %d\n%s", r.code, r.stderr)
	}
}

// TestGateStagedRefusesAnUnmergedIndex: a conflict has no single staged
// version to gate.
func TestGateStagedRefusesAnUnmergedIndex(t *testing.T) {
	dir, _ := exampleRepo(t)
	gitIn(t, dir, "checkout", "-q", "-b", "other")
	os.WriteFile(filepath.Join(dir, "inventory.yaml"), []byte("# other\n"), 0o644)
	gitIn(t, dir, "commit", "-q", "-am", "other")
	gitIn(t, dir, "checkout", "-q", "main")
	os.WriteFile(filepath.Join(dir, "inventory.yaml"), []byte("# main\n"), 0o644)
	gitIn(t, dir, "commit", "-q", "-am", "main")
	runGit(t, dir, nil, "merge", "-q", "other") // conflicts, by design
	r := runCLI(t, nil, "gate", "--repo", dir, "--base", "HEAD", "--staged")
	if r.code != exitError || !strings.Contains(r.stderr, "inventory.yaml is unmerged") {
		t.Errorf("unmerged index: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// runGit is gitIn with env added and the failure returned, for git commands
// that are meant to fail (a merge with conflicts).
func runGit(t *testing.T, dir string, env []string, args ...string) error {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=fleetaudit", "-c", "user.email=ci@fleetaudit.invalid", "-c", "commit.gpgsign=false"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}
