package snapshot

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// byMembers decodes a file as a reader that shares sections does: split,
// each member alone, assembled. ok is false where that reader decodes the
// file whole instead.
func byMembers(d *Decoder, b []byte) (map[string]any, error, bool) {
	raw, ok := SplitMembers(b, nil)
	if !ok {
		return nil, nil, false
	}
	ms := make([]Member, len(raw))
	for i, r := range raw {
		if ms[i], ok = d.Member(r.Name, r.Value); !ok {
			return nil, nil, false
		}
	}
	doc, err := Assemble(len(ms), func(i int) (string, *Member) { return raw[i].Name, &ms[i] })
	return doc, err, true
}

// FuzzMembers: a file decoded member by member is the document
// Decoder.Document makes of it whole, values, removed members and errors
// alike, whenever it splits.
func FuzzMembers(f *testing.F) {
	for _, glob := range []string{"../collectors/testdata/golden/*.json", "../examples/fleet/snapshots/*.json", "../examples/snapshots/*.json"} {
		files, _ := filepath.Glob(glob)
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	for _, s := range []string{
		`{}`, `[]`, ` { "schema" : "fleetaudit.snapshot/v1" } `, `{"schema":"fleetaudit.snapshot/v1","host":"h","host":"g"}`,
		`{"schema":"fleetaudit.snapshot/v1","boot":{"running":{"params":{"hugetlb_cma":1}}},"labels":[],"errors":[{"collector":"x"}]}`,
		`{"schema":"fleetaudit.snapshot/v1","errors":{"a":1},"kernel":7}`, `{"schema":"fleetaudit.snapshot/v2"}`, `{"schema":3}`,
		`{"host":"h"}`, `{"schema":"fleetaudit.snapshot/v1","x":tru}`, `{"schema":"fleetaudit.snapshot/v1"} x`, `{"sch\u0065ma":"fleetaudit.snapshot/v1"}`,
		`{"schema":"fleetaudit.snapshot/v1","a":"\xff"}`, `{"schema":"fleetaudit.snapshot/v1","a":[1,{"b":"]"}],}`, `{"schema":"fleetaudit.snapshot/v1","a":01}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, gotErr, ok := byMembers(new(Decoder), b)
		if !ok {
			return
		}
		want, wantErr := new(Decoder).Document(b)
		if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
			t.Fatalf("error %v, want %v", gotErr, wantErr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("document %#v\nwant %#v", got, want)
		}
	})
}

// The real snapshots split, and every member reads on the fast path: the
// shared reading is the one that runs, not its fallback.
func TestRealSnapshotsSplit(t *testing.T) {
	files, _ := filepath.Glob("../collectors/testdata/golden/*.json")
	if len(files) == 0 {
		t.Fatal("no golden snapshots")
	}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, ok := byMembers(new(Decoder), b); !ok {
			t.Errorf("%s does not split into members", file)
		}
	}
}

// BenchmarkDecode decodes a GPU node's snapshot whole (Decoder.Document)
// and by members (split, each member decoded, assembled: what a reader pays
// for a file none of whose members it has seen).
func BenchmarkDecode(b *testing.B) {
	raw, err := os.ReadFile("../collectors/testdata/golden/gpu-node.json")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("whole", func(b *testing.B) {
		d := new(Decoder)
		b.SetBytes(int64(len(raw)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := d.Document(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("members", func(b *testing.B) {
		d := new(Decoder)
		b.SetBytes(int64(len(raw)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err, ok := byMembers(d, raw); !ok || err != nil {
				b.Fatal(ok, err)
			}
		}
	})
	b.Run("split", func(b *testing.B) {
		var into []RawMember
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			var ok bool
			if into, ok = SplitMembers(raw, into); !ok {
				b.Fatal("no split")
			}
		}
	})
}
