package snapshot

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzDecodeAny: the one-pass parser gives exactly encoding/json's value,
// or its error, for any input.
func FuzzDecodeAny(f *testing.F) {
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
	for _, s := range []string{`{}`, `[]`, `{"a":1}`, `{"a":"\u00e9\n"}`, `{"a":-0.5e+3,"a":[true,false,null]}`,
		`{"a":01}`, `{} x`, `{} ]`, `{"a":"\xff"}`, `"x`, `{"a":1,}`, `[1 2]`, `{"k":"é"}`, `{"a":"\ud83d\ude00 \ud800 x \ud800\u0041 \t\"\\\/\b\f\r"}`, `{"a":"\x"}`, `{"a":"\u12"}`, `{"a":"\'"}`, ` {"a" : [ ] } `, `1.`, `-`, `tru`, "{\"a\":\"\xff\xfe\"}", "[\"\x01\"]"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want any
		wantErr := DecodeJSON(b, &want)
		got, err := decodeAny(b, &stringTable{})
		if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
			t.Fatalf("error %v, want %v", err, wantErr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("value %#v, want %#v", got, want)
		}
	})
}
