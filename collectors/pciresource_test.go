package collectors

import (
	"errors"
	"testing"
)

// An H100's resource file: BAR0 16 MiB, BAR1 128 GiB (64-bit, so line 3
// is empty), BAR3 32 MiB.
const h100Resource = "0x00000000a0000000 0x00000000a0ffffff 0x0000000000040200\n" +
	"0x0000220000000000 0x0000221fffffffff 0x000000000014220c\n" +
	"0x0000000000000000 0x0000000000000000 0x0000000000000000\n" +
	"0x0000222000000000 0x0000222001ffffff 0x000000000014220c\n" +
	"0x0000000000000000 0x0000000000000000 0x0000000000000000\n" +
	"0x0000000000000000 0x0000000000000000 0x0000000000000000\n" +
	"0x0000000000000000 0x0000000000000000 0x0000000000000000\n"

func TestParsePCIResourceSize(t *testing.T) {
	for bar, want := range map[int]int64{0: 16 << 20, 1: 128 << 30, 2: 0, 3: 32 << 20} {
		if got, err := parsePCIResourceSize([]byte(h100Resource), bar); err != nil || got != want {
			t.Errorf("bar %d: %d, %v; want %d", bar, got, err, want)
		}
	}
	for _, bad := range []string{"", "0x1 0x2\n0x1 0x2\n", "0x0 0x0 0x0\n1000 2000 0\n", "0x0 0x0 0x0\n0x2000 0x1000 0x0\n", "0x0 0x0 0x0\n0xzz 0x1 0x0\n"} {
		if _, err := parsePCIResourceSize([]byte(bad), 1); !errors.Is(err, ErrParse) {
			t.Errorf("%q: error %v, want ErrParse", bad, err)
		}
	}
}

func FuzzPCIResource(f *testing.F) {
	f.Add(h100Resource)
	f.Add("0x0 0x0 0x0\n0x1000 0x1fff 0x200\n")
	f.Add("garbage\n")
	f.Fuzz(func(t *testing.T, text string) {
		if n, err := parsePCIResourceSize([]byte(text), 1); err == nil && n < 0 {
			t.Errorf("size %d", n)
		}
	})
}
