package reports

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/fleetaudit/fleetaudit/policies"
)

// hostileStrings are pieces of the strings findings are made of: what
// encoding/json escapes, replaces or leaves alone, and what EscapeJSON
// escapes after it.
var hostileStrings = []string{
	"", "a", "node-01", "<script>&amp;</script>", "\u2028", "\u2029", "\x00", "\x01\x1f",
	"\x7f", "\u0080", "\u0085", "\u009f", "\u00a0", "\xff", "\xc2", "\xed\xa0\x80", "\xf4\x90\x80\x80",
	"\"", "\\", "\b\f\n\r\t", "\v", "é", "😀", "\ufffd", "\ufeff", "\x00fleetaudit host\x00", "\"host\": ", "{}[],:",
}

func randString(r *rand.Rand) string {
	var b strings.Builder
	for range r.IntN(5) {
		b.WriteString(hostileStrings[r.IntN(len(hostileStrings))])
	}
	return b.String()
}

var oddFloats = []float64{
	0, math.Copysign(0, -1), 1, -1.5, 0.1, 1e20, 1e21, -1e21, 123456789e13, 1e-6, 9.99e-7, -1e-7,
	5e-324, math.MaxFloat64, -math.MaxFloat64, 1e-9, 1e-10, 123456789012345678, 1 << 53, 1<<53 + 1,
	2.5e-5, 1e100, 0.000001234,
}

// marshalsItself has a MarshalJSON whose output encoding/json compacts.
type marshalsItself struct{ S string }

func (m marshalsItself) MarshalJSON() ([]byte, error) {
	return []byte(`{ "s" : ` + strings.ReplaceAll(string(mustMarshal(m.S)), `\u003c`, "<") + ` , "l": [ 1, 2 ] }`), nil
}

func mustMarshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// randValue is a value a finding's evidence, expected or fix may hold:
// what decoded snapshots and rule results hold, and other types, which
// the encoder leaves to encoding/json.
func randValue(r *rand.Rand, depth int) any {
	n := 14
	if depth > 3 {
		n = 9 // no more nesting
	}
	switch r.IntN(n) {
	case 0:
		return nil
	case 1, 2:
		return randString(r)
	case 3:
		return r.IntN(2) == 0
	case 4:
		return oddFloats[r.IntN(len(oddFloats))] * float64(1-2*r.IntN(2))
	case 5:
		nums := []json.Number{"0", "-0", "12", "1e3", "12.50", "-1.5E+2", "", "123456789012345678901234567890"}
		return nums[r.IntN(len(nums))]
	case 6:
		if r.IntN(2) == 0 {
			return r.IntN(1 << 20)
		}
		return int64(r.Uint64())
	case 7:
		others := []any{
			[]string{"a", "<\u2028>"}, []string(nil), map[string]string{"b": "\x7f", "a": "\u0085"},
			int32(-7), uint64(math.MaxUint64), float32(1e21), float32(0.1), float32(1e-7),
			struct {
				A string `json:"a"`
				B []int  `json:"b,omitempty"`
			}{A: "x\u2029"},
			marshalsItself{S: "<&>\u0080"}, json.RawMessage(`[ 1 , {"a" : "b"} ]`), []byte("\xff\x00"),
			map[int]any{2: "b", 10: []any{}},
		}
		return others[r.IntN(len(others))]
	case 8:
		return []any{}
	case 9, 10:
		if r.IntN(8) == 0 {
			return map[string]any(nil)
		}
		m := map[string]any{}
		for range r.IntN(5) {
			m[randString(r)] = randValue(r, depth+1)
		}
		return m
	default:
		l := []any{}
		if r.IntN(8) == 0 {
			l = nil
		}
		for range r.IntN(5) {
			l = append(l, randValue(r, depth+1))
		}
		return l
	}
}

