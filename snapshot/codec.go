package snapshot

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// ErrSchema is returned (wrapped) when a document is not a snapshot this
// build can read.
var ErrSchema = errors.New("unsupported snapshot schema")

// snapshotFields is Snapshot without its methods, so the codec can use the
// default struct encoding.
type snapshotFields Snapshot

// New returns an empty snapshot with the current schema and initialised maps.
func New(host string) *Snapshot {
	return &Snapshot{
		Schema:  Schema,
		Host:    host,
		Sources: map[string]Provenance{},
		Errors:  []CollectionError{},
	}
}

// MarshalJSON writes the snapshot, including any fields that were read from
// a newer schema and not understood, at any depth.
func (s Snapshot) MarshalJSON() ([]byte, error) {
	known, err := json.Marshal(snapshotFields(s))
	if err != nil {
		return nil, err
	}
	if s.Source.Image {
		// An image's running state was not read: left out, not written empty.
		var doc map[string]any
		if err := DecodeJSON(known, &doc); err != nil {
			return nil, err
		}
		dropRunning(doc)
		if known, err = json.Marshal(doc); err != nil {
			return nil, err
		}
	}
	if len(s.unknown) == 0 {
		return known, nil
	}
	return withUnknown(known, s.unknown)
}

// UnmarshalJSON reads a snapshot, checking its schema first and keeping
// fields it does not know.
func (s *Snapshot) UnmarshalJSON(data []byte) error {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(data, &all); err != nil {
		return err
	}
	var schema string
	if raw, ok := all["schema"]; ok {
		if err := json.Unmarshal(raw, &schema); err != nil {
			return fmt.Errorf("%w: \"schema\" is not a string", ErrSchema)
		}
	}
	if err := CheckSchema(schema); err != nil {
		return err
	}
	var fields snapshotFields
	// Through the one decoder: pods (Kubernetes JSON) keep exact numbers.
	if err := DecodeJSON(data, &fields); err != nil {
		return err
	}
	*s = Snapshot(fields)
	findUnknown(reflect.TypeOf(fields), data, nil, &s.unknown)
	if s.Sources == nil {
		s.Sources = map[string]Provenance{}
	}
	if s.Errors == nil {
		s.Errors = []CollectionError{}
	}
	return nil
}

// Unknown returns the fact paths of fields kept from a newer schema.
func (s *Snapshot) Unknown() []string {
	paths := make([]string, 0, len(s.unknown))
	for _, u := range s.unknown {
		paths = append(paths, strings.Join(append(u.path[:len(u.path):len(u.path)], u.key), "."))
	}
	slices.Sort(paths)
	return paths
}

// CheckSchema accepts "fleetaudit.snapshot/v1" and minor revisions of it
// ("v1.2"), and refuses anything else with an error that says what to do.
func CheckSchema(schema string) error {
	if schema == "" {
		return fmt.Errorf("%w: no \"schema\" field; is this a fleetaudit snapshot?", ErrSchema)
	}
	rest, ok := strings.CutPrefix(schema, SchemaPrefix+"v")
	if !ok {
		return fmt.Errorf("%w: %q is not a fleetaudit snapshot schema (want %s)", ErrSchema, schema, Schema)
	}
	majorText, _, _ := strings.Cut(rest, ".")
	major, err := strconv.Atoi(majorText)
	if err != nil || major < 1 {
		return fmt.Errorf("%w: malformed version in %q (want %s)", ErrSchema, schema, Schema)
	}
	if major > MajorVersion {
		return fmt.Errorf("%w: %q was written by a newer fleetaudit; this build reads v%d: upgrade fleetaudit", ErrSchema, schema, MajorVersion)
	}
	if major < MajorVersion {
		return fmt.Errorf("%w: %q is older than this build supports (v%d): re-collect the host", ErrSchema, schema, MajorVersion)
	}
	return nil
}

// Encode writes one snapshot as indented JSON followed by a newline.
func Encode(w io.Writer, s *Snapshot) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(s)
}

// Decode reads one snapshot, refusing trailing data after the document.
func Decode(r io.Reader) (*Snapshot, error) {
	dec := json.NewDecoder(r)
	var s Snapshot
	if err := dec.Decode(&s); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("unexpected data after the snapshot document")
	}
	return &s, nil
}

// DecodeBytes is Decode over a byte slice.
func DecodeBytes(b []byte) (*Snapshot, error) {
	return Decode(bytes.NewReader(b))
}
