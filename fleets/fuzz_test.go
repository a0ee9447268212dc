package fleets

import (
	"encoding/json"
	"testing"
)

func FuzzProfile(f *testing.F) {
	for _, name := range []string{"common", "gpu-training", "web-serving"} {
		data, err := builtinFS.ReadFile("builtin/" + name + ".yaml")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("params: {a: &x [1, *x]}\n"))
	f.Add([]byte("params: {x: .nan, y: {1: 2}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := parseProfile(data, "fuzz")
		if err != nil {
			return
		}
		// Params reach Rego as JSON: they must always encode.
		if _, err := json.Marshal(p.Params); err != nil {
			t.Fatalf("params do not encode as JSON: %v", err)
		}
		if err := p.validate(); err != nil {
			t.Fatalf("a parsed profile fails validation: %v", err)
		}
	})
}
