package fleetrun

import (
	"testing"
)

func TestHostMember(t *testing.T) {
	for _, tc := range []struct {
		in   string
		host string
		ok   bool
	}{
		{`{"a":{"host":"x"},"host":"h","b":[1,"]"]}`, "h", true},
		{`{"host":"h"}`, "h", true},
		{` { "b" : "\"host\"" , "host" : "h\u00e9" } `, "hé", true},
		// The first "host" is taken; whether there is another is settled
		// when the class's first file is decoded.
		{`{"host":"a","host":"b"}`, "a", true},
		{`{"ho\u0073t":"a","host":"b"}`, "", false},
		{`{"host":1}`, "", false},
		{`{"b":1}`, "", false},
		{`{"b":1,}`, "", false},
		{`[]`, "", false},
		{`{"host":"h\u00e9\n"}`, "h\u00e9\n", true},
		{`{"host":"h\x"}`, "", false},
		// What follows the first "host" is left to the decoder: it is the
		// same in every file of the class.
		{`{"host":"h"`, "h", true},
		{`{"host":"h"} x`, "h", true},
		{`{"host":"h","a":{"host":1}`, "h", true},
	} {
		host, start, end, ok := hostMember([]byte(tc.in))
		if ok != tc.ok || host != tc.host {
			t.Errorf("%s: %q %v, want %q %v", tc.in, host, ok, tc.host, tc.ok)
			continue
		}
		if ok && tc.in[start] != '"' || ok && tc.in[end-1] != '"' {
			t.Errorf("%s: span %d:%d is not the value", tc.in, start, end)
		}
	}
}
