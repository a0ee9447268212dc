package release

import (
	"context"
	"encoding/json"
	"github.com/fleetaudit/fleetaudit/internal/testpeer"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// moduleRoot is the repository root, two levels up from this package.
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestReleaseBinaryRunsAndSumsMatch builds the host platform's release
// binary as make release does (the other targets only cross-compile the
// same way), runs its version command and checks SHA256SUMS against it.
func TestReleaseBinaryRunsAndSumsMatch(t *testing.T) {
	if testing.Short() {
		t.Skip("builds fleetaudit")
	}
	dir := t.TempDir()
	host := Target{runtime.GOOS, runtime.GOARCH}
	date := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	opts := Options{
		Module: moduleRoot(t), Main: "./cmd/fleetaudit", Dir: dir, Targets: []Target{host},
		Stamp: Stamp{Version: "v9.8.7", Commit: "0123456789abcdef0123456789abcdef01234567", Date: date},
	}
	unlock := testpeer.LockGoBuild(t)
	arts, err := Build(context.Background(), opts)
	unlock()
	if err != nil {
		t.Fatal(err)
	}
	bin := arts[0].Path
	if filepath.Base(bin) != "fleetaudit-"+runtime.GOOS+"-"+runtime.GOARCH {
		t.Errorf("binary named %s", filepath.Base(bin))
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s version: %v\n%s", bin, err, out)
	}
	for _, want := range []string{
		"fleetaudit v9.8.7\n",
		"commit:   0123456789abcdef0123456789abcdef01234567\n",
		"date:     2026-11-30T12:00:00Z\n",
		"platform: " + host.String() + "\n",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("version output lacks %q:\n%s", want, out)
		}
	}
	if fi, err := os.Stat(bin); err != nil || !fi.ModTime().Equal(date) {
		t.Errorf("binary mtime: %v, %v; want the commit date %v", fi.ModTime(), err, date)
	}

	files := []string{filepath.Base(bin)}
	if tool := sbomTool(t); tool != "" {
		boms, err := SBOM(context.Background(), tool, "v9.8.7", arts, date)
		if err != nil {
			t.Fatal(err)
		}
		checkSBOM(t, boms[0].Path, bin)
		files = append(files, filepath.Base(boms[0].Path))
	}
	if err := WriteSums(dir, files, date); err != nil {
		t.Fatal(err)
	}
	names, err := VerifySums(dir)
	if err != nil || !slices.Equal(names, files) {
		t.Fatalf("VerifySums: %v, %v", names, err)
	}
	// sha256sum reads the file as users will check a download.
	if _, err := exec.LookPath("sha256sum"); err == nil {
		cmd := exec.Command("sha256sum", "--check", "--strict", SumsFile)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("sha256sum --check: %v\n%s", err, out)
		}
	}
	// A changed byte is caught, naming the file.
	data, _ := os.ReadFile(bin)
	data[len(data)/2] ^= 1
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := VerifySums(dir); err == nil || !strings.Contains(err.Error(), filepath.Base(bin)) {
		t.Fatalf("a modified binary passed VerifySums: %v", err)
	}

	// Reproducible: the same commit built again elsewhere is the same bytes.
	opts.Dir = t.TempDir()
	again, err := Build(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 1
	second, _ := os.ReadFile(again[0].Path)
	if !slices.Equal(data, second) {
		t.Error("two builds of the same commit differ")
	}
}

func TestBuildRefusesAnUnstampedRelease(t *testing.T) {
	for _, s := range []Stamp{
		{Version: "", Commit: "abc", Date: time.Unix(1, 0)},
		{Version: "v1 ; rm", Commit: "abc", Date: time.Unix(1, 0)},
		{Version: "v1", Commit: "abc"},
	} {
		if _, err := Build(context.Background(), Options{Dir: t.TempDir(), Stamp: s, Go: "false"}); err == nil {
			t.Errorf("Build accepted stamp %+v", s)
		}
	}
}

func TestBuildEnvDropsTheCallersBuildSettings(t *testing.T) {
	env := BuildEnv([]string{"PATH=/bin", "GOFLAGS=-race", "CGO_ENABLED=1", "GOOS=windows", "GOAMD64=v3"}, Target{"linux", "arm64"})
	want := []string{"PATH=/bin", "CGO_ENABLED=0", "GOOS=linux", "GOARCH=arm64", "GOAMD64=v1", "GOARM64=v8.0"}
	if !slices.Equal(env, want) {
		t.Errorf("BuildEnv = %q, want %q", env, want)
	}
}

func TestVerifySumsRefusesPathsAndBadLines(t *testing.T) {
	for _, line := range []string{
		"zz  fleetaudit\n",
		strings.Repeat("0", 64) + "  ../etc/passwd\n",
		strings.Repeat("0", 64) + " fleetaudit\n",
	} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, SumsFile), []byte(line), 0o644)
		if _, err := VerifySums(dir); err == nil {
			t.Errorf("VerifySums accepted %q", line)
		}
	}
}

// sbomTool is cyclonedx-gomod where make tools installs it; CI requires it.
func sbomTool(t *testing.T) string {
	t.Helper()
	p := filepath.Join(os.Getenv("HOME"), ".cache", "fleetaudit", "bin", "cyclonedx-gomod")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	if testpeer.Required() {
		t.Fatalf("%s is required in CI (make tools)", p)
	}
	t.Logf("no SBOM checked: %s is not installed (make tools)", p)
	return ""
}

// checkSBOM reads the CycloneDX SBOM of bin: the main component is
// fleetaudit at the stamped version, the binary's SHA-256 is recorded, and
// the modules linked in are listed (OPA, the Go standard library).
func checkSBOM(t *testing.T, path, bin string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var bom struct {
		BOMFormat string `json:"bomFormat"`
		Metadata  struct {
			Timestamp string `json:"timestamp"`
			Component struct {
				Name, Version string
			} `json:"component"`
			Properties []struct{ Name, Value string } `json:"properties"`
		} `json:"metadata"`
		Components []struct{ Name, Version string } `json:"components"`
	}
	if err := json.Unmarshal(data, &bom); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if bom.BOMFormat != "CycloneDX" || bom.Metadata.Component.Name != "github.com/fleetaudit/fleetaudit" ||
		bom.Metadata.Component.Version != "v9.8.7" || bom.Metadata.Timestamp != "" {
		t.Errorf("SBOM metadata: %s %+v", bom.BOMFormat, bom.Metadata)
	}
	sum, _ := fileSHA256(bin)
	hashed := false
	for _, p := range bom.Metadata.Properties {
		hashed = hashed || p.Name == "cdx:gomod:binary:hash:SHA-256" && p.Value == sum
	}
	if !hashed {
		t.Errorf("SBOM does not record the binary's sha256 %s", sum)
	}
	var names []string
	for _, c := range bom.Components {
		names = append(names, c.Name)
	}
	for _, want := range []string{"github.com/open-policy-agent/opa", "std"} {
		if !slices.Contains(names, want) {
			t.Errorf("SBOM components lack %s: %q", want, names)
		}
	}
}
