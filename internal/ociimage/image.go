// Package ociimage builds fleetaudit's container image without a container
// daemon: one layer holding the static binary, the passwd and group entries
// of its non-root user and a /tmp, appended to an empty base. No shell, no
// libc, nothing else to run.
package ociimage

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	tarballpkg "github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	// Entrypoint is where the binary lives in the image.
	Entrypoint = "/fleetaudit"
	// UID and GID are the image's user, distroless's "nonroot".
	UID, GID = 65532, 65532
	// Source is the repository the image's labels point to.
	Source = "https://github.com/fleetaudit/fleetaudit"
)

// Options say what goes into the image.
type Options struct {
	// Binaries maps a linux platform ("linux/amd64") to its static binary.
	Binaries map[string]string
	// Version and Revision label the image; Created is the commit's date,
	// used for the config and every file so rebuilding is byte-identical.
	Version, Revision string
	Created           time.Time
}

// Build returns an OCI image index with one image per platform.
func Build(opts Options) (v1.ImageIndex, error) {
	if len(opts.Binaries) == 0 {
		return nil, fmt.Errorf("image: no binaries")
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, platform := range slices.Sorted(maps.Keys(opts.Binaries)) {
		p, err := v1.ParsePlatform(platform)
		if err != nil {
			return nil, fmt.Errorf("image platform %q: %w", platform, err)
		}
		if p.OS != "linux" {
			return nil, fmt.Errorf("image platform %q: only linux images run in a cluster", platform)
		}
		bin, err := os.ReadFile(opts.Binaries[platform])
		if err != nil {
			return nil, fmt.Errorf("image binary for %s: %w", platform, err)
		}
		img, err := Image(bin, *p, opts)
		if err != nil {
			return nil, fmt.Errorf("image for %s: %w", platform, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: p},
		})
	}
	return idx, nil
}

// Image is the image of one platform around binary.
func Image(binary []byte, p v1.Platform, opts Options) (v1.Image, error) {
	layer, err := rootfsLayer(binary, opts.Created)
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{
		Created:   v1.Time{Time: opts.Created},
		CreatedBy: "fleetaudit tools/mkimage: " + Entrypoint + ", /etc/passwd, /etc/group, /tmp",
	}})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	cf.Created = v1.Time{Time: opts.Created}
	cf.Config = v1.Config{
		Entrypoint: []string{Entrypoint},
		User:       fmt.Sprintf("%d:%d", UID, GID),
		WorkingDir: "/tmp",
		Labels: map[string]string{
			"org.opencontainers.image.title":    "fleetaudit",
			"org.opencontainers.image.source":   Source,
			"org.opencontainers.image.version":  opts.Version,
			"org.opencontainers.image.revision": opts.Revision,
			"org.opencontainers.image.created":  opts.Created.UTC().Format(time.RFC3339),
		},
	}
	return mutate.ConfigFile(img, cf)
}

// rootfsLayer is the one layer's tar: root owns everything but /tmp, whose
// sticky bit lets the non-root user write there; every mtime is created.
func rootfsLayer(binary []byte, created time.Time) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	entries := []struct {
		name string
		mode int64
		data []byte
		dir  bool
	}{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, data: []byte("root:x:0:\nnonroot:x:65532:\n")},
		{name: "etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/tmp:/sbin/nologin\n")},
		{name: "fleetaudit", mode: 0o755, data: binary},
		{name: "tmp/", mode: 0o1777, dir: true},
	}
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, ModTime: created, Typeflag: tar.TypeReg, Size: int64(len(e.data)), Format: tar.FormatPAX}
		if e.dir {
			h.Typeflag = tar.TypeDir
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return gzipLayer(buf.Bytes())
}

// gzipLayer is the layer of an uncompressed tar, gzipped as the OCI media
// type says; Go's gzip is deterministic, so is the digest.
func gzipLayer(tarball []byte) (v1.Layer, error) {
	return tarballpkg.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(tarball)), nil
	}, tarballpkg.WithMediaType(types.OCILayer))
}

// WriteLayout writes idx as an OCI image layout at dir (replacing it),
// tagging the index with ref (org.opencontainers.image.ref.name) for tools
// that copy it to a registry.
func WriteLayout(dir string, idx v1.ImageIndex, ref string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("image layout %s: %w", dir, err)
	}
	opts := []layout.Option{}
	if ref != "" {
		opts = append(opts, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": ref}))
	}
	if err := p.AppendIndex(idx, opts...); err != nil {
		return fmt.Errorf("image layout %s: %w", dir, err)
	}
	return nil
}
