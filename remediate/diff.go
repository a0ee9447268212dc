package remediate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// unifiedDiff is the change from old (the base's content of each path; a
// path missing there is a new file) to files, as git writes it: a scratch
// repo holds the base versions in its index and the new ones in its work
// tree, and git diff prints "diff --git a/... b/..." sections that git
// apply takes on the base. Git runs with no user or system config.
func unifiedDiff(ctx context.Context, old map[string][]byte, files map[string][]byte) (string, error) {
	dir, err := os.MkdirTemp("", "fleetaudit-diff-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	run := func(args ...string) ([]byte, error) {
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir,
			"-c", "core.autocrlf=false", "-c", "core.safecrlf=false", "-c", "core.attributesFile=/dev/null",
			"-c", "diff.noprefix=false", "-c", "diff.mnemonicPrefix=false", "-c", "core.quotePath=true"}, args...)...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "LANG=C", "LC_ALL=C"}
		cmd.WaitDelay = 5 * time.Second
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
		}
		return out, nil
	}
	write := func(name string, data []byte) error {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		return os.WriteFile(p, data, 0o644)
	}
	if _, err := run("init", "-q"); err != nil {
		return "", err
	}
	var added []string
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if data, ok := old[name]; ok {
			if err := write(name, data); err != nil {
				return "", err
			}
		} else {
			added = append(added, name)
		}
	}
	if _, err := run("add", "-A"); err != nil {
		return "", err
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if err := write(name, files[name]); err != nil {
			return "", err
		}
	}
	if len(added) > 0 {
		if _, err := run(append([]string{"add", "-N", "--"}, added...)...); err != nil {
			return "", err
		}
	}
	out, err := run("diff", "--no-color", "--no-ext-diff", "--no-renames", "--no-textconv")
	if err != nil {
		return "", err
	}
	return string(out), nil
}

// fingerprint identifies a change by its files' paths and contents.
func fingerprint(files map[string][]byte) string {
	h := sha256.New()
	for _, name := range slices.Sorted(maps.Keys(files)) {
		fmt.Fprintf(h, "%s\x00%d\x00", name, len(files[name]))
		h.Write(files[name])
	}
	return hex.EncodeToString(h.Sum(nil))
}
