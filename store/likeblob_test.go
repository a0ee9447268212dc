package store

import (
	"bytes"
	"maps"
	"testing"
)

// A host's blob made from the document it is like, with its name put in,
// is byte for byte the blob of its own document, whatever the name holds
// (JSON and HTML escapes), and a document that holds the cut mark itself
// is encoded whole.
func TestBlobFromLikeIsOwnBlob(t *testing.T) {
	like := map[string]any{
		"host":         "gpu-001",
		"collected_at": "2026-12-01T00:00:00Z",
		"kernel":       map[string]any{"release": "5.15.0-105-generic"},
		"labels":       map[string]any{"rack": "<r1> & r2"},
	}
	marked := maps.Clone(like)
	marked["notes"] = hostMark
	r := &Recorder{likes: map[uintptr]likeBlob{}}
	for _, l := range []map[string]any{like, marked} {
		for _, name := range []string{"gpu-002", "<a&b>", `quo"te\`, "é\u2028x", "", "gpu-001"} {
			doc := maps.Clone(l)
			doc["host"] = name
			want, wantAt, err := SnapshotBlob(doc)
			if err != nil {
				t.Fatal(err)
			}
			got, gotAt, err := r.blob(doc, l)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) || gotAt != wantAt {
				t.Errorf("host %q: blob\n%s\nwant\n%s (collected_at %q, want %q)", name, got, want, gotAt, wantAt)
			}
		}
	}
	if sp := r.likes[addressOf(like)]; sp.parts[0] == nil {
		t.Error("the plain document was not cut")
	}
	if sp := r.likes[addressOf(marked)]; sp.parts[0] != nil {
		t.Error("a document holding the mark was cut")
	}
}
