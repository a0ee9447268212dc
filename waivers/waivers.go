// Package waivers reads waivers.yaml and applies it to findings. A waiver
// accepts one rule's findings within a scope (fleet, host globs, config-repo
// paths) for a named owner, with a justification, until an expiry date. A
// waived finding is kept and marked, never dropped; an expired waiver stops
// applying and is reported; a waiver that matches nothing is reported stale.
package waivers

import (
	"errors"
	"fmt"
	"iter"
	"path"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/fleetaudit/fleetaudit/internal/safeio"
	"github.com/fleetaudit/fleetaudit/internal/strictyaml"
	"github.com/fleetaudit/fleetaudit/policies"
)

// DefaultFile is the file read when no --waivers is given: in the working
// directory for audit, at the repo root (base commit) for the gate.
const DefaultFile = "waivers.yaml"

// maxFileSize caps what is read: a waivers file is written by people.
const maxFileSize = 4 << 20

// States of a waiver after Apply.
const (
	// Active waivers apply and matched at least one finding.
	Active = "active"
	// Expired waivers are past their expiry and apply to nothing.
	Expired = "expired"
	// Stale waivers are in force but matched no finding.
	Stale = "stale"
)

// Waiver is one entry of waivers.yaml.
type Waiver struct {
	// Rule is the rule id the waiver accepts (exact, no globs).
	Rule string `yaml:"rule" json:"rule"`
	// Fleet, Hosts and Paths are the scope; each one given must match
	// (at least one of them is required). Fleet and Hosts are globs as
	// path.Match reads them; Paths are config-repo path globs where "**"
	// matches any number of directories, matched against the files the
	// finding's evidence cites.
	Fleet string   `yaml:"fleet" json:"fleet,omitempty"`
	Hosts []string `yaml:"hosts" json:"hosts,omitempty"`
	Paths []string `yaml:"paths" json:"paths,omitempty"`
	// Owner is who accepted the risk; Justification why.
	Owner         string `yaml:"owner" json:"owner"`
	Justification string `yaml:"justification" json:"justification"`
	// Expires is a date (YYYY-MM-DD, the waiver holds through that day,
	// UTC) or an RFC 3339 time.
	Expires string `yaml:"expires" json:"expires"`
	// Source is FILE:LINE of the entry.
	Source string `yaml:"-" json:"source"`

	expiresAt time.Time
}

// ExpiresAt is the first instant the waiver no longer applies.
func (w *Waiver) ExpiresAt() time.Time { return w.expiresAt }

type file struct {
	Waivers []Waiver `yaml:"waivers"`
}

// Set is a parsed waivers file.
type Set struct {
	File    string
	Waivers []Waiver
}

// Load reads and validates a waivers file.
func Load(name string) (*Set, error) {
	data, err := safeio.ReadFile(name, maxFileSize)
	if err != nil {
		return nil, fmt.Errorf("waivers %s: %w", name, err)
	}
	return Parse(name, data)
}

