package collectors

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetaudit/fleetaudit/snapshot"
	"github.com/google/go-cmp/cmp"
)

// hwTestCollection is a collection over dir, for calling one family.
func hwTestCollection(dir string) *collection {
	return &collection{
		ctx:  context.Background(),
		src:  Dir(dir),
		snap: snapshot.New("test"),
		opts: Options{MaxFileSize: DefaultMaxFileSize},
	}
}

// hwWriteTree writes files under root; a value "-> target" makes a link.
func hwWriteTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		full := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		if target, ok := strings.CutPrefix(content, "-> "); ok {
			err = os.Symlink(target, full)
		} else {
			err = os.WriteFile(full, []byte(content), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// hwErrorStrings renders errors for comparison, checking each wraps ErrParse.
func hwErrorStrings(t *testing.T, errs []error) []string {
	t.Helper()
	var out []string
	for _, err := range errs {
		if !errors.Is(err, ErrParse) {
			t.Errorf("error %q does not wrap ErrParse", err)
		}
		out = append(out, err.Error())
	}
	return out
}

// A 5.15 kernel's /proc/meminfo, trimmed to the lines around the ones read.
const meminfoSample = `MemTotal:       2113413628 kB
MemFree:        2046872140 kB
Active(anon):    2108412 kB
VmallocTotal:   13743895347199 kB
CmaTotal:        6291456 kB
CmaFree:         6287104 kB
HugePages_Total:       0
HugePages_Free:        0
HugePages_Rsvd:        0
HugePages_Surp:        0
Hugepagesize:       2048 kB
Hugetlb:               0 kB
DirectMap1G:    2093957120 kB
`

func TestParseMeminfo(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want map[string]meminfoValue
		errs []string
	}{
		{
			name: "kernel sample",
			in:   meminfoSample,
			want: map[string]meminfoValue{
				"MemTotal": {2113413628, 1}, "MemFree": {2046872140, 2}, "Active(anon)": {2108412, 3},
				"VmallocTotal": {13743895347199, 4}, "CmaTotal": {6291456, 5}, "CmaFree": {6287104, 6},
				"HugePages_Total": {0, 7}, "HugePages_Free": {0, 8}, "HugePages_Rsvd": {0, 9},
				"HugePages_Surp": {0, 10}, "Hugepagesize": {2048, 11}, "Hugetlb": {0, 12},
				"DirectMap1G": {2093957120, 13},
			},
		},
		{
			name: "no CMA lines without CONFIG_CMA",
			in:   "MemTotal:       65842108 kB\nHugePages_Total:       4\n",
			want: map[string]meminfoValue{"MemTotal": {65842108, 1}, "HugePages_Total": {4, 2}},
		},
		{
			name: "first of a repeated name wins",
			in:   "CmaTotal: 1 kB\nCmaTotal: 2 kB\n",
			want: map[string]meminfoValue{"CmaTotal": {1, 1}},
		},
		{
			name: "bad lines are skipped and named",
			in:   "MemTotal:       lots kB\nCmaTotal 6291456 kB\nCmaFree: 12 kB\nHugePages_Total:   -3\nHugepagesize: 2048 MB\nDirectMap4k: 1 2 3\nHuge Pages: 1\n",
			want: map[string]meminfoValue{"CmaFree": {12, 3}},
			errs: []string{
				`parse error: line 1: MemTotal: "lots" is not a non-negative integer`,
				`parse error: line 2: want "Name: value", got "CmaTotal 6291456 kB"`,
				`parse error: line 4: HugePages_Total: "-3" is not a non-negative integer`,
				`parse error: line 5: Hugepagesize: want a number and an optional kB, got "2048 MB"`,
				`parse error: line 6: DirectMap4k: want a number and an optional kB, got "1 2 3"`,
				`parse error: line 7: want "Name: value", got "Huge Pages: 1"`,
			},
		},
		{
			name: "overflow",
			in:   "MemTotal: 99999999999999999999 kB\n",
			want: map[string]meminfoValue{},
			errs: []string{`parse error: line 1: MemTotal: "99999999999999999999" is not a non-negative integer`},
		},
		{name: "empty", in: "", want: map[string]meminfoValue{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, errs := parseMeminfo([]byte(tt.in))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("values (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.errs, hwErrorStrings(t, errs)); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseTHPMode(t *testing.T) {
	tests := []struct {
		in, want, err string
	}{
		{in: "always [madvise] never\n", want: "madvise"},
		{in: "[always] madvise never\n", want: "always"},
		{in: "always madvise [never]\n", want: "never"},
		// Per-size THP controls (6.8+) add "inherit".
		{in: "always [inherit] madvise never\n", want: "inherit"},
		{in: "always madvise never\n", err: `parse error: line 1: no [selected] choice in "always madvise never"`},
		{in: "always] [madvise\n", err: `parse error: line 1: no [selected] choice in "always] [madvise"`},
		{in: "[always] [never]", err: `parse error: line 1: more than one [selected] choice in "[always] [never]"`},
		{in: "[] madvise", err: `parse error: line 1: bad selected choice in "[] madvise"`},
		{in: "", err: `parse error: line 1: no [selected] choice in ""`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseTHPMode(tt.in)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err || !errors.Is(err, ErrParse) {
					t.Fatalf("parseTHPMode(%q) error = %v, want %s", tt.in, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("parseTHPMode(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestCollectMemory(t *testing.T) {
	t.Run("no CONFIG_CMA", func(t *testing.T) {
		dir := t.TempDir()
		hwWriteTree(t, dir, map[string]string{
			"proc/meminfo": "MemTotal:       65842108 kB\nHugePages_Total:       0\nHugepagesize:       2048 kB\n",
		})
		c := hwTestCollection(dir)
		collectMemory(c)
		want := snapshot.Memory{Present: true, MemTotalKB: 65842108, HugepagesizeKB: 2048}
		if diff := cmp.Diff(want, c.snap.Memory); diff != "" {
			t.Errorf("memory (-want +got):\n%s", diff)
		}
		if got := c.snap.Sources["memory.cma_total_kb"].String(); got != "default: no CmaTotal line in /proc/meminfo" {
			t.Errorf("cma_total_kb source = %q", got)
		}
		if got := c.snap.Sources["memory.cma_present"].String(); got != "/proc/meminfo" {
			t.Errorf("cma_present source = %q", got)
		}
	})
	t.Run("config repo root", func(t *testing.T) {
		c := hwTestCollection(t.TempDir())
		collectMemory(c)
		if diff := cmp.Diff(snapshot.Memory{}, c.snap.Memory); diff != "" || len(c.snap.Errors) > 0 {
			t.Errorf("memory (-want +got):\n%s\nerrors: %v", diff, c.snap.Errors)
		}
	})
}

func FuzzMeminfo(f *testing.F) {
	f.Add([]byte(meminfoSample))
	for _, root := range []string{"gpu-node", "web-node", "dropins", "rhel-node", "garbage"} {
		if data, err := os.ReadFile(filepath.Join("..", "testdata", "hosts", root, "proc", "meminfo")); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("MemTotal:\nCmaTotal: kB\n:\n::: 1\nX: 1 kB kB\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		values, errs := parseMeminfo(data)
		lines := bytes.Count(data, []byte("\n")) + 1
		for name, v := range values {
			if v.Line < 1 || v.Line > lines {
				t.Errorf("%s: line %d outside 1..%d", name, v.Line, lines)
			}
			if v.Value < 0 {
				t.Errorf("%s: negative value %d", name, v.Value)
			}
			if name == "" || strings.ContainsAny(name, " \t:\n") {
				t.Errorf("bad name %q", name)
			}
		}
		for _, err := range errs {
			if !errors.Is(err, ErrParse) || !strings.HasPrefix(err.Error(), "parse error: line ") {
				t.Errorf("error %q: want an ErrParse naming its line", err)
			}
		}
	})
}

func FuzzTHPMode(f *testing.F) {
	for _, s := range []string{"always [madvise] never\n", "[always] madvise never\n", "always madvise [never]\n", "always [inherit] madvise never\n", "always madvise never", "[", "]["} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		mode, err := parseTHPMode(in)
		if err != nil {
			if !errors.Is(err, ErrParse) || mode != "" {
				t.Fatalf("parseTHPMode(%q) = %q, %v", in, mode, err)
			}
			return
		}
		if mode == "" || !strings.Contains(in, "["+mode+"]") || strings.ContainsAny(mode, " \t[]") {
			t.Fatalf("parseTHPMode(%q) = %q: not the bracketed word", in, mode)
		}
	})
}
