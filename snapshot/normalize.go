package snapshot

import "reflect"

var provenanceType = reflect.TypeFor[Provenance]()

// Normalize replaces nil maps and slices in every section with empty ones, so
// the JSON form has one shape whatever a host lacked: policies and scripts
// see [] and {} rather than null.
func (s *Snapshot) Normalize() {
	fillEmpty(reflect.ValueOf(s).Elem())
}

func fillEmpty(v reflect.Value) {
	if v.Type() == provenanceType {
		return // written as text: it has no JSON shape to fill
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if f := v.Field(i); f.CanSet() {
				fillEmpty(f)
			}
		}
	case reflect.Map:
		if v.IsNil() {
			v.Set(reflect.MakeMap(v.Type()))
		}
		// Values in maps are not addressable; maps of structs are filled
		// by their collectors.
	case reflect.Slice:
		if v.IsNil() {
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
			return
		}
		for i := 0; i < v.Len(); i++ {
			fillEmpty(v.Index(i))
		}
	case reflect.Pointer:
		if !v.IsNil() {
			fillEmpty(v.Elem())
		}
	}
}
