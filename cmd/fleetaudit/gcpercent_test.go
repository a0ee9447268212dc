package main

import "testing"

// The collector's target is ours only while the user has not set GOGC.
func TestGCPercentYieldsToGOGC(t *testing.T) {
	for _, tc := range []struct {
		gogc string
		want int
		set  bool
	}{
		{"", defaultGCPercent, true},
		{"100", 0, false},
		{"off", 0, false},
	} {
		p, set := gcPercent(func(k string) string {
			if k == "GOGC" {
				return tc.gogc
			}
			return ""
		})
		if p != tc.want || set != tc.set {
			t.Errorf("GOGC=%q: gcPercent = %d, %v; want %d, %v", tc.gogc, p, set, tc.want, tc.set)
		}
	}
}
