package strictyaml

import "testing"

func TestEditDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"a", "", 1}, {"memlock_min_kib", "memlock_min_kb", 1}, {"kitten", "sitting", 3}} {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestDidYouMean(t *testing.T) {
	known := []string{"log-level", "hostname", "fail-on", "format"}
	for _, tt := range []struct{ name, want string }{
		{"log_level", ` (did you mean "log-level"?)`},
		{"hostnme", ` (did you mean "hostname"?)`},
		{"formt", ` (did you mean "format"?)`},
		{"colour", ""},
		{"x", ""},
	} {
		if got := DidYouMean(tt.name, known, ""); got != tt.want {
			t.Errorf("DidYouMean(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
}
