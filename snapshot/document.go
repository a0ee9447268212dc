package snapshot

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// Document is a collected snapshot as a document: exactly what a file of it
// would be read as (without Validate: a Snapshot has its types already).
// It is built from the Go values directly, as encoding/json would write
// them (json tags, omitempty, text marshalers, invalid UTF-8 replaced byte
// by byte, null for a nil map or list) and DecodeJSON read them back,
// without the bytes in between; a snapshot that holds fields of a newer
// schema takes that round trip instead.
func Document(s *Snapshot) (map[string]any, error) {
	if len(s.unknown) > 0 || s.Source.Image {
		return roundTrip(s)
	}
	v, err := toDocument(reflect.ValueOf(snapshotFields(*s)))
	if err != nil {
		return nil, fmt.Errorf("snapshot of %s as a document: %w", s.Host, err)
	}
	return v.(map[string]any), nil
}

// roundTrip is Document through the JSON bytes.
func roundTrip(s *Snapshot) (map[string]any, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := DecodeJSON(b, &doc); err != nil {
		return nil, err
	}
	return doc, nil
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	numberType    = reflect.TypeFor[json.Number]()
)

func toDocument(v reflect.Value) (any, error) {
	t := v.Type()
	switch {
	case t == numberType:
		return v.Interface().(json.Number), nil
	case t.Implements(jsonMarshaler) && (t.Kind() != reflect.Pointer || !v.IsNil()):
		// time.Time: its own JSON, read back as a document reads it.
		b, err := v.Interface().(json.Marshaler).MarshalJSON()
		if err != nil {
			return nil, err
		}
		var out any
		if err := DecodeJSON(b, &out); err != nil {
			return nil, err
		}
		return out, nil
	case t.Implements(textMarshaler) && (t.Kind() != reflect.Pointer || !v.IsNil()):
		b, err := v.Interface().(encoding.TextMarshaler).MarshalText()
		if err != nil {
			return nil, err
		}
		return validUTF8(string(b)), nil
	}
	switch t.Kind() {
	case reflect.String:
		return validUTF8(v.String()), nil
	case reflect.Bool:
		return v.Bool(), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return json.Number(strconv.FormatInt(v.Int(), 10)), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return json.Number(strconv.FormatUint(v.Uint(), 10)), nil
	case reflect.Float32, reflect.Float64:
		// encoding/json's own formatting (and its error for NaN and ±Inf).
		b, err := json.Marshal(v.Interface())
		if err != nil {
			return nil, err
		}
		return json.Number(b), nil
	case reflect.Interface, reflect.Pointer:
		if v.IsNil() {
			return nil, nil
		}
		return toDocument(v.Elem())
	case reflect.Map:
		if v.IsNil() {
			return nil, nil
		}
		if t.Key().Kind() != reflect.String {
			return nil, fmt.Errorf("unsupported map key type %s", t.Key())
		}
		m := make(map[string]any, v.Len())
		for it := v.MapRange(); it.Next(); {
			x, err := toDocument(it.Value())
			if err != nil {
				return nil, err
			}
			m[validUTF8(it.Key().String())] = x
		}
		return m, nil
	case reflect.Slice:
		if v.IsNil() {
			return nil, nil
		}
		fallthrough
	case reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return nil, fmt.Errorf("unsupported byte slice %s", t)
		}
		l := make([]any, v.Len())
		for i := range l {
			x, err := toDocument(v.Index(i))
			if err != nil {
				return nil, err
			}
			l[i] = x
		}
		return l, nil
	case reflect.Struct:
		fields := structFields(t)
		m := make(map[string]any, len(fields))
		for _, f := range fields {
			fv := v.FieldByIndex(f.index)
			if f.omitEmpty && isEmpty(fv) {
				continue
			}
			x, err := toDocument(fv)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f.name, err)
			}
			m[f.name] = x
		}
		return m, nil
	}
	return nil, fmt.Errorf("unsupported type %s", t)
}

// field is one JSON member of a struct type.
type field struct {
	name      string
	index     []int
	omitEmpty bool
}

var fieldCache sync.Map // reflect.Type -> []field

// structFields lists a struct's JSON members as encoding/json does:
// tagged names, embedded structs flattened, "-" and unexported skipped.
func structFields(t reflect.Type) []field {
	if f, ok := fieldCache.Load(t); ok {
		return f.([]field)
	}
	var out []field
	var walk func(t reflect.Type, index []int)
	walk = func(t reflect.Type, index []int) {
		for i := 0; i < t.NumField(); i++ {
			sf := t.Field(i)
			tag := sf.Tag.Get("json")
			name, opts, _ := strings.Cut(tag, ",")
			if tag == "-" || (!sf.IsExported() && !sf.Anonymous) {
				continue
			}
			idx := append(index[:len(index):len(index)], i)
			if sf.Anonymous && name == "" && sf.Type.Kind() == reflect.Struct {
				walk(sf.Type, idx)
				continue
			}
			if !sf.IsExported() {
				continue
			}
			if name == "" {
				name = sf.Name
			}
			out = append(out, field{name: name, index: idx, omitEmpty: hasOption(opts, "omitempty")})
		}
	}
	walk(t, nil)
	fieldCache.Store(t, out)
	return out
}

func hasOption(opts, want string) bool {
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		if o == want {
			return true
		}
	}
	return false
}

// isEmpty is encoding/json's omitempty test.
func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}

// validUTF8 is s as encoding/json writes it: each byte that is not part of
// valid UTF-8 becomes U+FFFD.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}
