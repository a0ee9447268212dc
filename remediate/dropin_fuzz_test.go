package remediate

import (
	"bytes"
	"testing"
)

// editServiceLimits on any drop-in: never panics, writes the directive in
// its [Service] section, keeps every line it does not replace, and a second
// edit changes nothing.
func FuzzEditServiceLimits(f *testing.F) {
	f.Add([]byte(""))
	f.Add([]byte("[Service]\nLimitMEMLOCK=64M\nLimitNOFILE=1048576\n"))
	f.Add([]byte("[Unit]\nDescription=x\n\n[Service]\nLimitMEMLOCK=8M\nLimitMEMLOCK=16M\n[Install]\nWantedBy=multi-user.target\n"))
	f.Add([]byte("# Written by fleetaudit remediate\n[Service]\n; LimitMEMLOCK=1\nExecStart=/usr/sbin/slurmd\n"))
	f.Fuzz(func(t *testing.T, old []byte) {
		set := map[string]string{"LimitMEMLOCK": "infinity"}
		out := editServiceLimits(old, set)
		if !bytes.Contains(out, []byte("\nLimitMEMLOCK=infinity\n")) {
			t.Fatalf("no LimitMEMLOCK=infinity line in\n%q", out)
		}
		if again := editServiceLimits(out, set); !bytes.Equal(again, out) {
			t.Fatalf("a second edit changed\n%q\nto\n%q", out, again)
		}
		kept := map[string]int{}
		for _, l := range lines(out) {
			kept[l]++
		}
		section := ""
		for _, l := range lines(old) {
			trimmed := bytes.TrimSpace([]byte(l))
			if bytes.HasPrefix(trimmed, []byte("[")) && bytes.HasSuffix(trimmed, []byte("]")) {
				section = string(trimmed)
			}
			if section == "[Service]" && bytes.HasPrefix(trimmed, []byte("LimitMEMLOCK")) && bytes.Contains(trimmed, []byte("=")) {
				continue // replaced
			}
			if kept[l] == 0 {
				t.Fatalf("line %q of the old file is gone:\n%q", l, out)
			}
			kept[l]--
		}
	})
}
