package snapshot

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// The JSON shape of a snapshot, derived once from the Go types by their json
// tags, so a document read as generic JSON (as the policy engine reads it)
// can be checked against what the collectors write, and a rule's fact paths
// against what a snapshot can hold.

type jsonKind uint8

const (
	kindAny jsonKind = iota // interface{}: anything
	kindObject
	kindMap
	kindList
	kindString
	kindInt
	kindNumber
	kindBool
)

func (k jsonKind) String() string {
	switch k {
	case kindObject, kindMap:
		return "object"
	case kindList:
		return "list"
	case kindString:
		return "string"
	case kindInt:
		return "integer"
	case kindNumber:
		return "number"
	case kindBool:
		return "boolean"
	}
	return "any"
}

type schemaNode struct {
	kind jsonKind
	// nullable: Go decodes null into it (pointer, map, slice) and writes
	// null for a nil one.
	nullable bool
	// omitEmpty: the writer leaves the member out when it is empty, so an
	// absent member means "empty", not "not written".
	omitEmpty bool
	fields    map[string]*schemaNode // kindObject
	elem      *schemaNode            // kindMap, kindList
}

var textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()

// docSchema is the schema of the whole document; immutable once built.
var docSchema = sync.OnceValue(func() *schemaNode {
	return schemaOf(reflect.TypeFor[snapshotFields](), map[reflect.Type]*schemaNode{})
})

func schemaOf(t reflect.Type, seen map[reflect.Type]*schemaNode) *schemaNode {
	nullable := false
	for t.Kind() == reflect.Pointer {
		t, nullable = t.Elem(), true
	}
	if t.Implements(textMarshaler) || reflect.PointerTo(t).Implements(textMarshaler) {
		return &schemaNode{kind: kindString, nullable: nullable} // time.Time
	}
	switch t.Kind() {
	case reflect.Struct:
		if n, ok := seen[t]; ok {
			return n
		}
		n := &schemaNode{kind: kindObject, nullable: nullable, fields: map[string]*schemaNode{}}
		seen[t] = n
		addFields(t, n.fields, seen)
		return n
	case reflect.Map:
		return &schemaNode{kind: kindMap, nullable: true, elem: schemaOf(t.Elem(), seen)}
	case reflect.Slice, reflect.Array:
		return &schemaNode{kind: kindList, nullable: true, elem: schemaOf(t.Elem(), seen)}
	case reflect.String:
		return &schemaNode{kind: kindString, nullable: nullable}
	case reflect.Bool:
		return &schemaNode{kind: kindBool, nullable: nullable}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return &schemaNode{kind: kindInt, nullable: nullable}
	case reflect.Float32, reflect.Float64:
		return &schemaNode{kind: kindNumber, nullable: nullable}
	}
	return &schemaNode{kind: kindAny, nullable: true}
}

// addFields lists a struct's JSON members, flattening embedded structs as
// encoding/json does.
func addFields(t reflect.Type, fields map[string]*schemaNode, seen map[reflect.Type]*schemaNode) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			addFields(f.Type, fields, seen)
			continue
		}
		if name == "" {
			name = f.Name
		}
		n := schemaOf(f.Type, seen)
		if slices.Contains(strings.Split(opts, ","), "omitempty") {
			c := *n
			c.omitEmpty = true
			n = &c
		}
		fields[name] = n
	}
}

