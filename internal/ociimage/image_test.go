package ociimage

import (
	"archive/tar"
	"context"
	"debug/elf"
	"errors"
	"github.com/fleetaudit/fleetaudit/internal/testpeer"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/fleetaudit/fleetaudit/internal/release"
)

// TestImageRunsTheBinaryAsNonRootWithNoShell builds the image of this
// machine's architecture from a real release build, reads the OCI layout
// back, inspects the config and the layer, extracts the rootfs and runs the
// binary in it (chrooted as the image's user when the test runs as root,
// as CI does).
func TestImageRunsTheBinaryAsNonRootWithNoShell(t *testing.T) {
	if testing.Short() {
		t.Skip("builds fleetaudit")
	}
	if runtime.GOOS != "linux" {
		t.Skip("the image is a linux image: its binary runs on linux only")
	}
	root, _ := filepath.Abs(filepath.Join("..", ".."))
	created := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	host := release.Target{OS: "linux", Arch: runtime.GOARCH}
	unlock := testpeer.LockGoBuild(t) // the release test builds the same
	arts, err := release.Build(context.Background(), release.Options{
		Module: root, Main: "./cmd/fleetaudit", Dir: t.TempDir(), Targets: []release.Target{host},
		Stamp: release.Stamp{Version: "v9.8.7", Commit: "0123456789abcdef0123456789abcdef01234567", Date: created},
	})
	unlock()
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Binaries: map[string]string{host.String(): arts[0].Path}, Version: "v9.8.7", Revision: "0123456789abcdef0123456789abcdef01234567", Created: created}
	idx, err := Build(opts)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "layout")
	const ref = "ghcr.io/fleetaudit/fleetaudit:v9.8.7"
	if err := WriteLayout(dir, idx, ref); err != nil {
		t.Fatal(err)
	}

	// The layout as a registry client reads it.
	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	topManifest, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(topManifest.Manifests) != 1 || topManifest.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != ref ||
		topManifest.Manifests[0].MediaType != types.OCIImageIndex {
		t.Fatalf("layout index.json: %+v", topManifest.Manifests)
	}
	inner, err := top.ImageIndex(topManifest.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := inner.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].Platform == nil || im.Manifests[0].Platform.String() != host.String() {
		t.Fatalf("image index manifests: %+v", im.Manifests)
	}
	img, err := inner.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	if mt, _ := img.MediaType(); mt != types.OCIManifestSchema1 {
		t.Errorf("manifest media type %s", mt)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cf.Config.Entrypoint, []string{"/fleetaudit"}) || len(cf.Config.Cmd) != 0 {
		t.Errorf("entrypoint %q cmd %q, want [/fleetaudit] and no cmd", cf.Config.Entrypoint, cf.Config.Cmd)
	}
	if cf.Config.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532", cf.Config.User)
	}
	if cf.OS != "linux" || cf.Architecture != runtime.GOARCH || !cf.Created.Time.Equal(created) {
		t.Errorf("config platform %s/%s created %v", cf.OS, cf.Architecture, cf.Created)
	}
	if cf.Config.Labels["org.opencontainers.image.version"] != "v9.8.7" {
		t.Errorf("labels %v", cf.Config.Labels)
	}

	// One layer: exactly these files, root's, dated at the commit.
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %d, %v", len(layers), err)
	}
	if mt, _ := layers[0].MediaType(); mt != types.OCILayer {
		t.Errorf("layer media type %s", mt)
	}
	rootfs := t.TempDir()
	var names []string
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(created) {
			t.Errorf("%s: owner %d:%d mtime %v", h.Name, h.Uid, h.Gid, h.ModTime)
		}
		p := filepath.Join(rootfs, filepath.FromSlash(h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			if h.Name == "tmp" && h.Mode != 0o1777 {
				t.Errorf("/tmp mode %o, want 1777 (the non-root user writes there)", h.Mode)
			}
		case tar.TypeReg:
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, data, os.FileMode(h.Mode).Perm()); err != nil {
				t.Fatal(err)
			}
		default:
			t.Errorf("%s: tar type %c, want files and directories only", h.Name, h.Typeflag)
		}
	}
	want := []string{"etc", "etc/group", "etc/passwd", "fleetaudit", "tmp"}
	if !slices.Equal(names, want) {
		t.Errorf("rootfs holds %q, want %q (no shell, no libc)", names, want)
	}
	passwd, _ := os.ReadFile(filepath.Join(rootfs, "etc", "passwd"))
	if !strings.Contains(string(passwd), "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd has no user 65532:\n%s", passwd)
	}

	// Static: no program interpreter (dynamic loader) to find in the image.
	f, err := elf.Open(filepath.Join(rootfs, "fleetaudit"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary asks for a dynamic loader; the image has none")
		}
	}
	f.Close()

	cmd := exec.Command(filepath.Join(rootfs, "fleetaudit"), "version")
	shell := exec.Command("/bin/sh", "-c", "true")
	if os.Geteuid() == 0 {
		// The container's view: / is the rootfs, the process is the
		// image's user.
		attr := func() *syscall.SysProcAttr {
			return &syscall.SysProcAttr{Chroot: rootfs, Credential: &syscall.Credential{Uid: UID, Gid: GID}}
		}
		cmd = exec.Command("/fleetaudit", "version")
		cmd.SysProcAttr, cmd.Dir = attr(), "/tmp"
		shell.SysProcAttr = attr()
		if err := shell.Run(); err == nil {
			t.Error("/bin/sh ran inside the image's rootfs")
		}
	} else if testpeer.Required() {
		t.Error("CI runs as root: the binary must be run chrooted in the rootfs as the image's user")
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("fleetaudit version in the rootfs: %v\n%s", err, out)
	}
	if !strings.HasPrefix(string(out), "fleetaudit v9.8.7\n") || !strings.Contains(string(out), "platform: "+host.String()) {
		t.Errorf("fleetaudit version in the rootfs:\n%s", out)
	}

	// Rebuilt from the same binary and date: the same digest.
	again, err := Build(opts)
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := idx.Digest()
	d2, _ := again.Digest()
	if d1 != d2 {
		t.Errorf("two builds of the image differ: %s, %s", d1, d2)
	}
}

func TestBuildRefusesNonLinuxPlatformsAndMissingBinaries(t *testing.T) {
	for name, bins := range map[string]map[string]string{
		"darwin":  {"darwin/arm64": "/dev/null"},
		"missing": {"linux/amd64": filepath.Join(t.TempDir(), "nope")},
		"none":    {},
	} {
		if _, err := Build(Options{Binaries: bins, Created: time.Unix(1, 0)}); err == nil {
			t.Errorf("%s: Build succeeded", name)
		}
	}
}
