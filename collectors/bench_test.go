package collectors

import (
	"context"
	"path/filepath"
	"testing"
)

// BenchmarkCollectFixtureRoot measures one host's collection over the
// incident node's fixture tree (file reads through Dir, all parsers).
func BenchmarkCollectFixtureRoot(b *testing.B) {
	for _, root := range []string{"gpu-node", "web-node"} {
		b.Run(root, func(b *testing.B) {
			src := Dir(filepath.Join(fixtureHosts, root))
			opts := fixtureOptions(root)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Collect(context.Background(), src, opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