// fill sets every field of v at random, by its type, so a field added to
// policies.Finding is filled, and fails the comparison until encoded.
func fill(r *rand.Rand, v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(randString(r))
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(r, v.Field(i))
			}
		}
	case reflect.Pointer:
		if r.IntN(2) == 0 {
			v.SetZero()
			return
		}
		v.Set(reflect.New(v.Type().Elem()))
		fill(r, v.Elem())
	case reflect.Slice:
		switch r.IntN(4) {
		case 0:
			v.SetZero()
		case 1:
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
		default:
			v.Set(reflect.MakeSlice(v.Type(), 1+r.IntN(4), 4))
			for i := range v.Len() {
				fill(r, v.Index(i))
			}
		}
	case reflect.Map:
		if r.IntN(3) == 0 {
			v.SetZero()
			return
		}
		v.Set(reflect.MakeMap(v.Type()))
		for range r.IntN(4) {
			k := reflect.New(v.Type().Key()).Elem()
			fill(r, k)
			e := reflect.New(v.Type().Elem()).Elem()
			fill(r, e)
			v.SetMapIndex(k, e)
		}
	case reflect.Interface:
		if x := randValue(r, 0); x != nil {
			v.Set(reflect.ValueOf(x))
		} else {
			v.SetZero()
		}
	default:
		panic("fill: no generator for " + v.Type().String())
	}
}

func randFinding(r *rand.Rand) policies.Finding {
	var f policies.Finding
	fill(r, reflect.ValueOf(&f).Elem())
	return f
}

// checkFindingJSON fails unless the encoder writes f as encodeIndented
// does (or fails where it fails), whole and split around the host.
func checkFindingJSON(t *testing.T, f *policies.Finding) {
	t.Helper()
	want, wantErr := encodeIndented(f, "    ")
	e := newFindingEncoder("    ")
	got, err := e.finding([]byte("x"), f)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("finding %#v: error %v, encoding/json's %v", f, err, wantErr)
	}
	if err != nil {
		return
	}
	if !bytes.Equal(got[1:], want) {
		t.Fatalf("finding %#v:\ngot  %q\nwant %q", f, got[1:], want)
	}
	split, err := e.tail(appendJSONString(e.head(nil, f), f.Host), f)
	if err != nil || !bytes.Equal(split, want) {
		t.Fatalf("finding %#v split at its host:\ngot  %q (%v)\nwant %q", f, split, err, want)
	}
	if len(e.keys) != 0 {
		t.Fatalf("keys left over: %q", e.keys)
	}
}

// TestFindingJSONMatchesEncodingJSON compares the finding encoder with
// encoding/json (plus EscapeJSON) on generated findings.
func TestFindingJSONMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(26, 8))
	for range 20000 {
		f := randFinding(r)
		checkFindingJSON(t, &f)
	}
}

// TestFindingJSONEdgeValues pins the values whose encoding is easiest to
// get wrong, each alone in a finding's evidence, expected and fix.
func TestFindingJSONEdgeValues(t *testing.T) {
	values := []any{
		nil, "", "\u2028\u2029", "\x00\x7f\u0080\u009f\u00a0", "\xff\xfe", "<a href=\"x\">&</a>",
		true, false, json.Number(""), json.Number("-0"), json.Number("1.0e-7"), json.Number("NaN"),
		json.Number("01"), json.Number("1."), math.NaN(), math.Inf(1), math.Inf(-1),
		map[string]any{}, map[string]any(nil), []any{}, []any(nil), []any{nil, map[string]any{}},
		map[string]any{"b": 1.0, "a": []any{"x"}, "\u0085": nil, "A": json.Number("3")},
		[]string{}, map[string]string(nil), marshalsItself{"\u2028"}, float32(16777217),
		func() {}, make(chan int),
	}
	for _, x := range oddFloats {
		values = append(values, x, -x)
	}
	// Deeper than the encoder's first indentation, down to a value it
	// leaves to encoding/json.
	deep := any(map[string]any{"s": []string{"a"}, "m": map[string]any{}})
	for i := range 40 {
		if i%2 == 0 {
			deep = []any{deep, i}
		} else {
			deep = map[string]any{"k": deep}
		}
	}
	values = append(values, deep)
	for _, v := range values {
		f := policies.Finding{
			Rule: "r", Host: "h", Evidence: []policies.Evidence{{Fact: "f", Value: v}},
			Expected: v,
		}
		checkFindingJSON(t, &f)
		if m, ok := v.(map[string]any); ok {
			f.Fix = m
		} else {
			f.Fix = map[string]any{"v": v}
		}
		checkFindingJSON(t, &f)
	}
}

