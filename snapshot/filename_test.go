package snapshot

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func TestFileNameStaysInItsDirectory(t *testing.T) {
	for _, host := range []string{"gpu-a-001", "web-02.example.com", "fe80::1", ".hidden", "ünïcode", strings.Repeat("a", 250)} {
		name, err := FileName(host)
		if err != nil || name != host+".json" {
			t.Errorf("FileName(%q) = %q, %v", host, name, err)
		}
		if filepath.Dir(filepath.Join("/out", name)) != "/out" {
			t.Errorf("FileName(%q) = %q leaves /out", host, name)
		}
	}
	for _, host := range []string{"", ".", "..", "../../../../etc/cron.d/x", "a/b", `a\b`, "/abs", "a\x00b", "a\nb", "\xff", strings.Repeat("a", 251)} {
		if name, err := FileName(host); !errors.Is(err, ErrBadHostName) {
			t.Errorf("FileName(%q) = %q, %v; want ErrBadHostName", host, name, err)
		}
	}
}
