package fleets

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/fleetaudit/fleetaudit/internal/strictyaml"
	"github.com/fleetaudit/fleetaudit/policies"
)

// Known is what the policy library defines, for Set.Check. A nil list is not
// known and its part of the check is skipped.
type Known struct {
	// RuleIDs are the ids of every rule.
	RuleIDs []string
	// Tags are what "tag:" selectors match: the profiles rules declare in
	// custom.profiles ("all", "gpu-training", ...).
	Tags []string
	// Params are the parameter names the rules read as
	// data.fleetaudit.params.NAME; nil when some rule reads them with a
	// computed key, so no list is complete.
	Params []string
}

// Check reports, for every profile file, each rules.include or
// rules.exclude selector that selects no rule, each rules.severity id no
// rule has, and each parameter no rule reads, as "FILE:LINE: ..." with the
// closest known name. Profile names count as tags: a fleet always selects
// the rules that name it. Errors wrap ErrInvalidProfile.
func (s *Set) Check(k Known) error {
	var errs []error
	var tags []string
	if k.Tags != nil {
		tags = slices.Concat(k.Tags, s.Names())
	}
	for _, name := range sortedKeys(s.raw) {
		r := s.raw[name]
		p := r.profile
		bad := func(line int, format string, args ...any) {
			at := p.Source
			if line > 0 {
				at = fmt.Sprintf("%s:%d", p.Source, line)
			}
			errs = append(errs, fmt.Errorf("%s: %w: %s", at, ErrInvalidProfile, fmt.Sprintf(format, args...)))
		}
		for _, field := range []struct {
			name  string
			items []string
			lines []int
		}{{"rules.include", p.Rules.Include, r.pos.include}, {"rules.exclude", p.Rules.Exclude, r.pos.exclude}} {
			for i, item := range field.items {
				pattern, isTag := strings.CutPrefix(item, TagPrefix)
				known, what := k.RuleIDs, "rule id"
				if isTag {
					known, what = tags, "rule tag"
				}
				if field.name == "rules.exclude" && pattern == policies.CollectionErrorRule {
					bad(lineAt(field.lines, i), "%s: %s cannot be excluded: a host or file that could not be read is always reported", field.name, item)
					continue
				}
				if known == nil || anyMatch(pattern, known) {
					continue
				}
				bad(lineAt(field.lines, i), "%s: %q matches no %s%s", field.name, item, what, suggest(pattern, known, prefixIf(isTag)))
			}
		}
		if k.RuleIDs != nil {
			for _, id := range sortedKeys(p.Rules.Severity) {
				if !slices.Contains(k.RuleIDs, id) {
					bad(r.pos.severity[id], "rules.severity: no rule has id %q%s", id, suggest(id, k.RuleIDs, ""))
				}
			}
		}
		if k.Params != nil {
			for _, param := range sortedKeys(p.Params) {
				if !slices.Contains(k.Params, param) {
					bad(r.pos.params[param], "params: no rule reads %q%s", param, suggest(param, k.Params, ""))
				}
			}
		}
	}
	return errors.Join(errs...)
}

func prefixIf(isTag bool) string {
	if isTag {
		return TagPrefix
	}
	return ""
}

func anyMatch(pattern string, names []string) bool {
	for _, n := range names {
		if ok, _ := path.Match(pattern, n); ok {
			return true
		}
	}
	return false
}

func lineAt(lines []int, i int) int {
	if i < len(lines) {
		return lines[i]
	}
	return 0
}

func suggest(name string, known []string, prefix string) string {
	return strictyaml.DidYouMean(name, known, prefix)
}

// positions are the lines a profile file wrote its selectors, severity
// overrides and parameters on (0: not known, e.g. behind an alias).
type positions struct {
	include, exclude []int
	severity         map[string]int
	params           map[string]int
}

// positionsOf reads positions from a profile's top-level mapping; the file
// has already been checked and decoded, so shapes are as expected or the
// line is left unknown.
func positionsOf(top *yaml.Node) positions {
	var pos positions
	if rules := valueOf(top, "rules"); rules != nil {
		pos.include = itemLines(valueOf(rules, "include"))
		pos.exclude = itemLines(valueOf(rules, "exclude"))
		pos.severity = keyLines(valueOf(rules, "severity"))
	}
	pos.params = keyLines(valueOf(top, "params"))
	return pos
}

func valueOf(m *yaml.Node, key string) *yaml.Node {
	m = deref(m)
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return deref(m.Content[i+1])
		}
	}
	return nil
}

func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func itemLines(seq *yaml.Node) []int {
	if seq == nil || seq.Kind != yaml.SequenceNode {
		return nil
	}
	lines := make([]int, len(seq.Content))
	for i, item := range seq.Content {
		lines[i] = item.Line
	}
	return lines
}

func keyLines(m *yaml.Node) map[string]int {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	lines := map[string]int{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		lines[m.Content[i].Value] = m.Content[i].Line
	}
	return lines
}
