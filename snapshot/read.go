package snapshot

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/fleetaudit/fleetaudit/internal/safeio"
)

// A snapshot reaches the policy engine as a document: its generic JSON form
// (objects as map[string]any, lists as []any, numbers as json.Number, so
// they stay exact, as OPA reads them). Every reader makes it the same way:
// ReadDocument for a file, DecodeDocument for bytes (a config repo's
// baseline), Document for a snapshot just collected; each goes through
// DecodeJSON.

// MaxBytes bounds the size of one snapshot file ReadDocument reads.
const MaxBytes = 64 << 20

// DecodeJSON decodes one JSON value from b into v, numbers as json.Number,
// refusing trailing data. It is the one decoder of snapshot documents.
func DecodeJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("unexpected data after the JSON document")
	}
	return nil
}

// DecodeDocument reads a snapshot's JSON into its document. The schema is
// checked; members of the wrong type are removed and become entries of the
// document's errors (see Validate), so the host is reported, never dropped.
func DecodeDocument(b []byte) (map[string]any, error) {
	return new(Decoder).Document(b)
}

// A Decoder is DecodeDocument for one goroutine that decodes many
// snapshots: their repeated short strings (keys, enum-like values) share
// one copy.
type Decoder struct {
	strs stringTable
}

// Document is DecodeDocument.
func (d *Decoder) Document(b []byte) (map[string]any, error) {
	v, err := decodeAny(b, &d.strs)
	if err != nil {
		return nil, fmt.Errorf("not a JSON snapshot: %w", err)
	}
	doc, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("not a JSON snapshot: the document is %s, not an object", kindOf(v))
	}
	schema, _ := doc["schema"].(string)
	if err := CheckSchema(schema); err != nil {
		return nil, err
	}
	if bad := Validate(doc); len(bad) > 0 {
		errs, _ := doc["errors"].([]any)
		for _, e := range bad {
			errs = append(errs, map[string]any{"collector": e.Collector, "path": e.Path, "reason": e.Reason})
		}
		doc["errors"] = errs
	}
	return doc, nil
}

// ReadDocument reads a snapshot file into its document (see DecodeDocument).
// Only a regular file is read, and at most MaxBytes of it (a FIFO or a link
// to /dev/zero is an error, not a hang). An error does not repeat the file
// name: callers name the file.
func ReadDocument(file string) (map[string]any, error) {
	b, err := readCapped(file)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, err
	}
	return DecodeDocument(b)
}

// ReadFile reads a snapshot file's bytes as ReadDocument does (a regular
// file, at most MaxBytes), into buf's storage when the file fits in it, so
// a worker reading many snapshots reuses one buffer. Errors are as
// ReadDocument's.
func ReadFile(file string, buf []byte) ([]byte, error) {
	b, err := readInto(file, buf)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, err
	}
	return b, nil
}

func readCapped(file string) ([]byte, error) { return readInto(file, nil) }

// readInto reads a regular file of at most MaxBytes. The buffer is sized
// from fstat once the file is known to be regular (a snapshot's size is
// true, unlike /proc's), so a fleet's worth of reads does not regrow it
// from nothing; the cap holds whatever the size says.
func readInto(file string, into []byte) ([]byte, error) {
	if b, ok, err := readRegular(file, into); ok {
		return b, err
	}
	f, err := safeio.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := bytes.NewBuffer(into[:0])
	if st, err := f.Stat(); err == nil && st.Size() <= MaxBytes {
		buf.Grow(int(st.Size()) + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(io.LimitReader(f, MaxBytes+1)); err != nil {
		return nil, err
	}
	if buf.Len() > MaxBytes {
		return nil, fmt.Errorf("%w: over the %d byte limit", safeio.ErrTooLarge, MaxBytes)
	}
	return buf.Bytes(), nil
}

// kindOf names a decoded JSON value's type for messages.
func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "a list"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number, float64:
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}
