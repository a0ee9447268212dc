package fleetrun

import (
	"encoding/json"

	"github.com/open-policy-agent/opa/v1/ast"
)

// A converter makes Rego values of decoded documents as
// ast.InterfaceToValue does (values Equal to its), allocating less: a
// fleet's documents repeat their keys and short strings, so it keeps one
// term per key and one value per short string, shared by every value it
// makes. Values it made are immutable and may be shared; the converter
// itself is for one goroutine.
type converter struct {
	keys map[string]*ast.Term
	strs map[string]ast.Value
}

// Bounds on what a converter keeps: the strings it shares and their length.
const (
	maxConverterStrings = 1 << 15
	maxConverterLen     = 48
)

// Value is ast.InterfaceToValue(v).
func (c *converter) Value(v any) (ast.Value, error) {
	switch x := v.(type) {
	case string:
		return c.str(x), nil
	case map[string]any:
		return c.object(x)
	case []any:
		terms := make([]ast.Term, len(x))
		ptrs := make([]*ast.Term, len(x))
		for i, e := range x {
			ev, err := c.Value(e)
			if err != nil {
				return nil, err
			}
			terms[i].Value = ev
			ptrs[i] = &terms[i]
		}
		return ast.NewArray(ptrs...), nil
	case json.Number:
		if t := ast.InternedIntNumberTermFromString(string(x)); t != nil {
			return t.Value, nil
		}
		return ast.NumberChecked(string(x))
	}
	// Booleans, null and anything a decoder does not make.
	return ast.InterfaceToValue(v)
}

func (c *converter) object(m map[string]any) (ast.Value, error) {
	terms := make([]ast.Term, len(m))
	items := make([][2]*ast.Term, 0, len(m))
	for k, v := range m {
		x, err := c.Value(v)
		if err != nil {
			return nil, err
		}
		t := &terms[len(items)]
		t.Value = x
		items = append(items, [2]*ast.Term{c.key(k), t})
	}
	return ast.NewObject(items...), nil
}

func (c *converter) key(k string) *ast.Term {
	if t, ok := c.keys[k]; ok {
		return t
	}
	t := ast.InternedTerm(k)
	if len(k) <= maxConverterLen {
		if c.keys == nil || len(c.keys) >= maxConverterStrings {
			c.keys = make(map[string]*ast.Term, 256)
		}
		c.keys[k] = t
	}
	return t
}

func (c *converter) str(s string) ast.Value {
	if len(s) > maxConverterLen {
		return ast.String(s)
	}
	if x, ok := c.strs[s]; ok {
		return x
	}
	x := ast.InternedTerm(s).Value
	if c.strs == nil || len(c.strs) >= maxConverterStrings {
		c.strs = make(map[string]ast.Value, 256)
	}
	c.strs[s] = x
	return x
}
