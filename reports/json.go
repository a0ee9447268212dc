package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/fleetaudit/fleetaudit/audit"
)

// jsonRenderer writes the fleetaudit.findings/v1 document. rule, severity,
// host, fleet and evidence[].source are a stable contract. Findings are
// encoded one at a time, so a large fleet's report is never in memory
// twice; the bytes are those of an indented json.Encoder.
type jsonRenderer struct{}

func (jsonRenderer) Render(w io.Writer, r *audit.Result, _ Options) error {
	jw := &jsonWriter{w: w}
	jw.printf("{\n  \"schema\": ")
	jw.value(r.Schema, "  ")
	jw.printf(",\n  \"findings\": ")
	jsonArray(jw, r.Findings)
	jw.printf(",\n  \"errors\": ")
	jsonArray(jw, r.Errors)
	jw.printf(",\n  \"summary\": ")
	jw.value(r.Summary, "  ")
	if r.Waivers != nil {
		jw.printf(",\n  \"waivers\": ")
		jw.value(r.Waivers, "  ")
	}
	jw.printf("\n}\n")
	return jw.err
}

// jsonArray writes items as a JSON array indented one level under a field
// of the top-level object.
func jsonArray[T any](jw *jsonWriter, items []T) {
	if len(items) == 0 {
		jw.printf("[]")
		return
	}
	jw.printf("[")
	for i := range items {
		if i > 0 {
			jw.printf(",")
		}
		jw.printf("\n    ")
		jw.value(&items[i], "    ")
	}
	jw.printf("\n  ]")
}

// jsonWriter keeps the first write error, so rendering reads straight.
type jsonWriter struct {
	w   io.Writer
	buf bytes.Buffer
	err error
}

func (jw *jsonWriter) printf(format string, args ...any) {
	if jw.err == nil {
		_, jw.err = fmt.Fprintf(jw.w, format, args...)
	}
}

// value writes v as an indented json.Encoder would at this depth, without
// escaping HTML (messages quote shell snippets with < and >).
func (jw *jsonWriter) value(v any, prefix string) {
	if jw.err != nil {
		return
	}
	jw.buf.Reset()
	enc := json.NewEncoder(&jw.buf)
	enc.SetIndent(prefix, "  ")
	enc.SetEscapeHTML(false)
	if jw.err = enc.Encode(v); jw.err != nil {
		return
	}
	_, jw.err = jw.w.Write(EscapeJSON(bytes.TrimSuffix(jw.buf.Bytes(), []byte("\n"))))
}
