package inventory

import (
	"errors"
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/fleetaudit/fleetaudit/internal/strictyaml"
)

// maxGroupDepth bounds children nesting and maxGroupVisits the group bodies
// read: YAML aliases can make either infinite or exponential.
const (
	maxGroupDepth  = 64
	maxGroupVisits = 1 << 16
)

// parseAnsibleYAML reads an Ansible YAML inventory as Ansible's yaml plugin
// does: every top-level key is a group (usually all) with optional hosts,
// children and vars; a host's value holds its variables; host keys may be
// ranges and carry a :port. Where Ansible only warns (a key other than
// hosts, children or vars in a group, a group that is not a mapping), this
// is an error: a misspelt "hosts" would drop hosts from the audit unseen.
func parseAnsibleYAML(top *yaml.Node) (*Inventory, error) {
	if p := strictyaml.MapValue(top, "plugin"); p != nil {
		return nil, fmt.Errorf("line %d: this configures the dynamic inventory plugin %q; export a static inventory with ansible-inventory -i FILE --list --yaml",
			p.Line, p.Value)
	}
	a := newAnsible(FormatAnsibleYAML)
	var errs []error
	for i := 0; i+1 < len(top.Content); i += 2 {
		k := top.Content[i]
		if err := a.yamlGroup(k.Value, k.Line, top.Content[i+1], 0); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return a.build()
}

func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n == nil || n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

func (a *ansible) yamlGroup(name string, line int, n *yaml.Node, depth int) error {
	if a.visits++; a.visits > maxGroupVisits {
		return fmt.Errorf("line %d: group %s: more than %d group definitions (aliases?)", line, name, maxGroupVisits)
	}
	if depth > maxGroupDepth {
		return fmt.Errorf("line %d: group %s: children nested deeper than %d", line, name, maxGroupDepth)
	}
	if err := checkGroupName(name); err != nil {
		return fmt.Errorf("line %d: %w", line, err)
	}
	n = deref(n)
	g := a.addGroup(name)
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: group %s: want a mapping with hosts, children or vars", n.Line, name)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], deref(n.Content[i+1])
		section := k.Value
		if section != "hosts" && section != "children" && section != "vars" {
			return fmt.Errorf("line %d: group %s: unknown key %q (known: children, hosts, vars)", k.Line, name, section)
		}
		if isNull(v) {
			continue
		}
		entries, err := sectionEntries(v)
		if err != nil {
			return fmt.Errorf("line %d: group %s: %s: %w", v.Line, name, section, err)
		}
		for j := 0; j+1 < len(entries); j += 2 {
			ek, ev := entries[j], deref(entries[j+1])
			switch section {
			case "vars":
				val, err := yamlVar(ek.Value, ev)
				if err != nil {
					return fmt.Errorf("line %d: group %s: %s: %w", ek.Line, name, ek.Value, err)
				}
				if err := a.setGroupVar(g, ek.Value, val, ek.Line); err != nil {
					return err
				}
			case "children":
				if err := a.yamlGroup(ek.Value, ek.Line, ev, depth+1); err != nil {
					return err
				}
				if err := a.addChild(name, ek.Value); err != nil {
					return fmt.Errorf("line %d: %w", ek.Line, err)
				}
			case "hosts":
				if err := a.yamlHost(name, ek, ev); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// sectionEntries returns the key/value nodes of a hosts, children or vars
// section; a plain string stands for a mapping with that one key, as in
// Ansible ("hosts: test5").
func sectionEntries(v *yaml.Node) ([]*yaml.Node, error) {
	switch v.Kind {
	case yaml.MappingNode:
		return v.Content, nil
	case yaml.ScalarNode:
		if v.Tag == "!!str" {
			return []*yaml.Node{v, {Kind: yaml.ScalarNode, Tag: "!!null"}}, nil
		}
	}
	return nil, errors.New("want a mapping")
}

func (a *ansible) yamlHost(group string, k, v *yaml.Node) error {
	hosts, err := a.addHosts(k.Value, group)
	if err != nil {
		return fmt.Errorf("line %d: group %s: %w", k.Line, group, err)
	}
	if isNull(v) {
		return nil
	}
	if v.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: host %s: want a mapping of variables", v.Line, k.Value)
	}
	for i := 0; i+1 < len(v.Content); i += 2 {
		vk, vv := v.Content[i], deref(v.Content[i+1])
		val, err := yamlVar(vk.Value, vv)
		if err != nil {
			return fmt.Errorf("line %d: host %s: %s: %w", vk.Line, k.Value, vk.Value, err)
		}
		for _, h := range hosts {
			if err := a.setHostVar(h, vk.Value, val, vk.Line); err != nil {
				return err
			}
		}
	}
	return nil
}

// yamlVar keeps scalars as written (ansible_host: 010.0.0.1 stays text),
// reads fleetaudit_labels as a mapping, and decodes anything else.
func yamlVar(name string, n *yaml.Node) (any, error) {
	if isNull(n) {
		return nil, nil
	}
	if name == varLabels {
		return labelsNode(n)
	}
	if n.Kind == yaml.ScalarNode {
		return n.Value, nil
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}
