package snapshot

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
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

// FuzzSplitKnown: a file split with the members of another file known
// splits as SplitMembers splits it, each member equal to the known one
// marked Known.
func FuzzSplitKnown(f *testing.F) {
	files, _ := filepath.Glob("../collectors/testdata/golden/*.json")
	var prev []byte
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(prev, b)
		f.Add(b, b)
		prev = b
	}
	for _, s := range [][2]string{
		{`{"a":{"x":1},"b":"s"}`, `{"a":{"x":1},"b":"s"}`},
		{`{"a":{"x":1}}`, `{"a":{"x":1}1}`},
		{`{"a":{"x":1}}`, `{"a":{"x":12}}`},
		{`{"a":"s"}`, `{"a":"s\"}`},
		{`{"a":"s\\"}`, `{"a":"s\\" }`},
		{`{"a":1}`, `{"a":12}`},
		{`{"a":[1]}`, `{"a":[1],"a":[1]}`},
		{`{"a":[1],"b":[1]}`, `{"b":[1],"a":[1 }`},
	} {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, before, b []byte) {
		seen, _ := SplitMembers(before, nil)
		known := func(name string) []byte {
			for _, m := range seen {
				if m.Name == name {
					return m.Value
				}
			}
			return nil
		}
		got, gotOK := SplitKnown(b, nil, known)
		want, wantOK := SplitMembers(b, nil)
		if gotOK != wantOK || len(got) != len(want) {
			t.Fatalf("split %v %v, want %v %v", gotOK, got, wantOK, want)
		}
		for i, m := range got {
			w := want[i]
			if m.Name != w.Name || m.Offset != w.Offset || string(m.Value) != string(w.Value) {
				t.Fatalf("member %d: %q at %d = %q, want %q at %d = %q", i, m.Name, m.Offset, m.Value, w.Name, w.Offset, w.Value)
			}
			k := known(m.Name)
			if wantKnown := len(k) > 0 && strings.IndexByte(`{["`, k[0]) >= 0 && string(k) == string(m.Value); m.Known != wantKnown {
				t.Fatalf("member %q: known %v, want it where it is the known object, list or string", m.Name, m.Known)
			}
		}
	})
}
