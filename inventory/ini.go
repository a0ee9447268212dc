package inventory

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Ansible's INI section and child-group patterns (plugins/inventory/ini.py).
var (
	sectionRE   = regexp.MustCompile(`^\[([^:\]\s]+)(?::(\w+))?\]\s*(?:#.*)?$`)
	groupLineRE = regexp.MustCompile(`^([^:\]\s]+)\s*(?:#.*)?$`)
)

// parseINI reads an Ansible INI inventory as Ansible's ini plugin does:
// lines before any section are ungrouped hosts; [g] lists hosts with
// key=value variables; [g:children] lists child groups, which may be
// declared later in the file but must be declared somewhere; [g:vars] sets
// group variables, one key=value a line, for a group declared somewhere.
// Lines starting with # or ; are comments; on host lines a # outside quotes
// starts a comment. Values are text with Python-style quotes removed;
// unlike Ansible, a " # comment" after an unquoted :vars value is dropped
// rather than kept as part of the value.
func parseINI(data []byte) (*Inventory, error) {
	a := newAnsible(FormatAnsibleINI)
	type pending struct {
		line    int
		vars    bool     // declared only by [g:vars]
		parents []string // listed in these [parent:children]
	}
	pend := map[string]*pending{}
	group, state := groupUngrouped, "hosts"
	lineNo := 0
	for raw := range strings.Lines(string(data)) {
		lineNo++
		line := strings.TrimSpace(raw)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if m := sectionRE.FindStringSubmatch(line); m != nil {
			group, state = m[1], m[2]
			if state == "" {
				state = "hosts"
			}
			if state != "hosts" && state != "children" && state != "vars" {
				return nil, fmt.Errorf("line %d: section [%s:%s] has unknown type %q (want children or vars)", lineNo, m[1], m[2], m[2])
			}
			if _, ok := a.groups[group]; !ok {
				if state == "vars" && pend[group] == nil {
					pend[group] = &pending{line: lineNo, vars: true}
				}
				a.addGroup(group)
			}
			if p := pend[group]; p != nil && state != "vars" {
				for _, parent := range p.parents {
					if err := a.addChild(parent, group); err != nil {
						return nil, fmt.Errorf("line %d: %w", lineNo, err)
					}
				}
				delete(pend, group)
			}
			continue
		}
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			return nil, fmt.Errorf("line %d: invalid section %s: no spaces, and a group name without ':' or ']'", lineNo, line)
		}
		switch state {
		case "hosts":
			if err := iniHostLine(a, group, line, lineNo); err != nil {
				return nil, fmt.Errorf("line %d: %w", lineNo, err)
			}
		case "vars":
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				return nil, fmt.Errorf("line %d: want key=value in [%s:vars], got %q", lineNo, group, line)
			}
			k = strings.TrimSpace(k)
			if k == "" {
				return nil, fmt.Errorf("line %d: empty variable name in [%s:vars]", lineNo, group)
			}
			if err := a.setGroupVar(a.groups[group], k, iniVarsValue(strings.TrimSpace(v)), lineNo); err != nil {
				return nil, err
			}
		case "children":
			m := groupLineRE.FindStringSubmatch(line)
			if m == nil {
				return nil, fmt.Errorf("line %d: want a group name in [%s:children], got %q", lineNo, group, line)
			}
			child := m[1]
			if _, ok := a.groups[child]; ok {
				if err := a.addChild(group, child); err != nil {
					return nil, fmt.Errorf("line %d: %w", lineNo, err)
				}
				continue
			}
			if p := pend[child]; p != nil {
				p.parents = append(p.parents, group)
			} else {
				pend[child] = &pending{line: lineNo, parents: []string{group}}
			}
		}
	}
	// Report the earliest undeclared group, as Ansible reports one.
	var names []string
	for name := range pend {
		names = append(names, name)
	}
	slices.SortFunc(names, func(x, y string) int { return pend[x].line - pend[y].line })
	if len(names) > 0 {
		name := names[0]
		p := pend[name]
		if p.vars {
			return nil, fmt.Errorf("line %d: section [%s:vars] is for group %s, which is not declared", p.line, name, name)
		}
		return nil, fmt.Errorf("line %d: section [%s:children] includes group %s, which is not declared", p.line, p.parents[len(p.parents)-1], name)
	}
	return a.build()
}

func iniHostLine(a *ansible, group, line string, lineNo int) error {
	tokens, err := shlexSplit(line)
	if err != nil {
		return fmt.Errorf("host line %q: %w", line, err)
	}
	if len(tokens) == 0 {
		return nil // "#" glued to nothing: only a comment after all
	}
	if strings.TrimSpace(tokens[0]) == "---" {
		return fmt.Errorf("host %q: this looks like a YAML file; name it .yaml", tokens[0])
	}
	hosts, err := a.addHosts(tokens[0], group)
	if err != nil {
		return err
	}
	for _, t := range tokens[1:] {
		k, v, ok := strings.Cut(t, "=")
		if !ok || k == "" {
			return fmt.Errorf("want key=value host variable, got %q", t)
		}
		for _, h := range hosts {
			if err := a.setHostVar(h, k, pyUnquote(v), lineNo); err != nil {
				return err
			}
		}
	}
	return nil
}

// iniVarsValue reads the value of a [g:vars] line: a quoted string ends at
// its closing quote, an unquoted one at " #".
func iniVarsValue(v string) string {
	if len(v) >= 2 && (v[0] == '\'' || v[0] == '"') {
		if end := closingQuote(v); end > 0 {
			rest := strings.TrimSpace(v[end+1:])
			if rest == "" || rest[0] == '#' {
				return pyUnquote(v[:end+1])
			}
		}
	}
	for i := 1; i < len(v); i++ {
		if v[i] == '#' && (v[i-1] == ' ' || v[i-1] == '\t') {
			return strings.TrimSpace(v[:i])
		}
	}
	return v
}

// closingQuote returns the index of the quote closing v[0], or -1.
func closingQuote(v string) int {
	for i := 1; i < len(v); i++ {
		switch v[i] {
		case '\\':
			i++
		case v[0]:
			return i
		}
	}
	return -1
}

// pyUnquote removes the quotes of a Python string literal, which Ansible
// evaluates with ast.literal_eval; anything else is returned as it is.
func pyUnquote(v string) string {
	if len(v) < 2 || (v[0] != '\'' && v[0] != '"') || closingQuote(v) != len(v)-1 {
		return v
	}
	var b strings.Builder
	for i := 1; i < len(v)-1; i++ {
		c := v[i]
		if c != '\\' || i+1 == len(v)-1 {
			b.WriteByte(c)
			continue
		}
		i++
		switch v[i] {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case '\\', '\'', '"':
			b.WriteByte(v[i])
		default:
			b.WriteByte('\\')
			b.WriteByte(v[i])
		}
	}
	return b.String()
}
