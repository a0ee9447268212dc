package snapshot

import (
	"bytes"
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
)

// unknownField is a JSON member this build has no field for, kept with the
// path of the object that held it so a re-encode puts it back in place.
type unknownField struct {
	path  []string
	key   string
	value json.RawMessage
}

// findUnknown walks raw JSON alongside the Go type that decoded it and lists
// object members the type does not declare, at any depth.
func findUnknown(t reflect.Type, raw json.RawMessage, path []string, out *[]unknownField) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(textUnmarshaler) {
		return // a text value (Provenance) has no members
	}
	switch t.Kind() {
	case reflect.Struct:
		var members map[string]json.RawMessage
		if json.Unmarshal(raw, &members) != nil {
			return
		}
		fields := jsonFields(t)
		for key, value := range members {
			ft, ok := fields[key]
			if !ok {
				*out = append(*out, unknownField{path: path, key: key, value: value})
				continue
			}
			findUnknown(ft, value, append(path[:len(path):len(path)], key), out)
		}
	case reflect.Map:
		if !containsStruct(t.Elem()) {
			return
		}
		var members map[string]json.RawMessage
		if json.Unmarshal(raw, &members) != nil {
			return
		}
		for key, value := range members {
			findUnknown(t.Elem(), value, append(path[:len(path):len(path)], key), out)
		}
	case reflect.Slice:
		if !containsStruct(t.Elem()) {
			return
		}
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) != nil {
			return
		}
		for i, item := range items {
			findUnknown(t.Elem(), item, append(path[:len(path):len(path)], strconv.Itoa(i)), out)
		}
	}
}

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

func containsStruct(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind() == reflect.Struct && !reflect.PointerTo(t).Implements(textUnmarshaler)
}

// jsonFields maps JSON member names to field types, flattening embedded
// structs as encoding/json does.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	fields := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		if f.Anonymous && name == "" {
			for k, v := range jsonFields(f.Type) {
				fields[k] = v
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = f.Type
	}
	return fields
}

// withUnknown re-inserts unknown members into an encoded document. A member
// whose parent object no longer exists is dropped with it.
func withUnknown(known []byte, unknown []unknownField) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(known))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	for _, u := range unknown {
		parent := doc
		for _, p := range u.path {
			switch node := parent.(type) {
			case map[string]any:
				parent = node[p]
			case []any:
				i, err := strconv.Atoi(p)
				if err != nil || i >= len(node) {
					parent = nil
				} else {
					parent = node[i]
				}
			default:
				parent = nil
			}
		}
		if obj, ok := parent.(map[string]any); ok {
			if _, taken := obj[u.key]; !taken {
				obj[u.key] = u.value
			}
		}
	}
	return json.Marshal(doc)
}
