package sshsource

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetaudit/fleetaudit/collectors"
)

// FuzzLoadStream: whatever a host sends, loading it is an error or a tree,
// never a panic. Seeded with the streams of the fixture roots.
func FuzzLoadStream(f *testing.F) {
	for _, h := range fixtureHosts {
		root, _ := filepath.Abs(filepath.Join("..", "testdata", "hosts", h))
		out, err := shFetcher{}.output(context.Background(), snapshotScript(root, collectors.DefaultMaxFileSize+1))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(out)
	}
	f.Add([]byte(startMarker + "F d 0755 4096 .\x00\x00" + metaEnd + "\x00==> " + contentsEnd + " <==\n"))
	f.Add([]byte("motd\n" + startMarker + "- f 0644 3 ./a\x00\x00" + metaEnd + "\x00==> ./a <==\nabc\n==> ./a <==\n"))
	// The attacks of a hostile host, small.
	header := "==> ./etc/os-release <==\n"
	f.Add(streamOf([]string{"etc/os-release"}, header+strings.Repeat("\x00", 64<<10)))
	f.Add(make([]byte, 4<<10))
	f.Add([]byte(startMarker + strings.Repeat("- f 0644 1 ./f\x00\x00", 2000) + metaEnd + "\x00" + endHeader))
	f.Add(streamOf([]string{"etc/os-release"}, header+strings.Repeat("\n==> ", 10_000)))
	f.Add(streamOf([]string{"etc/os-release", "etc/hostname"}, header+strings.Repeat("\n==> ./etc/hostname <==\n", 1000)+endHeader))
	f.Add([]byte(startMarker + "- f 0644 9 ./et"))
	f.Add(streamOf([]string{"etc/os-release", "etc/a\nb"}, header+"x\n\n==> ./etc/a\nb <==\ny\n\n"+endHeader))
	f.Add([]byte(startMarker + strings.Repeat("a", 70<<10)))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr := newTree(context.Background(), nil, "/", 1<<20)
		if err := tr.load(data); err != nil {
			return
		}
		// A loaded tree answers for what it holds without a fetch.
		for name, n := range tr.nodes {
			if n.mode.IsRegular() && n.data != nil {
				if _, err := tr.Open(name); err != nil {
					t.Fatalf("Open(%q): %v", name, err)
				}
			}
		}
	})
}
