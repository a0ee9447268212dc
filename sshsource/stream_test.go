package sshsource

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

// streamOf is a snapshot stream: the start marker, a listing of regular
// files, then contents as given.
func streamOf(files []string, contents string) []byte {
	var b strings.Builder
	b.WriteString(startMarker)
	for _, f := range files {
		fmt.Fprintf(&b, "- f 0644 9 ./%s\x00\x00", f)
	}
	b.WriteString(metaEnd + "\x00" + contents)
	return []byte(b.String())
}

const endHeader = "==> " + contentsEnd + " <==\n"

// TestStreamAttacks loads each attack's stream from memory with the default
// limits: each fails, naming the limit or what is malformed.
func TestStreamAttacks(t *testing.T) {
	header := "==> ./etc/os-release <==\n"
	records := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "- f 0644 1 ./f%d\x00\x00", i)
		}
		return b.String()
	}
	tests := []struct {
		name   string
		stream []byte
		want   string
		limit  bool
	}{
		{"flood after a header", streamOf([]string{"etc/os-release"}, header+strings.Repeat("\x00", 3<<20)), "./etc/os-release: more than the 1048577 bytes", true},
		{"NULs only", make([]byte, 3<<20), "more than 1 MiB before the stream started", true},
		{"huge listing", []byte(startMarker + records(maxEntries+1) + metaEnd + "\x00" + endHeader), "more than 250000 entries", true},
		{"endless record", []byte(startMarker + strings.Repeat("a", 200<<10)), "record longer than 64 KiB", true},
		{"repeated headers", streamOf([]string{"etc/os-release"}, header+strings.Repeat("\n==> ", 80_000)), "the contents of ./etc/os-release end early", false},
		{"close mid-stream", []byte(startMarker + "- f 0644 9 ./et"), "the listing ends early", false},
		{"no header", streamOf([]string{"etc/os-release"}, "text\n"+endHeader), "do not start with a header", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := newTree(context.Background(), nil, "/", 1<<20+1)
			err := tr.load(tt.stream)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one naming %q", err, tt.want)
			}
			if errors.Is(err, errLimit) != tt.limit || errors.Is(err, errStream) == tt.limit {
				t.Errorf("err = %v: a limit %v, malformed %v; want a limit: %v", err, errors.Is(err, errLimit), errors.Is(err, errStream), tt.limit)
			}
		})
	}
}

// TestStreamParseIsLinear: two million "\n==> " after a header (10 MB, far
// past what the old rescanning parser could finish) are read in one pass;
// the bound only says it did not hang.
func TestStreamParseIsLinear(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tr := newTree(ctx, nil, "/", 64<<20)
	err := tr.load(streamOf([]string{"etc/os-release"}, "==> ./etc/os-release <==\n"+strings.Repeat("\n==> ", 2_000_000)))
	if !errors.Is(err, errStream) || !strings.Contains(err.Error(), "end early") {
		t.Fatalf("err = %v, want the contents ending early", err)
	}
}

// slowReader feeds r a few bytes at a time, cancelling after reads.
type slowReader struct {
	r      io.Reader
	reads  int
	after  int
	cancel context.CancelFunc
}

func (s *slowReader) Read(p []byte) (int, error) {
	s.reads++
	if s.reads == s.after {
		s.cancel()
	}
	return s.r.Read(p[:min(len(p), 7)])
}

// TestStreamChecksContext: whichever part of the stream is being read, a
// cancelled context ends the load with its error.
func TestStreamChecksContext(t *testing.T) {
	full := streamOf([]string{"etc/os-release", "etc/hostname"}, "==> ./etc/os-release <==\nID=x\n\n==> ./etc/hostname <==\nh\n\n"+endHeader)
	for _, after := range []int{1, 3, 8, 12, 15} {
		ctx, cancel := context.WithCancel(context.Background())
		tr := newTree(ctx, nil, "/", 1<<20)
		err := tr.loadFrom(&slowReader{r: bytes.NewReader(full), after: after, cancel: cancel})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled at read %d: err = %v, want context.Canceled", after, err)
		}
	}
}

// TestStreamHeaders: what is a header and what is a file's text, as the
// rescanning parser read them, and a name with a newline never takes
// another file's text.
func TestStreamHeaders(t *testing.T) {
	files := []string{"etc/os-release", "etc/hostname", "etc/empty"}
	tr := newTree(context.Background(), nil, "/", 1<<20)
	err := tr.load(streamOf(files, "==> ./etc/os-release <==\n"+
		"==> ./etc/hostname <==\n"+ // first line of a file: text
		"==> ./etc/other <==\n"+ // not listed: text
		"==> ./etc/os-release <==\n"+ // the file being read: text
		"end\n"+
		"==> ./etc/empty <==\n"+
		"\n==> ./etc/hostname <==\nh1\n\n"+endHeader+"trailing"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"etc/os-release": "==> ./etc/hostname <==\n==> ./etc/other <==\n==> ./etc/os-release <==\nend",
		"etc/empty":      "",
		"etc/hostname":   "h1\n",
	}
	for name, text := range want {
		if got := tr.nodes[name].data; got == nil || string(got) != text {
			t.Errorf("%s = %q, want %q", name, got, text)
		}
	}

	// A name with a newline spans lines: neither it nor the file before
	// it is taken (both are read when opened).
	tr = newTree(context.Background(), nil, "/", 1<<20)
	err = tr.load(streamOf([]string{"etc/os-release", "etc/a\nb"}, "==> ./etc/os-release <==\nID=x\n\n==> ./etc/a\nb <==\nsecret\n\n"+endHeader))
	if err != nil {
		t.Fatal(err)
	}
	if got := tr.nodes["etc/os-release"].data; got != nil {
		t.Errorf("etc/os-release = %q, want it left to be read when opened", got)
	}
	if got := tr.nodes["etc/a\nb"].data; got != nil {
		t.Errorf("etc/a\\nb = %q, want it left to be read when opened", got)
	}
}
