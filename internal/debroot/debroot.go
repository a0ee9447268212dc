// Package debroot builds file trees from real Debian packages for tests:
// each package is fetched by name with apt-get download into a cache
// outside the repository and unpacked with dpkg -x, so a collector reads
// the files exactly as the package ships them.
package debroot

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// CacheDir is where downloaded .deb files are kept between runs:
// $FLEETAUDIT_DEB_CACHE, else $HOME/.cache/fleetaudit/debs.
func CacheDir() (string, error) {
	if d := os.Getenv("FLEETAUDIT_DEB_CACHE"); d != "" {
		return d, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("debroot: no cache directory: %w", err)
	}
	return filepath.Join(home, ".cache", "fleetaudit", "debs"), nil
}

// Package is one downloaded package.
type Package struct {
	Name    string
	Version string // as dpkg-deb reports it, e.g. "0.36.2-1"
	Deb     string // path of the .deb in the cache
}

// one download at a time: apt-get locks its lists.
var mu sync.Mutex

// Fetch returns the cached .deb of name, downloading it with apt-get
// download when the cache has none (running apt-get update once if the
// first download fails, as on a machine whose lists were never fetched).
func Fetch(name string) (Package, error) {
	mu.Lock()
	defer mu.Unlock()
	dir, err := CacheDir()
	if err != nil {
		return Package{}, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Package{}, fmt.Errorf("debroot: %w", err)
	}
	deb, err := cached(dir, name)
	if err != nil {
		return Package{}, err
	}
	if deb == "" {
		if deb, err = download(dir, name); err != nil {
			return Package{}, err
		}
	}
	out, err := run(dir, "dpkg-deb", "-f", deb, "Version")
	if err != nil {
		return Package{}, fmt.Errorf("debroot: version of %s: %w", deb, err)
	}
	return Package{Name: name, Version: strings.TrimSpace(out), Deb: deb}, nil
}

// download fetches name's .deb into dir: apt-get download in a directory
// of its own, renamed into place, so that test processes fetching the same
// package at once never see a partial file.
func download(dir, name string) (string, error) {
	tmp, err := os.MkdirTemp(dir, ".download-")
	if err != nil {
		return "", fmt.Errorf("debroot: %w", err)
	}
	defer os.RemoveAll(tmp)
	if _, err := run(tmp, "apt-get", "download", name); err != nil {
		if _, uerr := run(tmp, "apt-get", "update", "-qq"); uerr != nil {
			return "", fmt.Errorf("debroot: download %s: %v; apt-get update: %w", name, err, uerr)
		}
		if _, err := run(tmp, "apt-get", "download", name); err != nil {
			return "", fmt.Errorf("debroot: download %s: %w", name, err)
		}
	}
	got, err := cached(tmp, name)
	if err != nil || got == "" {
		return "", fmt.Errorf("debroot: apt-get download %s left no %s_*.deb (%v)", name, name, err)
	}
	deb := filepath.Join(dir, filepath.Base(got))
	if err := os.Rename(got, deb); err != nil {
		return "", fmt.Errorf("debroot: %w", err)
	}
	return deb, nil
}

// cached is the last-named .deb of name in dir, "" when there is none.
func cached(dir, name string) (string, error) {
	m, err := filepath.Glob(filepath.Join(dir, name+"_*.deb"))
	if err != nil || len(m) == 0 {
		return "", err
	}
	return m[len(m)-1], nil
}

// Extract unpacks deb under root as dpkg installs it (dpkg -x).
func Extract(deb, root string) error {
	if _, err := run("", "dpkg", "-x", deb, root); err != nil {
		return fmt.Errorf("debroot: unpack %s: %w", deb, err)
	}
	return nil
}

// Unpack fetches the named packages and unpacks them all under root.
func Unpack(root string, names ...string) ([]Package, error) {
	var pkgs []Package
	for _, name := range names {
		p, err := Fetch(name)
		if err != nil {
			return pkgs, err
		}
		if err := Extract(p.Deb, root); err != nil {
			return pkgs, err
		}
		pkgs = append(pkgs, p)
	}
	return pkgs, nil
}

// required says whether a package that cannot be fetched fails the test:
// under CI=true the real-package tests must run.
func required() bool { return os.Getenv("CI") == "true" }

// Root is a temporary root holding the named packages' files, and the
// packages read. When a package cannot be fetched the test fails under
// CI=true and is skipped elsewhere, saying why.
func Root(t testing.TB, names ...string) (string, []Package) {
	t.Helper()
	root := t.TempDir()
	pkgs, err := Unpack(root, names...)
	if err != nil {
		if required() {
			t.Fatalf("real package: %v", err)
		}
		t.Skipf("real package not available here (CI=true makes this fail): %v", err)
	}
	return root, pkgs
}

// Files are the contents of the files of package name whose paths (from
// the package root, without a leading slash) match one of patterns
// (filepath.Match), keyed by path: fuzz seeds. When the package cannot be
// fetched the test fails under CI=true; elsewhere it says so and gets
// none, so a fuzz target keeps its other seeds.
func Files(tb testing.TB, name string, patterns ...string) map[string][]byte {
	tb.Helper()
	root := tb.TempDir()
	if _, err := Unpack(root, name); err != nil {
		if required() {
			tb.Fatalf("real package: %v", err)
		}
		tb.Logf("real package %s not available here, its files are not seeds (CI=true makes this fail): %v", name, err)
		return nil
	}
	out := map[string][]byte{}
	for _, pat := range patterns {
		m, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(pat)))
		if err != nil {
			tb.Fatalf("pattern %q: %v", pat, err)
		}
		for _, file := range m {
			data, err := os.ReadFile(file)
			if err != nil {
				tb.Fatal(err)
			}
			rel, _ := filepath.Rel(root, file)
			out[filepath.ToSlash(rel)] = data
		}
	}
	if len(out) == 0 {
		tb.Fatalf("package %s has no file matching %q", name, patterns)
	}
	return out
}

func run(dir, name string, args ...string) (string, error) {
	if _, err := exec.LookPath(name); err != nil {
		return "", fmt.Errorf("%s not installed: %w", name, err)
	}
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}
