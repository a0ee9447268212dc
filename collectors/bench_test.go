package collectors

import (
	"context"
	"path/filepath"
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
