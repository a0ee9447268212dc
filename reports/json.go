package reports

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/fleetaudit/fleetaudit/configrepo"
	"github.com/fleetaudit/fleetaudit/policies"
)

// jsonRenderer writes the fleetaudit.findings/v1 document. rule, severity,
// host, fleet and evidence[].source are a stable contract. Findings are
// encoded one at a time as audit.Result.All yields them, so a large
// fleet's report is never in memory; a finding many hosts share is encoded
// once, with each host's name put in its place. The bytes are those of an
// indented json.Encoder.
type jsonFormat struct{}

func (jsonFormat) Name() string       { return "json" }
func (jsonFormat) Streams() bool      { return true }
func (jsonFormat) NeedsCatalog() bool { return false }
func (jsonFormat) Compliance() bool   { return false }

func (jsonFormat) Render(w io.Writer, r *audit.Result, _ Options) error {
	bw := bufio.NewWriterSize(w, 256<<10)
	jw := &jsonWriter{w: bw}
	jw.printf("{\n  \"schema\": ")
	jw.value(r.Schema, "  ")
	jw.printf(",\n  \"findings\": ")
	jsonFindings(jw, r)
	jw.printf(",\n  \"errors\": ")
	jsonArray(jw, r.Errors)
	jw.printf(",\n  \"summary\": ")
	jw.value(r.Summary, "  ")
	if r.Waivers != nil {
		jw.printf(",\n  \"waivers\": ")
		jw.value(r.Waivers, "  ")
	}
	jw.printf("\n}\n")
	if jw.err == nil {
		jw.err = bw.Flush()
	}
	return jw.err
}

// jsonFindings writes the findings array as jsonArray would. Findings are
// encoded a batch at a time on every CPU and written in order: the report
// of a large fleet is written after its audit, and one core encoding it
// alone was a tenth of the run.
func jsonFindings(jw *jsonWriter, r *audit.Result) {
	// Encodings of shared findings, split where the host goes.
	split := map[*policies.Finding][2][]byte{}
	batch := make([]jsonItem, 0, jsonBatch)
	n := 0
	for f, shared := range r.All() {
		if jw.err != nil {
			return
		}
		batch = append(batch, jsonItem{f: *f, shared: shared})
		if len(batch) == jsonBatch {
			n = jw.findings(batch, split, n)
			batch = batch[:0]
		}
	}
	n = jw.findings(batch, split, n)
	if jw.err != nil {
		return
	}
	if n == 0 {
		jw.printf("[]")
		return
	}
	jw.printf("\n  ]")
}

// jsonBatch is how many findings are encoded together.
const jsonBatch = 512

// jsonItem is one finding of a batch and its encodings: the whole finding,
// or the host's name where its shared finding's split encoding (parts,
// when this item is the first of the batch to need them) goes.
type jsonItem struct {
	f      policies.Finding
	shared *policies.Finding
	whole  []byte
	host   []byte
	parts  [2][]byte
	owner  bool
	err    error
	// start and end are whole's or host's place in its worker's buffer.
	start, end int
}

// findings encodes a batch (n findings written before it) and writes it,
// returning the findings written.
func (jw *jsonWriter) findings(batch []jsonItem, split map[*policies.Finding][2][]byte, n int) int {
	if len(batch) == 0 || jw.err != nil {
		return n
	}
	// The first item of each shared finding not split yet splits it.
	owned := map[*policies.Finding]bool{}
	for i := range batch {
		it := &batch[i]
		if it.shared == nil {
			continue
		}
		if _, ok := split[it.shared]; !ok && !owned[it.shared] {
			owned[it.shared] = true
			it.owner = true
		}
	}
	workers := min(runtime.GOMAXPROCS(0), len(batch))
	for len(jw.bufs) < workers {
		jw.bufs = append(jw.bufs, nil)
		jw.encs = append(jw.encs, newFindingEncoder("    "))
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The batch's encodings go to one buffer per worker, kept
			// for the next batch.
			enc, buf := jw.encs[w], jw.bufs[w][:0]
			for i := w; i < len(batch); i += workers {
				it := &batch[i]
				it.start = len(buf)
				if it.shared == nil {
					b, err := enc.finding(buf, &it.f)
					if err != nil {
						it.err = err
						continue
					}
					buf = b
				} else {
					if it.owner {
						it.parts = splitFinding(enc, it.shared)
					}
					buf = appendJSONString(buf, it.f.Host)
				}
				it.end = len(buf)
			}
			for i := w; i < len(batch); i += workers {
				it := &batch[i]
				if it.err != nil {
					continue
				}
				if it.shared == nil {
					it.whole = buf[it.start:it.end]
				} else {
					it.host = buf[it.start:it.end]
				}
			}
			jw.bufs[w] = buf
		}()
	}
	wg.Wait()
	for i := range batch {
		it := &batch[i]
		if it.owner {
			split[it.shared] = it.parts
		}
	}
	for i := range batch {
		it := &batch[i]
		if jw.err != nil {
			return n
		}
		if n == 0 {
			jw.printf("[")
		} else {
			jw.printf(",")
		}
		n++
		jw.printf("\n    ")
		switch parts := split[it.shared]; {
		case it.err != nil:
			jw.err = it.err
		case it.shared == nil:
			jw.write(it.whole)
		case parts[0] == nil:
			jw.value(&it.f, "    ")
		default:
			jw.write(parts[0])
			jw.write(it.host)
			jw.write(parts[1])
		}
	}
	return n
}

// encodeIndented is v as jsonWriter.value writes it at this depth.
func encodeIndented(v any, prefix string) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent(prefix, "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return EscapeJSON(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))), nil
}

// splitFinding is f's encoding before and after its host's value; nil
// parts when f cannot be encoded.
func splitFinding(enc *findingEncoder, f *policies.Finding) [2][]byte {
	head := enc.head(nil, f)
	tail, err := enc.tail(nil, f)
	if err != nil {
		return [2][]byte{}
	}
	return [2][]byte{head, tail}
}

func (jw *jsonWriter) write(b []byte) {
	if jw.err == nil {
		_, jw.err = jw.w.Write(b)
	}
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
	// The findings' encoders and buffers, one per worker.
	encs []*findingEncoder
	bufs [][]byte
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

// gateJSON writes the fleetaudit.gate/v1 document.
func (jsonFormat) RenderGate(w io.Writer, r *configrepo.Result, _ Options) error {
	return writeJSON(w, r, false)
}

// writeJSON writes v as indented JSON (see EscapeJSON), with <, > and &
// escaped when escapeHTML.
func writeJSON(w io.Writer, v any, escapeHTML bool) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(escapeHTML)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(EscapeJSON(buf.Bytes()))
	return err
}
