package disttest

import (
	"fmt"
	"github.com/fleetaudit/fleetaudit/internal/testpeer"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetaudit/fleetaudit/internal/gittest"
)

// requireTool finds a tool the test runs; CI (CI=true) installs them all,
// so there a missing one fails instead of skipping.
func requireTool(t *testing.T, name, install string) string {
	t.Helper()
	return testpeer.Find(t, fmt.Sprintf("%s is not installed (%s); .ci/run installs it", name, install),
		name, filepath.Join(os.Getenv("HOME"), ".cache", "fleetaudit", "bin", name))
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestPreCommitHookBlocksTheIncident runs the fleetaudit-gate hook from this
// repository with pre-commit try-repo (pre-commit builds it with go install,
// as it will for users) on a scratch config repo: the hugetlb_cma change
// staged in the shared layer is blocked, a harmless staged change passes.
func TestPreCommitHookBlocksTheIncident(t *testing.T) {
	if testing.Short() {
		t.Skip("pre-commit builds fleetaudit")
	}
	gittest.Require(t)
	preCommit := requireTool(t, "pre-commit", "apt-get install pre-commit")
	root := moduleRoot(t)
	repo := gittest.New(t)
	copyTree(t, filepath.Join(root, "examples", "config-repo"), repo.Dir)
	repo.Commit("fleet configuration")

	goEnv := func(k string) string {
		out, err := exec.Command("go", "env", k).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", k, err)
		}
		return strings.TrimSpace(string(out))
	}
	env := append(os.Environ(),
		"PRE_COMMIT_HOME="+t.TempDir(),
		// pre-commit builds in a GOPATH of its own: share the module and
		// build caches instead of downloading and compiling everything again.
		// -trimpath keeps the clone's temporary path out of the cache keys;
		// with cgo off too, the packages are those the release and image
		// tests compile (release.BuildEnv), compiled once for all three.
		"GOMODCACHE="+goEnv("GOMODCACHE"), "GOCACHE="+goEnv("GOCACHE"), "GOFLAGS=-trimpath -buildvcs=false", "CGO_ENABLED=0",
		"GIT_AUTHOR_NAME=fleetaudit", "GIT_AUTHOR_EMAIL=ci@fleetaudit.invalid",
		"GIT_COMMITTER_NAME=fleetaudit", "GIT_COMMITTER_EMAIL=ci@fleetaudit.invalid",
	)
	try := func() (int, string) {
		cmd := exec.Command(preCommit, "try-repo", root, "fleetaudit-gate", "--verbose", "--color", "never")
		cmd.Dir = repo.Dir
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		} else if err != nil {
			t.Fatalf("pre-commit: %v\n%s", err, out)
		}
		return 0, string(out)
	}

	// The incident, staged. The first try builds the hook.
	repo.Write("layers/base/etc/default/grub.d/60-hugetlb.cfg",
		"# Reserve CMA for 1G hugepages on the web servers.\nGRUB_CMDLINE_LINUX_DEFAULT=\"$GRUB_CMDLINE_LINUX_DEFAULT hugetlb_cma=6G\"\n")
	repo.Git("add", "-A")
	unlock := testpeer.LockGoBuild(t)
	code, out := try()
	unlock()
	if code == 0 || !strings.Contains(out, "hugetlb-cma-on-gpu") || !strings.Contains(out, "Failed") {
		t.Fatalf("the staged incident was not blocked: exit %d\n%s", code, out)
	}

	// A harmless change, staged, with the incident still in the work tree
	// but not staged: what the commit records is clean, so it passes.
	repo.Git("reset", "-q")
	repo.Write("README.md", repo.Read("README.md")+"\nOwned by the platform team.\n")
	repo.Git("add", "README.md")
	code, out = try()
	if code != 0 || !strings.Contains(out, "Passed") || !strings.Contains(out, "0 introduced") {
		t.Fatalf("a clean staged change was blocked: exit %d\n%s", code, out)
	}
	t.Logf("pre-commit try-repo on the clean change:\n%s", out)
}

func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
}
