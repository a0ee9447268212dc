package strictyaml

import (
	"errors"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

type inner struct {
	Include []string `yaml:"include"`
}

type doc struct {
	Name   string            `yaml:"name"`
	Rules  inner             `yaml:"rules"`
	Labels map[string]string `yaml:"labels"`
	Items  []inner           `yaml:"items"`
	Params map[string]any    `yaml:"params"`
	hidden string
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string // substrings, one per expected error; nil means valid
	}{
		{"valid", "name: x\nrules: {include: [a]}\nlabels: {node.kubernetes.io/instance-type: p5}\nparams: {anything: {goes: 1}}\n", nil},
		{"top level", "name: x\nnmae: y\n", []string{`line 2: unknown key "nmae" in the top level (known: items, labels, name, params, rules)`}},
		{"nested", "rules:\n  include: [a]\n  inclde: [b]\n", []string{`line 3: unknown key "inclde" in rules (known: include)`}},
		{"in list", "items:\n- include: []\n- exclude: []\n", []string{`line 3: unknown key "exclude" in items[1]`}},
		{"unexported field is not a key", "hidden: x\n", []string{`unknown key "hidden"`}},
		{"through alias", "base: &b {include: [a], bogus: 1}\n", []string{`unknown key "base"`}},
		{"alias content checked", "items: [&x {include: []}, *x]\nrules: {<<: *x, bogus: 1}\n", []string{`line 2: unknown key "bogus" in rules`}},
		{"several", "a: 1\nb: 2\n", []string{`unknown key "a"`, `unknown key "b"`}},
		{"type mismatch left to decoder", "rules: [1, 2]\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var n yaml.Node
			if err := yaml.Unmarshal([]byte(tt.src), &n); err != nil {
				t.Fatal(err)
			}
			err := Check(&n, &doc{})
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrUnknownKey) {
				t.Fatalf("Check = %v, want ErrUnknownKey", err)
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tt.want) {
				t.Fatalf("got %d errors, want %d:\n%v", len(lines), len(tt.want), err)
			}
			for i, w := range tt.want {
				if !strings.Contains(lines[i], w) {
					t.Errorf("error %d = %q, want it to contain %q", i, lines[i], w)
				}
			}
		})
	}
}

func TestCheckAliasBomb(t *testing.T) {
	// 2000 references to a mapping whose list holds 1000 items: a small file
	// whose tree has two million nodes.
	src := "x: &x {include: [" + strings.Repeat("a, ", 999) + "a]}\nitems: [" +
		strings.Repeat("*x, ", 1999) + "*x]\n"
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(src), &n); err != nil {
		t.Fatal(err)
	}
	err := Check(&n, &doc{})
	if err == nil || !strings.Contains(err.Error(), "too large") {
		t.Fatalf("Check = %.200v, want a size error", err)
	}
}