// Sections are the top-level members a snapshot of this build holds.
func Sections() []string {
	s := docSchema()
	out := make([]string, 0, len(s.fields))
	for k := range s.fields {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// SectionOmitted reports whether the writer leaves section out of a
// document when it is empty (labels, pods), so that its absence means
// "none" rather than "not collected". It is false for unknown sections.
func SectionOmitted(section string) bool {
	n, ok := docSchema().fields[section]
	return ok && n.omitEmpty
}

// IsSection reports whether name is a top-level member of a snapshot.
func IsSection(name string) bool {
	_, ok := docSchema().fields[name]
	return ok
}

// CollectorSnapshot names collection errors about the snapshot document
// itself: a member of the wrong JSON type, removed on decode.
const CollectorSnapshot = "snapshot"

// Validate checks the members of doc (a snapshot in generic JSON form, with
// numbers as json.Number or float64) that this build knows against their Go
// types. Each member of the wrong type is removed from doc, so no rule reads
// a value it would misjudge, and reported as a CollectionError naming its
// fact path ("boot.running.params.hugetlb_cma: want string, got number"),
// in the order of their paths.
// Unknown members (a newer schema's) are left alone.
func Validate(doc map[string]any) []CollectionError {
	var errs []CollectionError
	// Room for the deepest path, so walking a snapshot allocates nothing.
	validateObject(docSchema(), doc, make([]string, 0, 16), &errs)
	sortByPath(errs)
	return errs
}

// sortByPath orders the errors validation reports, found in map order, by
// fact path (each path is reported once): the same document always gets
// the same errors.
func sortByPath(errs []CollectionError) {
	slices.SortFunc(errs, func(a, b CollectionError) int { return strings.Compare(a.Path, b.Path) })
}

func validateObject(n *schemaNode, m map[string]any, path []string, errs *[]CollectionError) {
	for k, v := range m {
		var sub *schemaNode
		if n.kind == kindMap {
			sub = n.elem
		} else if sub = n.fields[k]; sub == nil {
			continue
		}
		// path is a stack: only joined (copied) when reporting.
		if !validate(sub, v, append(path, k), errs) {
			delete(m, k)
		}
	}
}

// validate reports whether v may stay: false when v itself has the wrong
// type. Wrong members below v are removed from it.
func validate(n *schemaNode, v any, path []string, errs *[]CollectionError) bool {
	bad := func(got string) bool {
		*errs = append(*errs, CollectionError{
			Collector: CollectorSnapshot,
			Path:      strings.Join(path, "."),
			Reason:    fmt.Sprintf("want %s, got %s", n.kind, got),
		})
		return false
	}
	if v == nil {
		if n.nullable || n.kind == kindAny {
			return true
		}
		return bad("null")
	}
	switch n.kind {
	case kindAny:
		return true
	case kindObject, kindMap:
		m, ok := v.(map[string]any)
		if !ok {
			return bad(jsonType(v))
		}
		validateObject(n, m, path, errs)
		return true
	case kindList:
		l, ok := v.([]any)
		if !ok {
			return bad(jsonType(v))
		}
		for i, el := range l {
			// A wrong item cannot be cut out without shifting the indexes
			// evidence paths use: the list goes.
			if !validate(n.elem, el, append(path, strconv.Itoa(i)), errs) {
				return false
			}
		}
		return true
	case kindString:
		if _, ok := v.(string); !ok {
			return bad(jsonType(v))
		}
	case kindBool:
		if _, ok := v.(bool); !ok {
			return bad(jsonType(v))
		}
	case kindNumber:
		if !isNumber(v) {
			return bad(jsonType(v))
		}
	case kindInt:
		if !isNumber(v) {
			return bad(jsonType(v))
		}
		if !isInteger(v) {
			return bad(fmt.Sprintf("number %v", v))
		}
	}
	return true
}

func isNumber(v any) bool {
	switch v.(type) {
	case json.Number, float64, int, int64:
		return true
	}
	return false
}

func isInteger(v any) bool {
	switch x := v.(type) {
	case json.Number:
		_, err := strconv.ParseInt(string(x), 10, 64)
		return err == nil
	case float64:
		return x == float64(int64(x))
	}
	return true
}

func jsonType(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "list"
	case string:
		return "string"
	case bool:
		return "boolean"
	case json.Number, float64, int, int64:
		return "number"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// CheckFactPath reports whether a fact path (as rules declare them in
// custom.facts: "limits.effective.*.memlock", "pods") names something a
// snapshot can hold. "*" stands for any one element; map keys may contain
// dots ("sysctl.running.vm.max_map_count"); below a value of any type
// (a pod's Kubernetes JSON) every path is accepted.
func CheckFactPath(path string) error {
	if path == "" {
		return fmt.Errorf("empty fact path")
	}
	parts := strings.Split(path, ".")
	if slices.Contains(parts, "") {
		return fmt.Errorf("fact path %q has an empty element", path)
	}
	if !factPathOK(docSchema(), parts) {
		if _, ok := docSchema().fields[parts[0]]; !ok && parts[0] != "*" {
			return fmt.Errorf("fact path %q: no snapshot section %q (sections: %s)", path, parts[0], strings.Join(Sections(), ", "))
		}
		return fmt.Errorf("fact path %q names nothing a snapshot holds", path)
	}
	return nil
}

func factPathOK(n *schemaNode, parts []string) bool {
	if len(parts) == 0 {
		return true
	}
	switch n.kind {
	case kindAny:
		return true
	case kindObject:
		if parts[0] == "*" {
			for _, f := range n.fields {
				if factPathOK(f, parts[1:]) {
					return true
				}
			}
			return false
		}
		f, ok := n.fields[parts[0]]
		return ok && factPathOK(f, parts[1:])
	case kindMap:
		// A key may hold dots: try every way of cutting one off.
		for k := 1; k <= len(parts); k++ {
			if factPathOK(n.elem, parts[k:]) {
				return true
			}
			if parts[0] == "*" {
				break
			}
		}
		return false
	case kindList:
		if _, err := strconv.Atoi(parts[0]); err != nil && parts[0] != "*" {
			return false
		}
		return factPathOK(n.elem, parts[1:])
	}
	return false // below a scalar
}
