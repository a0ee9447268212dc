package remediate

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// gitOut runs git in repo with no user or system config and returns its
// trimmed output.
func gitOut(ctx context.Context, repo string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", repo}, args...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "LANG=C", "LC_ALL=C"}
	cmd.WaitDelay = 5 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s: git %s: %w: %s", repo, args[0], err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// repoPrefix is the config repo's directory inside its git repository
// ("layers/..." paths become "<prefix>layers/..." there), "" at the top.
func repoPrefix(ctx context.Context, repo string) (string, error) {
	return gitOut(ctx, repo, "rev-parse", "--show-prefix")
}

// baseBranch is the branch ref names, which a pull request can target:
// "main" for main, refs/heads/main, origin/main, or HEAD on main; "" for
// a detached HEAD, a commit or a tag.
func baseBranch(ctx context.Context, repo, ref string) string {
	if strings.HasPrefix(ref, "-") {
		return "" // not an option; rev-parse echoes --end-of-options here
	}
	full, err := gitOut(ctx, repo, "rev-parse", "--symbolic-full-name", ref)
	if err != nil {
		return ""
	}
	if b, ok := strings.CutPrefix(full, "refs/heads/"); ok {
		return b
	}
	if r, ok := strings.CutPrefix(full, "refs/remotes/"); ok {
		if _, b, ok := strings.Cut(r, "/"); ok && b != "HEAD" {
			return b
		}
	}
	return ""
}
