package fleetrun

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

// sameAsInterfaceToValue fails t unless c converts v to a value Equal to
// ast.InterfaceToValue's, or fails as it does.
func sameAsInterfaceToValue(t *testing.T, c *converter, what string, v any) ast.Value {
	t.Helper()
	want, wantErr := ast.InterfaceToValue(v)
	got, err := c.Value(v)
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("%s: error %v, want %v", what, err, wantErr)
	}
	if err != nil {
		return nil
	}
	if got.Compare(want) != 0 || !ast.NewTerm(got).Equal(ast.NewTerm(want)) || got.Hash() != want.Hash() {
		t.Fatalf("%s: value\n%v\nwant\n%v", what, got, want)
	}
	return got
}

func converterSeeds(tb testing.TB) [][]byte {
	var out [][]byte
	for _, glob := range []string{"../../collectors/testdata/golden/*.json", "../../examples/fleet/snapshots/*.json", "../../examples/snapshots/*.json"} {
		files, _ := filepath.Glob(glob)
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				tb.Fatal(err)
			}
			out = append(out, b)
		}
	}
	if len(out) == 0 {
		tb.Fatal("no snapshots")
	}
	return out
}

// The converter's values are InterfaceToValue's for real snapshots as the
// runner decodes them, one converter sharing its terms between them all,
// and stay so once it has converted the others.
func TestConverterIsInterfaceToValue(t *testing.T) {
	var c converter
	dec := new(snapshot.Decoder)
	var docs []any
	var made []ast.Value
	for i, b := range converterSeeds(t) {
		for _, decode := range []func([]byte) (any, error){
			func(b []byte) (any, error) { return dec.Document(b) },
			func(b []byte) (any, error) {
				var v any
				return v, snapshot.DecodeJSON(b, &v)
			},
		} {
			doc, err := decode(b)
			if err != nil {
				continue
			}
			docs = append(docs, doc)
			made = append(made, sameAsInterfaceToValue(t, &c, fmt.Sprint("snapshot ", i), doc))
		}
	}
	if len(docs) < 10 {
		t.Fatalf("only %d snapshots decode", len(docs))
	}
	for i, doc := range docs {
		want, _ := ast.InterfaceToValue(doc)
		if made[i].Compare(want) != 0 {
			t.Fatalf("snapshot %d changed after converting the others", i)
		}
	}
}

// Generated values, with every number form and the types a decoder does
// not make.
func TestConverterGenerated(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var c converter
	for i := range 2000 {
		sameAsInterfaceToValue(t, &c, fmt.Sprint("value ", i), genValue(r, 4))
	}
	for _, v := range []any{nil, true, false, "", json.Number("1e400"), json.Number("x"), json.Number("-0"), json.Number("1.0"),
		json.Number("12345678901234567890"), 1.5, 3, int64(-7), uint64(1 << 63), []string{"a"}, map[string]string{"a": "b"},
		struct{ A int }{1}, map[string]any{"a": json.Number("x")}, []any{make(chan int)}, ast.String("s")} {
		sameAsInterfaceToValue(t, &c, fmt.Sprintf("%#v", v), v)
	}
}

func genValue(r *rand.Rand, depth int) any {
	n := r.IntN(9)
	if depth == 0 {
		n = r.IntN(6)
	}
	keys := []string{"a", "b", "name", "value", "1", "", "a long key that is not shared because it is over the bound"}
	switch n {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 0
	case 2:
		return keys[r.IntN(len(keys))]
	case 3:
		switch r.IntN(5) {
		case 0:
			return json.Number(strconv.Itoa(r.IntN(1000) - 500))
		case 1:
			return json.Number(strconv.FormatFloat(r.NormFloat64()*1e6, 'g', -1, 64))
		case 2:
			return json.Number("1" + strconv.Itoa(r.IntN(1000)) + "e" + strconv.Itoa(r.IntN(40)))
		case 3:
			return r.Float64()
		default:
			return r.IntN(100)
		}
	case 4:
		return fmt.Sprint("s", r.IntN(50))
	case 5:
		return []any{}
	case 6, 7:
		m := map[string]any{}
		for range r.IntN(6) {
			m[keys[r.IntN(len(keys))]] = genValue(r, depth-1)
		}
		return m
	default:
		l := make([]any, r.IntN(5))
		for i := range l {
			l[i] = genValue(r, depth-1)
		}
		return l
	}
}

// FuzzConverter: any JSON the decoders read converts as InterfaceToValue
// converts it.
func FuzzConverter(f *testing.F) {
	for _, b := range converterSeeds(f) {
		f.Add(b)
	}
	for _, s := range []string{`{"a":1,"b":[1.5,"x",null,true,{}],"c":{"a":"a"}}`, `[1e400]`, `-0`, `"s"`, `{"a":{"a":{"a":[]}}}`} {
		f.Add([]byte(s))
	}
	var c converter
	dec := new(snapshot.Decoder)
	f.Fuzz(func(t *testing.T, b []byte) {
		var v any
		if snapshot.DecodeJSON(b, &v) == nil {
			sameAsInterfaceToValue(t, &c, "DecodeJSON", v)
		}
		if doc, err := dec.Document(b); err == nil {
			sameAsInterfaceToValue(t, &c, "Document", doc)
		}
	})
}

// BenchmarkConvert converts a GPU node's snapshot with InterfaceToValue and
// with a converter that converted it before (its keys and strings held).
func BenchmarkConvert(b *testing.B) {
	raw, err := os.ReadFile("../../collectors/testdata/golden/gpu-node.json")
	if err != nil {
		b.Fatal(err)
	}
	doc, err := snapshot.DecodeDocument(raw)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("InterfaceToValue", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ast.InterfaceToValue(doc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("converter", func(b *testing.B) {
		var c converter
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.Value(doc); err != nil {
				b.Fatal(err)
			}
		}
	})
}
