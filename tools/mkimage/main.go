// Command mkimage writes fleetaudit's container image as an OCI image layout
// from release binaries, without a container daemon (make image).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fleetaudit/fleetaudit/internal/ociimage"
	"github.com/fleetaudit/fleetaudit/internal/release"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(2)
	}
}

func run() error {
	var (
		bin       = flag.String("bin", "dist/image-bin", "directory of release binaries (fleetaudit-linux-ARCH)")
		platforms = flag.String("platforms", "linux/amd64,linux/arm64", "comma-separated platforms")
		out       = flag.String("out", "dist/image", "OCI image layout directory to write (replaced)")
		tag       = flag.String("tag", "", "reference the layout's index is annotated with, e.g. ghcr.io/fleetaudit/fleetaudit:v0.4.0")
		version   = flag.String("version", "", "version label")
		commit    = flag.String("commit", "", "revision label")
		epoch     = flag.String("date", "", "the commit's date as Unix seconds: the image's created time")
	)
	flag.Parse()
	secs, err := strconv.ParseInt(*epoch, 10, 64)
	if err != nil {
		return fmt.Errorf("-date %q: want Unix seconds", *epoch)
	}
	opts := ociimage.Options{Binaries: map[string]string{}, Version: *version, Revision: *commit, Created: time.Unix(secs, 0).UTC()}
	for _, p := range strings.Split(*platforms, ",") {
		t, err := release.ParseTarget(strings.TrimSpace(p))
		if err != nil {
			return err
		}
		opts.Binaries[t.String()] = filepath.Join(*bin, release.BinaryName(t))
	}
	idx, err := ociimage.Build(opts)
	if err != nil {
		return err
	}
	if err := ociimage.WriteLayout(*out, idx, *tag); err != nil {
		return err
	}
	d, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s %s@%s\n", *out, *tag, d)
	return nil
}