// Parse validates a waivers file's bytes; name is used in errors and in
// each waiver's Source. Every problem is reported as NAME:LINE: what.
func Parse(name string, data []byte) (*Set, error) {
	doc, top, err := strictyaml.DecodeMapping(data)
	if err != nil {
		return nil, prefixLine(name, err)
	}
	if err := strictyaml.Check(doc, &file{}); err != nil {
		return nil, prefixLine(name, err)
	}
	list := strictyaml.MapValue(top, "waivers")
	if list == nil || list.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("%s:%d: want a list under waivers:", name, top.Line)
	}
	var f file
	if err := doc.Decode(&f); err != nil {
		return nil, prefixLine(name, err)
	}
	var errs []error
	for i := range f.Waivers {
		w := &f.Waivers[i]
		line := list.Content[i].Line
		w.Source = fmt.Sprintf("%s:%d", name, line)
		for _, e := range w.validate() {
			errs = append(errs, fmt.Errorf("%s:%d: waiver %d (%s): %w", name, line, i+1, ruleLabel(w.Rule), e))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &Set{File: name, Waivers: f.Waivers}, nil
}

func ruleLabel(rule string) string {
	if rule == "" {
		return "no rule"
	}
	return rule
}

// prefixLine turns yaml's and strictyaml's "line N: ..." into "NAME:N: ...";
// an error without a line is "waivers NAME: ...".
func prefixLine(name string, err error) error {
	var out []string
	for _, msg := range strings.Split(err.Error(), "\n") {
		msg = strings.TrimPrefix(strings.TrimSpace(msg), "yaml: ")
		if msg == "unmarshal errors:" {
			continue
		}
		if rest, ok := strings.CutPrefix(msg, "line "); ok {
			if n, tail, ok := strings.Cut(rest, ":"); ok && n != "" && strings.Trim(n, "0123456789") == "" {
				msg = name + ":" + n + ":" + tail
			}
		}
		if !strings.HasPrefix(msg, name+":") {
			msg = "waivers " + name + ": " + msg
		}
		out = append(out, msg)
	}
	return errors.New(strings.Join(out, "\n"))
}

func (w *Waiver) validate() []error {
	var errs []error
	switch {
	case w.Rule == "":
		errs = append(errs, errors.New("rule is required"))
	case w.Rule == policies.CollectionErrorRule:
		errs = append(errs, errors.New("collection-error cannot be waived: it reports a host or source that could not be read, and a blind spot is never silenced"))
	case strings.ContainsAny(w.Rule, "*?[ "):
		errs = append(errs, fmt.Errorf("rule %q: a waiver names one rule id, not a pattern", w.Rule))
	}
	if w.Fleet == "" && len(w.Hosts) == 0 && len(w.Paths) == 0 {
		errs = append(errs, errors.New(`scope is required: fleet, hosts or paths (fleet: "*" for every fleet)`))
	}
	if w.Fleet != "" {
		if _, err := path.Match(w.Fleet, ""); err != nil {
			errs = append(errs, fmt.Errorf("fleet %q: %w", w.Fleet, err))
		}
	}
	for _, h := range w.Hosts {
		if _, err := path.Match(h, ""); err != nil || h == "" {
			errs = append(errs, fmt.Errorf("hosts: %q is not a valid glob", h))
		}
	}
	for _, p := range w.Paths {
		if err := checkPathGlob(p); err != nil {
			errs = append(errs, fmt.Errorf("paths: %q: %w", p, err))
		}
	}
	if strings.TrimSpace(w.Owner) == "" {
		errs = append(errs, errors.New("owner is required: who accepted the risk"))
	}
	if strings.TrimSpace(w.Justification) == "" {
		errs = append(errs, errors.New("justification is required: why the finding is accepted"))
	}
	if w.Expires == "" {
		errs = append(errs, errors.New("expires is required: a date (YYYY-MM-DD) or an RFC 3339 time"))
	} else if t, err := parseExpiry(w.Expires); err != nil {
		errs = append(errs, err)
	} else {
		w.expiresAt = t
	}
	return errs
}

func parseExpiry(s string) (time.Time, error) {
	if d, err := time.Parse(time.DateOnly, s); err == nil {
		return d.AddDate(0, 0, 1), nil // holds through that day, UTC
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("expires %q: want a date (YYYY-MM-DD) or an RFC 3339 time", s)
}

func checkPathGlob(p string) error {
	if p == "" || strings.HasPrefix(p, "/") {
		return errors.New("want a path relative to the config repo's root")
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "**" {
			continue
		}
		if _, err := path.Match(seg, ""); err != nil {
			return err
		}
	}
	return nil
}

// matchPath matches a slash path against a glob whose "**" segments match
// any number of directories.
func matchPath(glob, name string) bool {
	return matchSegs(strings.Split(glob, "/"), strings.Split(name, "/"))
}

func matchSegs(glob, name []string) bool {
	for len(glob) > 0 {
		if glob[0] == "**" {
			for i := 0; i <= len(name); i++ {
				if matchSegs(glob[1:], name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, _ := path.Match(glob[0], name[0]); !ok {
			return false
		}
		glob, name = glob[1:], name[1:]
	}
	return len(name) == 0
}

// Matches reports whether the waiver's rule and scope cover f, regardless
// of expiry.
func (w *Waiver) Matches(f *policies.Finding) bool {
	if f.Rule != w.Rule {
		return false
	}
	if w.Fleet != "" {
		if ok, _ := path.Match(w.Fleet, f.Fleet); !ok {
			return false
		}
	}
	if len(w.Hosts) > 0 && !slices.ContainsFunc(w.Hosts, func(g string) bool {
		ok, _ := path.Match(g, f.Host)
		return ok
	}) {
		return false
	}
	if len(w.Paths) > 0 && !slices.ContainsFunc(w.Paths, func(g string) bool {
		return slices.ContainsFunc(sourceFiles(f), func(file string) bool { return matchPath(g, file) })
	}) {
		return false
	}
	return true
}

// sourceFiles are the files a finding's evidence cites, without line
// numbers; defaults and unknown sources are no file.
func sourceFiles(f *policies.Finding) []string {
	var out []string
	for _, e := range f.Evidence {
		s := e.Source
		if s == "" || strings.HasPrefix(s, "default:") {
			continue
		}
		if _, rest, ok := strings.Cut(s, " (baseline "); ok && strings.HasSuffix(rest, ")") {
			// The gate's facts from a baseline snapshot: the repo file is
			// the baseline.
			s = strings.TrimSuffix(rest, ")")
		}
		if i := strings.LastIndexByte(s, ':'); i > 0 && strings.Trim(s[i+1:], "0123456789") == "" {
			s = s[:i]
		}
		out = append(out, strings.TrimPrefix(s, "./"))
	}
	return out
}

// Status is one waiver after Apply.
type Status struct {
	Waiver
	// State is Active, Expired or Stale.
	State string `json:"state"`
	// Matched counts the findings the waiver covers (for an expired one:
	// the findings it would cover, now reported unwaived).
	Matched int `json:"matched"`
}

// Report is what Apply did, for the reports.
type Report struct {
	// File is the waivers file read.
	File string `json:"file"`
	// Waivers are every waiver in file order, with its state.
	Waivers []Status `json:"waivers"`
	// Waived counts the findings a waiver covers.
	Waived  int `json:"waived"`
	Expired int `json:"expired"`
	Stale   int `json:"stale"`
}

// Apply marks each finding the first active waiver covers (in file order)
// with policies.Waived, in place. Expired waivers mark nothing and are
// counted; waivers in force that match nothing are stale. Findings are
// never removed. A nil set returns nil.
func (s *Set) Apply(now time.Time, findings ...[]policies.Finding) *Report {
	if s == nil {
		return nil
	}
	rep := s.report(now)
	for _, list := range findings {
		for i := range list {
			rep.mark(&list[i], true)
		}
	}
	rep.settle()
	return rep
}

// Stream is Apply for findings read as a stream (audit.Result.All): it
// reads them once to count what each waiver covers, and returns mark,
// which sets Finding.Waived on each finding as a later read yields it, as
// Apply would have.
func (s *Set) Stream(now time.Time, findings iter.Seq2[*policies.Finding, *policies.Finding]) (rep *Report, mark func(*policies.Finding)) {
	if s == nil {
		return nil, nil
	}
	rep = s.report(now)
	for f := range findings {
		g := *f
		rep.mark(&g, true)
	}
	rep.settle()
	return rep, func(f *policies.Finding) { rep.mark(f, false) }
}

// report is the set's report before any finding was read.
func (s *Set) report(now time.Time) *Report {
	rep := &Report{File: s.File, Waivers: make([]Status, len(s.Waivers))}
	for i, w := range s.Waivers {
		rep.Waivers[i] = Status{Waiver: w, State: Active}
		if !now.Before(w.expiresAt) {
			rep.Waivers[i].State = Expired
		}
	}
	return rep
}

// mark sets f.Waived from the first active waiver that matches it, and
// with count, counts the waivers that match.
func (rep *Report) mark(f *policies.Finding, count bool) {
	f.Waived = nil
	for j := range rep.Waivers {
		st := &rep.Waivers[j]
		if !st.Matches(f) {
			continue
		}
		if count {
			st.Matched++
		}
		if st.State == Expired {
			continue
		}
		if f.Waived == nil {
			f.Waived = &policies.Waived{Owner: st.Owner, Justification: st.Justification, Expires: st.Expires, Source: st.Source}
			if count {
				rep.Waived++
			}
		}
	}
}

// settle marks the waivers nothing matched stale and counts the states.
func (rep *Report) settle() {
	for j := range rep.Waivers {
		st := &rep.Waivers[j]
		switch {
		case st.State == Expired:
			rep.Expired++
		case st.Matched == 0:
			st.State = Stale
			rep.Stale++
		}
	}
}
