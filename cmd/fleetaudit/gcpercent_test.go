package main

import "testing"

// The collector's target is ours only while the user has not set GOGC, and
// Go's own for an audit of many hosts.
func TestGCPercentYieldsToGOGC(t *testing.T) {
	for _, tc := range []struct {
		gogc  string
		hosts int
		want  int
		set   bool
	}{
		{"", 0, defaultGCPercent, true},
		{"", largeRunHosts - 1, defaultGCPercent, true},
		{"", largeRunHosts, 100, true},
		{"", 1_000_000, 100, true},
		{"100", 0, 0, false},
		{"300", 1_000_000, 0, false},
		{"off", 0, 0, false},
	} {
		p, set := gcPercent(func(k string) string {
			if k == "GOGC" {
				return tc.gogc
			}
			return ""
		}, tc.hosts)
		if p != tc.want || set != tc.set {
			t.Errorf("GOGC=%q, %d hosts: gcPercent = %d, %v; want %d, %v", tc.gogc, tc.hosts, p, set, tc.want, tc.set)
		}
	}
}
