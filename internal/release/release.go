// Package release builds fleetaudit's release binaries: static, stamped with
// the version, commit and commit date, and reproducible (the same commit and
// Go toolchain give the same bytes), with a SHA256SUMS file over them.
package release

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Target is one platform a release is built for.
type Target struct{ OS, Arch string }

func (t Target) String() string { return t.OS + "/" + t.Arch }

// DefaultTargets are the platforms make release builds.
var DefaultTargets = []Target{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "arm64"}}

// ParseTarget reads "os/arch".
func ParseTarget(s string) (Target, error) {
	goos, arch, ok := strings.Cut(s, "/")
	if !ok || goos == "" || arch == "" || strings.ContainsAny(arch, "/ ") {
		return Target{}, fmt.Errorf("target %q: want os/arch, e.g. linux/amd64", s)
	}
	return Target{goos, arch}, nil
}

// Stamp is what a release binary carries about itself.
type Stamp struct {
	Version, Commit string
	// Date is the commit's date: a build time would make every build differ.
	Date time.Time
}

// Options say what to build and where.
type Options struct {
	// Module is the module root (holding go.mod), Main the main package in
	// it, e.g. "./cmd/fleetaudit".
	Module, Main string
	// Dir receives the binaries, named fleetaudit-OS-ARCH.
	Dir     string
	Targets []Target
	Stamp   Stamp
	// Go is the go command (default "go"); Log receives the build's output.
	Go  string
	Log io.Writer
}

// Artifact is one file of a release.
type Artifact struct {
	Target Target
	Path   string
}

// BinaryName is the file name of target's binary.
func BinaryName(t Target) string { return "fleetaudit-" + t.OS + "-" + t.Arch }

// LDFlags are the linker flags that stamp s: -s -w and an empty build id
// keep the bytes independent of the machine and the build directory.
func LDFlags(s Stamp) string {
	return fmt.Sprintf("-s -w -buildid= -X main.version=%s -X main.commit=%s -X main.date=%s",
		s.Version, s.Commit, s.Date.UTC().Format(time.RFC3339))
}

// Build cross-compiles opts.Main for each target, one at a time (the Go
// build is already parallel), and sets each binary's mtime to the stamp's
// date.
func Build(ctx context.Context, opts Options) ([]Artifact, error) {
	if err := checkStamp(opts.Stamp); err != nil {
		return nil, err
	}
	goCmd := opts.Go
	if goCmd == "" {
		goCmd = "go"
	}
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("release dir: %w", err)
	}
	var out []Artifact
	for _, t := range opts.Targets {
		dst, err := filepath.Abs(filepath.Join(opts.Dir, BinaryName(t)))
		if err != nil {
			return nil, err
		}
		cmd := exec.CommandContext(ctx, goCmd, "build", "-trimpath", "-buildvcs=false",
			"-ldflags", LDFlags(opts.Stamp), "-o", dst, opts.Main)
		cmd.Dir = opts.Module
		cmd.Env = BuildEnv(os.Environ(), t)
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("building %s for %s: %w", opts.Main, t, err)
		}
		if err := os.Chtimes(dst, opts.Stamp.Date, opts.Stamp.Date); err != nil {
			return nil, err
		}
		out = append(out, Artifact{Target: t, Path: dst})
	}
	return out, nil
}

// BuildEnv is env for a static build of t: cgo off, the architecture levels
// pinned to the defaults, and nothing of the caller's GOFLAGS (-race, tags,
// -mod=vendor) that would change the binary.
func BuildEnv(env []string, t Target) []string {
	env = slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "CGO_ENABLED", "GOOS", "GOARCH", "GOFLAGS", "GOAMD64", "GOARM64", "GOEXPERIMENT":
			return true
		}
		return false
	})
	return append(env, "CGO_ENABLED=0", "GOOS="+t.OS, "GOARCH="+t.Arch, "GOAMD64=v1", "GOARM64=v8.0")
}

func checkStamp(s Stamp) error {
	for name, v := range map[string]string{"version": s.Version, "commit": s.Commit} {
		if v == "" || strings.ContainsAny(v, " \t\n'\"") {
			return fmt.Errorf("release %s %q: want one word", name, v)
		}
	}
	if s.Date.IsZero() {
		return errors.New("release date: not set (the commit's date, e.g. git log -1 --format=%cI)")
	}
	return nil
}

// SumsFile is the name of the checksum file, in sha256sum's format.
const SumsFile = "SHA256SUMS"

// WriteSums writes dir/SHA256SUMS over files (names in dir), sorted by name,
// as sha256sum --check reads it.
func WriteSums(dir string, files []string, mtime time.Time) error {
	names := slices.Sorted(slices.Values(files))
	var b bytes.Buffer
	for _, name := range names {
		sum, err := fileSHA256(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s  %s\n", sum, name)
	}
	p := filepath.Join(dir, SumsFile)
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		return err
	}
	return os.Chtimes(p, mtime, mtime)
}

// VerifySums checks every line of dir/SHA256SUMS against the file it names
// and returns the names checked.
func VerifySums(dir string) ([]string, error) {
	f, err := os.Open(filepath.Join(dir, SumsFile))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var names []string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		want, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok || len(want) != 64 || name == "" || name != filepath.Base(name) {
			return nil, fmt.Errorf("%s:%d: want \"<sha256>  <file name>\"", SumsFile, n)
		}
		got, err := fileSHA256(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", SumsFile, n, err)
		}
		if got != want {
			return nil, fmt.Errorf("%s:%d: %s has sha256 %s, the file lists %s", SumsFile, n, name, got, want)
		}
		names = append(names, name)
	}
	return names, sc.Err()
}

func fileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("%s: %w", p, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// SBOMName is the file name of target's CycloneDX SBOM.
func SBOMName(t Target) string { return BinaryName(t) + ".cdx.json" }

// SBOM writes a CycloneDX JSON SBOM of each binary with cyclonedx-gomod
// (tool: its path) in its bin mode: the modules and Go standard library the
// binary was linked from, as its build info records them, and its hashes.
// Reading the binary, not the source tree, needs no git (cyclonedx-gomod's
// app mode fails in a git worktree) and describes exactly what ships; no
// serial number or timestamp, so it is reproducible too.
func SBOM(ctx context.Context, tool string, version string, bins []Artifact, date time.Time) ([]Artifact, error) {
	var out []Artifact
	for _, b := range bins {
		dst := filepath.Join(filepath.Dir(b.Path), SBOMName(b.Target))
		cmd := exec.CommandContext(ctx, tool, "bin", "-json", "-std", "-noserial", "-notimestamp",
			"-version", version, "-output", dst, b.Path)
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = io.Discard, &stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("SBOM of %s with %s: %w: %s", b.Path, tool, err, lastLines(stderr.String(), 10))
		}
		if err := os.Chtimes(dst, date, date); err != nil {
			return nil, err
		}
		out = append(out, Artifact{Target: b.Target, Path: dst})
	}
	return out, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
