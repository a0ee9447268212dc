// Package strictyaml checks a parsed YAML document against the Go struct it
// will be decoded into and rejects keys the struct does not declare.
//
// yaml.v3's KnownFields does the same but reports Go type names
// ("field x not found in type fleets.rulesDoc"); users need the key's path in
// their file and what would have been accepted.
package strictyaml

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ErrUnknownKey is wrapped by every error Check reports for an undeclared key.
var ErrUnknownKey = errors.New("unknown key")

// maxNodes bounds the walk: aliases can make a small file expand into a huge
// tree (the "billion laughs" document).
const maxNodes = 1 << 20

// Check walks n against the type of v (a struct, map, slice or pointer to
// one) and returns one error per key that v's type does not declare, each as
// "line N: unknown key "k" in PATH (known: a, b)". Struct fields are known by
// their `yaml` tag; a field without a tag or tagged "-" is not a key.
func Check(n *yaml.Node, v any) error {
	w := &walker{}
	w.walk(n, reflect.TypeOf(v), "")
	return errors.Join(w.errs...)
}

type walker struct {
	errs  []error
	nodes int
}

func (w *walker) walk(n *yaml.Node, t reflect.Type, path string) {
	if n == nil || t == nil {
		return
	}
	if w.nodes++; w.nodes > maxNodes {
		if w.nodes == maxNodes+1 {
			w.errs = append(w.errs, fmt.Errorf("line %d: document too large or too deeply aliased", n.Line))
		}
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			w.walk(c, t, path)
		}
		return
	case yaml.AliasNode:
		w.walk(n.Alias, t, path)
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return // a type mismatch: the decoder reports it
		}
		fields := structKeys(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			if k.Kind == yaml.MappingNode || k.Kind == yaml.SequenceNode {
				w.errs = append(w.errs, fmt.Errorf("line %d: %w: a %s is not a key in %s", k.Line, ErrUnknownKey, kindName(k.Kind), where(path)))
				continue
			}
			if k.Value == "<<" && k.Tag == "!!merge" {
				w.walk(val, t, path)
				continue
			}
			ft, ok := fields[k.Value]
			if !ok {
				w.errs = append(w.errs, fmt.Errorf("line %d: %w %q in %s (known: %s)",
					k.Line, ErrUnknownKey, k.Value, where(path), strings.Join(sortedKeys(fields), ", ")))
				continue
			}
			w.walk(val, ft, join(path, k.Value))
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			w.walk(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value))
		}
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode {
			return
		}
		for i, c := range n.Content {
			w.walk(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
		}
	}
}

func structKeys(t reflect.Type) map[string]reflect.Type {
	keys := map[string]reflect.Type{}
	for f := range t.Fields() {
		tag := f.Tag.Get("yaml")
		name, _, _ := strings.Cut(tag, ",")
		if !f.IsExported() || name == "" || name == "-" {
			continue
		}
		keys[name] = f.Type
	}
	return keys
}

func sortedKeys(m map[string]reflect.Type) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// join writes a key path; keys with dots (label keys) are quoted so the path
// stays unambiguous.
func join(path, key string) string {
	if strings.ContainsAny(key, ".[]\" ") || key == "" {
		key = fmt.Sprintf("[%q]", key)
		return path + key
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

func where(path string) string {
	if path == "" {
		return "the top level"
	}
	return path
}

func kindName(k yaml.Kind) string {
	switch k {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "sequence"
	}
	return "scalar"
}

// DecodeMapping parses a file that must hold exactly one YAML document whose
// top level is a mapping, and returns the document node and that mapping.
func DecodeMapping(data []byte) (doc, mapping *yaml.Node, err error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	doc = new(yaml.Node)
	if err := dec.Decode(doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil, errors.New("empty file")
		}
		return nil, nil, err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, nil, err
		}
		return nil, nil, fmt.Errorf("line %d: more than one YAML document", extra.Line)
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, nil, fmt.Errorf("line %d: want a mapping at the top level", doc.Line)
	}
	return doc, doc.Content[0], nil
}

// MapValue returns the value of key in mapping n, or nil when n is not a
// mapping or has no such key.
func MapValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}
