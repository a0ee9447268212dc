package store

import (
	"slices"
	"strings"

	"github.com/fleetaudit/fleetaudit/policies"
)

// interner shares, among the findings of one read, the strings they
// repeat: a rule's title, remediation and references, and hosts, fleets,
// facts and sources. Decoded apart, they are most of a large run's
// findings in memory.
type interner struct {
	strs map[string]string
	refs map[string][]string
}

func newInterner() *interner {
	return &interner{strs: map[string]string{}, refs: map[string][]string{}}
}

func (in *interner) str(s string) string {
	if s == "" {
		return ""
	}
	if v, ok := in.strs[s]; ok {
		return v
	}
	in.strs[s] = s
	return s
}

// finding interns f's repeated strings in place.
func (in *interner) finding(f *policies.Finding) {
	f.Rule, f.Severity, f.Title = in.str(f.Rule), in.str(f.Severity), in.str(f.Title)
	f.Host, f.Fleet, f.Remediation, f.Basis = in.str(f.Host), in.str(f.Fleet), in.str(f.Remediation), in.str(f.Basis)
	for i := range f.Evidence {
		e := &f.Evidence[i]
		e.Fact, e.Source = in.str(e.Fact), in.str(e.Source)
	}
	if len(f.References) > 0 {
		k := strings.Join(f.References, "\x00")
		if v, ok := in.refs[k]; ok {
			f.References = v
		} else {
			// Clipped, as the engine shares a rule's: an append copies.
			f.References = slices.Clip(f.References)
			in.refs[k] = f.References
		}
	}
}
