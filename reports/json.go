package reports

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"

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
// encoded a batch at a time on every CPU and written in order, while the
// next batches are read and the batch before is written: the report of a
// large fleet is written after its audit, and one core reading, encoding
// or writing it alone was a tenth of the run. At most jsonBatches batches
// are in memory.
func jsonFindings(jw *jsonWriter, r *audit.Result) {
	workers := runtime.GOMAXPROCS(0)
	free := make(chan *jsonBatchBuf, jsonBatches)
	for range jsonBatches {
		b := &jsonBatchBuf{items: make([]jsonItem, 0, jsonBatch), bufs: make([][]byte, workers)}
		for range workers {
			b.encs = append(b.encs, newFindingEncoder("    "))
		}
		free <- b
	}
	// Batches in order, each written once encoded, by one goroutine.
	pending := make(chan *jsonBatchBuf, jsonBatches)
	var failed atomic.Bool
	n := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Encodings of shared findings, split where the host goes.
		split := map[*policies.Finding][2][]byte{}
		for b := range pending {
			b.wg.Wait()
			if jw.err == nil {
				n = jw.writeBatch(b.items, split, n)
				if jw.err != nil {
					failed.Store(true)
				}
			}
			b.items = b.items[:0]
			free <- b
		}
	}()
	// The shared findings an item of a batch already splits.
	claimed := map[*policies.Finding]bool{}
	send := func(b *jsonBatchBuf) {
		for i := range b.items {
			it := &b.items[i]
			if it.shared != nil && !claimed[it.shared] {
				claimed[it.shared] = true
				it.owner = true
			}
		}
		b.encode(workers)
		pending <- b
	}
	b := <-free
	for f, shared := range r.All() {
		if failed.Load() {
			break
		}
		b.items = append(b.items, jsonItem{f: *f, shared: shared})
		if len(b.items) == jsonBatch {
			send(b)
			b = <-free
		}
	}
	if len(b.items) > 0 && !failed.Load() {
		send(b)
	}
	close(pending)
	<-done
	if jw.err != nil {
		return
	}
	if n == 0 {
		jw.printf("[]")
		return
	}
	jw.printf("\n  ]")
}

// jsonBatch is how many findings are encoded together, and jsonBatches
// how many batches are read, encoded or written at once.
const (
	jsonBatch   = 512
	jsonBatches = 4
)

// jsonItem is one finding of a batch and its encodings: the whole finding,
// or the host's name where its shared finding's split encoding (parts,
// when this item is the first to need them) goes.
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

// jsonBatchBuf is a batch and its workers' encoders and buffers, reused
// for a later batch once written.
type jsonBatchBuf struct {
	items []jsonItem
	encs  []*findingEncoder
	bufs  [][]byte
	wg    sync.WaitGroup
}

// encode starts encoding the batch, workers at once; b.wg is done when it
// is encoded.
func (b *jsonBatchBuf) encode(workers int) {
	workers = min(workers, len(b.items))
	b.wg.Add(workers)
	for w := range workers {
		go func() {
			defer b.wg.Done()
			// The batch's encodings go to one buffer per worker, kept
			// for the next batch.
			enc, buf := b.encs[w], b.bufs[w][:0]
			for i := w; i < len(b.items); i += workers {
				it := &b.items[i]
				it.start = len(buf)
				if it.shared == nil {
					out, err := enc.finding(buf, &it.f)
					if err != nil {
						it.err = err
						continue
					}
					buf = out
				} else {
					if it.owner {
						it.parts = splitFinding(enc, it.shared)
					}
					buf = appendJSONString(buf, it.f.Host)
				}
				it.end = len(buf)
			}
			for i := w; i < len(b.items); i += workers {
				it := &b.items[i]
				if it.err != nil {
					continue
				}
				if it.shared == nil {
					it.whole = buf[it.start:it.end]
				} else {
					it.host = buf[it.start:it.end]
				}
			}
			b.bufs[w] = buf
		}()
	}
}

// writeBatch writes an encoded batch (n findings written before it),
// returning the findings written. split holds the encodings of the shared
// findings split so far; it gains those the batch split.
func (jw *jsonWriter) writeBatch(batch []jsonItem, split map[*policies.Finding][2][]byte, n int) int {
	for i := range batch {
		if it := &batch[i]; it.owner {
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
