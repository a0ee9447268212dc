package fleets

import (
	"fmt"
	"slices"
	"strings"
)

// resolve merges the includes of raw[name]; Set.Resolve documents how.
func resolve(raw map[string]*Profile, name string) (*Profile, error) {
	var chain []string
	var seen []string
	var visit func(n string, stack []string) error
	visit = func(n string, stack []string) error {
		if i := slices.Index(stack, n); i >= 0 {
			return fmt.Errorf("include cycle: %s", strings.Join(append(stack[i:], n), " -> "))
		}
		p, ok := raw[n]
		if !ok {
			return fmt.Errorf("%s includes unknown profile %q", stack[len(stack)-1], n)
		}
		if slices.Contains(seen, n) {
			return nil
		}
		stack = append(stack, n)
		for _, inc := range p.Includes {
			if err := visit(inc, stack); err != nil {
				return err
			}
		}
		seen = append(seen, n)
		chain = append(chain, n)
		return nil
	}
	if err := visit(name, nil); err != nil {
		return nil, err
	}

	self := raw[name]
	out := &Profile{
		Name:        self.Name,
		Description: self.Description,
		Source:      self.Source,
	}
	if len(chain) > 1 {
		out.Includes = slices.Clone(chain[:len(chain)-1])
	}
	out.Match = self.clone().Match
	for _, n := range chain {
		p := raw[n]
		out.Rules.Include = appendNew(out.Rules.Include, p.Rules.Include...)
		out.Rules.Exclude = appendNew(out.Rules.Exclude, p.Rules.Exclude...)
		for id, sev := range p.Rules.Severity {
			if out.Rules.Severity == nil {
				out.Rules.Severity = map[string]string{}
			}
			out.Rules.Severity[id] = sev
		}
		if p.Params != nil {
			if out.Params == nil {
				out.Params = map[string]any{}
			}
			mergeParams(out.Params, p.Params)
		}
	}
	if len(out.Rules.Include) == 0 {
		out.Rules.Include = []string{TagPrefix + "all"}
	}
	out.Rules.Include = appendNew(out.Rules.Include, TagPrefix+name)
	return out, nil
}

func appendNew(list []string, items ...string) []string {
	for _, item := range items {
		if !slices.Contains(list, item) {
			list = append(list, item)
		}
	}
	return list
}

// mergeParams merges src into dst: mappings merge key by key, anything else
// (lists included) replaces, so a fleet can shorten an inherited list.
func mergeParams(dst, src map[string]any) {
	for k, v := range src {
		sm, srcIsMap := v.(map[string]any)
		dm, dstIsMap := dst[k].(map[string]any)
		if srcIsMap && dstIsMap {
			mergeParams(dm, sm)
			continue
		}
		dst[k] = deepCopy(v)
	}
}
