package snapshot

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetaudit/fleetaudit/internal/safeio"
)

func TestReadDocumentRefuses(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	big := filepath.Join(dir, "big.json")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxBytes + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero.json")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		file, want string
		is         error
	}{
		{big, "over the", safeio.ErrTooLarge},
		{fifo, "not a regular file", safeio.ErrNotRegular},
		{zero, "not a regular file", safeio.ErrNotRegular},
		{write("null.json", "null"), "not a JSON snapshot: the document is null, not an object", nil},
		{write("two.json", "{} {}"), "unexpected data after", nil},
		{write("list.json", "[1]"), "the document is a list, not an object", nil},
		{write("noschema.json", `{}`), `no "schema" field`, ErrSchema},
		{write("future.json", `{"schema":"fleetaudit.snapshot/v2"}`), "newer fleetaudit", ErrSchema},
		{filepath.Join(dir, "missing.json"), "no such file", os.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.file), func(t *testing.T) {
			done := make(chan error, 1)
			go func() {
				_, err := ReadDocument(tt.file)
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(time.Minute): // a hang guard, not a timing assertion
				t.Fatal("ReadDocument blocked")
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("err = %v, want errors.Is %v", err, tt.is)
			}
			if strings.Contains(err.Error(), tt.file) {
				t.Errorf("err = %v names the file: the caller does", err)
			}
		})
	}
}

// Numbers stay exact (json.Number): a float64 would round 2^53+1 and turn
// 8 into 8.0-as-float, which OPA and the evidence then see differently from
// a snapshot read elsewhere.
func TestDecodeDocumentKeepsNumbersAndValidates(t *testing.T) {
	doc, err := DecodeDocument([]byte(`{"schema":"fleetaudit.snapshot/v1","host":"h",
		"memory":{"mem_total_kb":9007199254740993},
		"boot":{"running":{"params":{"hugetlb_cma":6}}},
		"errors":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := Lookup(doc, "memory.mem_total_kb"); v != json.Number("9007199254740993") {
		t.Errorf("mem_total_kb = %#v, want the exact json.Number", v)
	}
	if _, ok := Lookup(doc, "boot.running.params.hugetlb_cma"); ok {
		t.Error("a member of the wrong type stayed")
	}
	want := []any{map[string]any{"collector": CollectorSnapshot, "path": "boot.running.params.hugetlb_cma", "reason": "want string, got number"}}
	if diff := cmp.Diff(want, doc["errors"]); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

// A collected snapshot reaches the engine as the document its file would be
// read as: the example fleet's snapshots and the collectors' goldens,
// decoded and converted, equal the documents read from their files.
func TestDocumentIsWhatItsFileReads(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "examples", "fleet", "snapshots", "*.json"))
	golden, _ := filepath.Glob(filepath.Join("..", "collectors", "testdata", "golden", "*.json"))
	files = append(files, golden...)
	if len(files) < 5 {
		t.Fatalf("found %d snapshot files", len(files))
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			s, err := DecodeBytes(data)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Document(s)
			if err != nil {
				t.Fatal(err)
			}
			want, err := ReadDocument(file)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Document differs from the file's document (-file +Document):\n%s", diff)
			}
		})
	}
}

// ReadFile reads into the buffer given when the file fits, grows past it
// when not, and refuses what ReadDocument refuses, without naming the file.
func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	content := strings.Repeat(`{"schema":"fleetaudit.snapshot/v1"}`, 100)
	file := filepath.Join(dir, "s.json")
	if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{0, 10, len(content), len(content) + 1, 1 << 20} {
		buf := make([]byte, 0, size)
		b, err := ReadFile(file, buf)
		if err != nil || string(b) != content {
			t.Fatalf("buffer of %d: %d bytes, %v", size, len(b), err)
		}
		if size > len(content) && &b[:1][0] != &buf[:1][0] {
			t.Errorf("buffer of %d: not read into it", size)
		}
	}
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, MaxBytes+1); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]error{fifo: safeio.ErrNotRegular, dir: safeio.ErrNotRegular, big: safeio.ErrTooLarge, filepath.Join(dir, "no.json"): os.ErrNotExist} {
		_, err := ReadFile(file, nil)
		if !errors.Is(err, want) || strings.Contains(err.Error(), file) {
			t.Errorf("%s: err = %v, want %v without the file's name", filepath.Base(file), err, want)
		}
	}
}
