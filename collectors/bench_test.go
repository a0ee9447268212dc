package collectors

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// BenchmarkCollectFixtureRoot measures one host's collection over the
// incident node's fixture tree (file reads through Dir, all parsers), a
// web server, and two hosts whose command line comes from boot entries.
func BenchmarkCollectFixtureRoot(b *testing.B) {
	for _, root := range []string{"gpu-node", "web-node", "rhel8-bls", "sdboot-node"} {
		b.Run(root, func(b *testing.B) {
			dir := filepath.Join(fixtureHosts, root)
			opts := fixtureOptions(root)
			b.ReportAllocs()
			for b.Loop() {
				// A new Dir per host, as the CLI does: no link cache carried over.
				if _, err := Collect(context.Background(), Target{Files: Dir(dir)}, opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCollectManyProcesses is the gpu-node fixture with 2,000
// processes in /proc, as a busy training node runs: what the /proc scan
// costs per host.
func BenchmarkCollectManyProcesses(b *testing.B) {
	dir := b.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(fixtureHosts, "gpu-node"))); err != nil {
		b.Fatal(err)
	}
	for pid := 10000; pid < 12000; pid++ {
		p := filepath.Join(dir, "proc", strconv.Itoa(pid))
		if err := os.MkdirAll(p, 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "comm"), []byte("python3\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	opts := fixtureOptions("gpu-node")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Collect(context.Background(), Target{Files: Dir(dir)}, opts); err != nil {
			b.Fatal(err)
		}
	}
}
