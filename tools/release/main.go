// Command release builds fleetaudit's release: a static binary per target,
// a CycloneDX SBOM per target and SHA256SUMS over them all (make release).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fleetaudit/fleetaudit/internal/release"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(2)
	}
}

func run() error {
	var (
		version = flag.String("version", "", "version to stamp, e.g. v0.4.0 (git describe)")
		commit  = flag.String("commit", "", "commit to stamp (git rev-parse HEAD)")
		epoch   = flag.String("date", "", "the commit's date as Unix seconds (SOURCE_DATE_EPOCH, git log -1 --format=%ct)")
		dir     = flag.String("out", "dist", "output directory")
		targets = flag.String("targets", "linux/amd64,linux/arm64,darwin/arm64", "comma-separated os/arch list")
		sbom    = flag.String("sbom-tool", "", "path of cyclonedx-gomod (empty: no SBOM)")
	)
	flag.Parse()
	secs, err := strconv.ParseInt(*epoch, 10, 64)
	if err != nil {
		return fmt.Errorf("-date %q: want Unix seconds", *epoch)
	}
	opts := release.Options{
		Module: ".", Main: "./cmd/fleetaudit", Dir: *dir, Log: os.Stderr,
		Stamp: release.Stamp{Version: *version, Commit: *commit, Date: time.Unix(secs, 0).UTC()},
	}
	for _, s := range strings.Split(*targets, ",") {
		t, err := release.ParseTarget(strings.TrimSpace(s))
		if err != nil {
			return err
		}
		opts.Targets = append(opts.Targets, t)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := os.RemoveAll(*dir); err != nil {
		return err
	}
	arts, err := release.Build(ctx, opts)
	if err != nil {
		return err
	}
	if *sbom != "" {
		boms, err := release.SBOM(ctx, *sbom, *version, arts, opts.Stamp.Date)
		if err != nil {
			return err
		}
		arts = append(arts, boms...)
	}
	var names []string
	for _, a := range arts {
		names = append(names, filepath.Base(a.Path))
	}
	if err := release.WriteSums(*dir, names, opts.Stamp.Date); err != nil {
		return err
	}
	for _, n := range append(names, release.SumsFile) {
		fmt.Println(filepath.Join(*dir, n))
	}
	return nil
}