// FuzzFindingJSON compares the finding encoder with encoding/json on
// findings generated from a seed, with the fuzzed string and number in
// every string and number position the generator picks.
func FuzzFindingJSON(f *testing.F) {
	for _, s := range hostileStrings {
		f.Add(uint64(len(s)), s, 1e21)
	}
	f.Add(uint64(7), "\xed\xbf\xbf\u2029", 5e-324)
	f.Fuzz(func(t *testing.T, seed uint64, s string, x float64) {
		r := rand.New(rand.NewPCG(seed, 0))
		fz := randFinding(r)
		fz.Message = s
		fz.Host = s + fz.Host
		fz.Evidence = append(fz.Evidence, policies.Evidence{Fact: s, Value: map[string]any{s: x, "l": []any{s, x}}, Source: s})
		fz.Expected = x
		checkFindingJSON(t, &fz)
	})
}

// The json report of collected findings is the indented encoding/json
// encoding of the result (then EscapeJSON), over several batches of
// generated findings.
func TestJSONReportIsEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 26))
	res := &audit.Result{Schema: "fleetaudit.findings/v1", Errors: []audit.HostError{}}
	for len(res.Findings) < 3*jsonBatch+7 {
		f := randFinding(r)
		if _, err := encodeIndented(&f, ""); err == nil {
			res.Findings = append(res.Findings, f)
		}
	}
	var got, want bytes.Buffer
	if err := (jsonFormat{}).Render(&got, res, Options{}); err != nil {
		t.Fatal(err)
	}
	if err := writeJSON(&want, res, false); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		g, w := got.Bytes(), want.Bytes()
		i := 0
		for i < min(len(g), len(w)) && g[i] == w[i] {
			i++
		}
		t.Fatalf("report differs from encoding/json's at byte %d:\ngot  %q\nwant %q", i, g[i:min(len(g), i+200)], w[i:min(len(w), i+200)])
	}

	// A finding encoding/json cannot encode fails the report.
	res.Findings[jsonBatch+3].Evidence = []policies.Evidence{{Fact: "f", Value: math.NaN()}}
	if err := (jsonFormat{}).Render(io.Discard, res, Options{}); err == nil {
		t.Fatal("a NaN in evidence was written")
	}
}

// failAfter fails every write after its first n bytes.
type failAfter struct{ n int }

var errDiskFull = errors.New("disk full")

func (w *failAfter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		k := w.n
		w.n = 0
		return k, errDiskFull
	}
	w.n -= len(p)
	return len(p), nil
}

// A write error in the middle of the findings, while later batches are
// read and encoded, ends the report with that error, for a failure in any
// batch.
func TestJSONReportStopsAtAWriteError(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 26))
	res := &audit.Result{Schema: "fleetaudit.findings/v1", Errors: []audit.HostError{}}
	for len(res.Findings) < 3*jsonBatches*jsonBatch {
		f := randFinding(r)
		if _, err := encodeIndented(&f, ""); err == nil {
			res.Findings = append(res.Findings, f)
		}
	}
	var full bytes.Buffer
	if err := (jsonFormat{}).Render(&full, res, Options{}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 100, full.Len() / 3, full.Len() - 10} {
		if err := (jsonFormat{}).Render(&failAfter{n: n}, res, Options{}); !errors.Is(err, errDiskFull) {
			t.Errorf("writer failing after %d of %d bytes: %v", n, full.Len(), err)
		}
	}
}
