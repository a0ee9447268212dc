package inventory

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Variables fleetaudit reads from an Ansible inventory.
const (
	varFleet      = "fleetaudit_fleet"
	varRoot       = "fleetaudit_root"
	varLabels     = "fleetaudit_labels"
	varRemoteRoot = "fleetaudit_remote_root"
	varPriority   = "ansible_group_priority"
)

// Ansible's implicit groups: every host is in all; a host in no other group
// is in ungrouped.
const (
	groupAll       = "all"
	groupUngrouped = "ungrouped"
)

// ansible is an Ansible inventory as its parsers build it: groups with
// children, hosts with direct group membership, and variables on both.
type ansible struct {
	format    Format
	groups    map[string]*aGroup
	groupSeq  []string // declaration order
	hosts     map[string]*aHost
	hostSeq   []string
	nHosts    int
	fleetDecl map[string]fleetDecl // by host or "group "+name
	tooMany   bool
	visits    int // group bodies read, see maxGroupVisits
}

// maxGroups bounds the groups of one inventory; loop checks are quadratic.
const maxGroups = 1 << 16

type aGroup struct {
	name     string
	vars     map[string]any
	parents  []string
	children []string
	hosts    []string
}

type aHost struct {
	name   string
	vars   map[string]any
	groups []string
}

type fleetDecl struct {
	value string
	line  int
}

func newAnsible(f Format) *ansible {
	a := &ansible{format: f, groups: map[string]*aGroup{}, hosts: map[string]*aHost{}, fleetDecl: map[string]fleetDecl{}}
	a.addGroup(groupAll)
	a.addGroup(groupUngrouped)
	return a
}

func (a *ansible) addGroup(name string) *aGroup {
	if g, ok := a.groups[name]; ok {
		return g
	}
	if len(a.groups) >= maxGroups {
		a.tooMany = true // reported by build; callers need not check each add
	}
	g := &aGroup{name: name, vars: map[string]any{}}
	a.groups[name] = g
	a.groupSeq = append(a.groupSeq, name)
	return g
}

// addChild makes child a subgroup of parent, refusing loops as Ansible does.
func (a *ansible) addChild(parent, child string) error {
	if a.tooMany {
		return fmt.Errorf("more than %d groups", maxGroups)
	}
	if parent == child || a.isAncestor(child, parent) {
		return fmt.Errorf("adding group %s as a child of %s would make a loop", child, parent)
	}
	p, c := a.addGroup(parent), a.addGroup(child)
	if !slices.Contains(p.children, child) {
		p.children = append(p.children, child)
		c.parents = append(c.parents, parent)
	}
	return nil
}

// isAncestor reports whether group anc is g or above it.
func (a *ansible) isAncestor(anc, g string) bool {
	seen := map[string]bool{}
	stack := []string{g}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if n == anc {
			return true
		}
		if seen[n] {
			continue
		}
		seen[n] = true
		if grp, ok := a.groups[n]; ok {
			stack = append(stack, grp.parents...)
		}
	}
	return false
}

// addHosts adds the hosts of a pattern to group, with the pattern's port as
// their ansible_port (as Ansible does), and returns them.
func (a *ansible) addHosts(pattern, group string) ([]*aHost, error) {
	host, port, err := splitHostPort(pattern)
	if err != nil {
		return nil, err
	}
	names, err := expandHostPattern(host)
	if err != nil {
		return nil, err
	}
	if a.nHosts+len(names) > maxHosts {
		return nil, fmt.Errorf("more than %d hosts", maxHosts)
	}
	g := a.addGroup(group)
	out := make([]*aHost, 0, len(names))
	for _, name := range names {
		if err := checkHostName(name); err != nil {
			return nil, err
		}
		h, ok := a.hosts[name]
		if !ok {
			h = &aHost{name: name}
			a.hosts[name] = h
			a.hostSeq = append(a.hostSeq, name)
		}
		a.nHosts++
		if !slices.Contains(h.groups, group) {
			h.groups = append(h.groups, group)
			g.hosts = append(g.hosts, name)
		}
		if port != 0 {
			h.setVar("ansible_port", strconv.Itoa(port))
		}
		out = append(out, h)
	}
	return out, nil
}

// setHostVar sets a host variable; later wins, as in Ansible, except that a
// second, different fleet for the same host is an error.
func (a *ansible) setHostVar(h *aHost, k string, v any, line int) error {
	if err := a.noteFleet("host "+h.name, "host "+h.name, k, v, line); err != nil {
		return err
	}
	h.setVar(k, v)
	return nil
}

func (h *aHost) setVar(k string, v any) {
	if h.vars == nil {
		h.vars = map[string]any{}
	}
	h.vars[k] = v
}

func (a *ansible) setGroupVar(g *aGroup, k string, v any, line int) error {
	if err := a.noteFleet("group "+g.name, "group "+g.name, k, v, line); err != nil {
		return err
	}
	g.vars[k] = v
	return nil
}

func (a *ansible) noteFleet(key, who, k string, v any, line int) error {
	if k != varFleet {
		return nil
	}
	s, err := scalarString(v)
	if err != nil {
		return fmt.Errorf("line %d: %s: %s: %w", line, who, varFleet, err)
	}
	if prev, ok := a.fleetDecl[key]; ok && prev.value != s {
		return fmt.Errorf("line %d: %s: %w: %s is %q here and %q at line %d",
			line, who, ErrFleetConflict, varFleet, s, prev.value, prev.line)
	}
	a.fleetDecl[key] = fleetDecl{s, line}
	return nil
}

// build applies Ansible's reconciliation (top-level groups under all, hosts
// without a group in ungrouped) and variable precedence, and returns the
// inventory.
func (a *ansible) build() (*Inventory, error) {
	if a.tooMany {
		return nil, fmt.Errorf("more than %d groups", maxGroups)
	}
	for _, name := range a.groupSeq {
		if g := a.groups[name]; name != groupAll && len(g.parents) == 0 {
			if err := a.addChild(groupAll, name); err != nil {
				return nil, err
			}
		}
	}
	depth := map[string]int{}
	var depthOf func(string) int
	depthOf = func(name string) int {
		if d, ok := depth[name]; ok {
			return d
		}
		d := 0
		for _, p := range a.groups[name].parents {
			d = max(d, depthOf(p)+1)
		}
		depth[name] = d
		return d
	}
	priority := map[string]int{}
	for _, name := range a.groupSeq {
		priority[name] = 1
		if v, ok := a.groups[name].vars[varPriority]; ok {
			s, err := scalarString(v)
			n, convErr := strconv.Atoi(s)
			if err != nil || convErr != nil {
				return nil, fmt.Errorf("group %s: %s %v is not an integer", name, varPriority, v)
			}
			priority[name] = n
		}
	}

	// Hosts of one group set share their group vars; big inventories are
	// ranges of hosts in the same groups.
	type groupSet struct {
		groups []string
		vars   map[string]any
	}
	sets := map[string]groupSet{}
	inv := &Inventory{Format: a.format}
	var errs []error
	for _, name := range a.hostSeq {
		h := a.hosts[name]
		key := strings.Join(h.groups, "\x00")
		set, ok := sets[key]
		if !ok {
			set.groups = a.closure(h.groups)
			// ungrouped holds exactly the hosts in no other group, whatever
			// the file said (Ansible's reconcile_inventory).
			set.groups = slices.DeleteFunc(set.groups, func(g string) bool { return g == groupUngrouped })
			if len(set.groups) == 1 { // only all
				set.groups = append(set.groups, groupUngrouped)
			}
			// Ansible's order: shallow groups first, then priority, then
			// name; later wins and host vars win over all.
			slices.SortFunc(set.groups, func(x, y string) int {
				return cmp.Or(cmp.Compare(depthOf(x), depthOf(y)), cmp.Compare(priority[x], priority[y]), strings.Compare(x, y))
			})
			set.vars = map[string]any{}
			for _, g := range set.groups {
				maps.Copy(set.vars, a.groups[g].vars)
			}
			sets[key] = set
		}
		groups, vars := set.groups, set.vars
		if len(h.vars) > 0 {
			vars = maps.Clone(vars)
			maps.Copy(vars, h.vars)
		}
		host, err := a.hostFromVars(h, groups, vars)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		inv.Hosts = append(inv.Hosts, host)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var declared []string
	for _, g := range a.groupSeq {
		if g != groupAll && g != groupUngrouped {
			declared = append(declared, g)
		}
	}
	inv.Groups = groupIndex(inv.Hosts, declared)
	return inv, nil
}

// closure returns groups and all their ancestors.
func (a *ansible) closure(groups []string) []string {
	var out []string
	stack := slices.Clone(groups)
	for len(stack) > 0 {
		g := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if slices.Contains(out, g) {
			continue
		}
		out = append(out, g)
		stack = append(stack, a.groups[g].parents...)
	}
	return out
}

func (a *ansible) hostFromVars(h *aHost, groups []string, vars map[string]any) (Host, error) {
	host := Host{Name: h.name}
	for _, g := range groups {
		if g != groupAll && g != groupUngrouped {
			host.Groups = append(host.Groups, g)
		}
	}
	slices.Sort(host.Groups)
	fleet, err := a.fleetOf(h, groups)
	if err != nil {
		return Host{}, err
	}
	host.Fleet = fleet
	fields := []struct {
		dst   *string
		names []string
	}{
		{&host.Root, []string{varRoot}},
		{&host.Address, []string{"ansible_host", "ansible_ssh_host"}},
		{&host.User, []string{"ansible_user", "ansible_ssh_user"}},
		{&host.Identity, []string{"ansible_ssh_private_key_file", "ansible_private_key_file"}},
		{&host.RemoteRoot, []string{varRemoteRoot}},
		{&host.Connection, []string{"ansible_connection"}},
	}
	for _, f := range fields {
		for _, name := range f.names {
			if v, ok := vars[name]; ok && v != nil {
				s, err := scalarString(v)
				if err != nil {
					return Host{}, fmt.Errorf("host %s: %s: %w", h.name, name, err)
				}
				*f.dst = s
				break
			}
		}
	}
	for _, name := range []string{"ansible_port", "ansible_ssh_port"} {
		if v, ok := vars[name]; ok && v != nil {
			s, err := scalarString(v)
			if err == nil {
				host.Port, err = parsePort(s)
			}
			if err != nil {
				return Host{}, fmt.Errorf("host %s: %s: %w", h.name, name, err)
			}
			break
		}
	}
	if v, ok := vars["ansible_become"]; ok && v != nil {
		s, err := scalarString(v)
		if err != nil {
			return Host{}, fmt.Errorf("host %s: ansible_become: %w", h.name, err)
		}
		switch strings.ToLower(s) {
		case "true", "yes", "1", "on", "y", "t":
			host.Become = true
		case "false", "no", "0", "off", "n", "f", "":
		default:
			return Host{}, fmt.Errorf("host %s: ansible_become: %q is not a boolean", h.name, s)
		}
	}
	for _, name := range []string{"ansible_ssh_common_args", "ansible_ssh_extra_args"} {
		if v, ok := vars[name]; ok && v != nil && host.Jump == "" {
			s, err := scalarString(v)
			if err != nil {
				return Host{}, fmt.Errorf("host %s: %s: %w", h.name, name, err)
			}
			host.Jump = proxyJumpOf(s)
		}
	}
	if v, ok := vars[varLabels]; ok {
		labels, err := labelsValue(v)
		if err != nil {
			return Host{}, fmt.Errorf("host %s: %s: %w", h.name, varLabels, err)
		}
		host.Labels = maps.Clone(labels) // group labels are shared between hosts
	}
	return host, nil
}

// fleetOf decides a host's fleet: its own fleetaudit_fleet, else the one its
// most specific groups agree on. Ansible would let group depth and then name
// order pick between unrelated groups; an audit must not guess a fleet.
func (a *ansible) fleetOf(h *aHost, groups []string) (string, error) {
	if d, ok := a.fleetDecl["host "+h.name]; ok {
		return d.value, nil
	}
	var setters []string
	for _, g := range groups {
		if _, ok := a.fleetDecl["group "+g]; ok {
			setters = append(setters, g)
		}
	}
	// Keep the groups no other setter is below: a child overrides its parent.
	var specific []string
	for _, g := range setters {
		overridden := slices.ContainsFunc(setters, func(o string) bool { return o != g && a.isAncestor(g, o) })
		if !overridden {
			specific = append(specific, g)
		}
	}
	slices.Sort(specific)
	fleet := ""
	for i, g := range specific {
		d := a.fleetDecl["group "+g]
		if i == 0 {
			fleet = d.value
			continue
		}
		if d.value != fleet {
			first := a.fleetDecl["group "+specific[0]]
			return "", fmt.Errorf("host %s: %w: group %s (line %d) says %q and group %s (line %d) says %q; set %s on the host or in one group",
				h.name, ErrFleetConflict, specific[0], first.line, first.value, g, d.line, d.value, varFleet)
		}
	}
	return fleet, nil
}

// scalarString turns a variable into text: INI values already are; YAML
// scalars are kept as written.
func scalarString(v any) (string, error) {
	switch v := v.(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	case map[string]string, map[string]any, []any:
		return "", errors.New("want a single value, got a mapping or list")
	}
	return fmt.Sprint(v), nil
}

// labelsValue reads fleetaudit_labels: a YAML mapping, or in INI the text of
// a Python dict literal such as {'rack': 'r12'}, which is also YAML.
func labelsValue(v any) (map[string]string, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case map[string]string:
		return v, nil
	case string:
		if strings.TrimSpace(v) == "" {
			return nil, nil
		}
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(v), &n); err != nil {
			return nil, fmt.Errorf("want a mapping such as {'rack': 'r12'}: %w", err)
		}
		return labelsNode(&n)
	}
	return nil, fmt.Errorf("want a mapping of label to value, got %T", v)
}

// labelsNode decodes a mapping of scalars, keeping values as written.
func labelsNode(n *yaml.Node) (map[string]string, error) {
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, errors.New("want a mapping of label to value")
	}
	labels := map[string]string{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if v.Kind == yaml.AliasNode {
			v = v.Alias
		}
		if k.Kind != yaml.ScalarNode || v.Kind != yaml.ScalarNode || k.Value == "" {
			return nil, fmt.Errorf("line %d: want label: value pairs", k.Line)
		}
		labels[k.Value] = v.Value
	}
	return labels, nil
}

// proxyJumpOf finds the jump host in ssh arguments as Ansible users write
// them: -J HOST, -o ProxyJump=HOST, or -o ProxyCommand="ssh -W %h:%p HOST".
func proxyJumpOf(args string) string {
	words, err := shlexSplit(args)
	if err != nil {
		return ""
	}
	for i := 0; i < len(words); i++ {
		w := words[i]
		next := func() string {
			if i+1 < len(words) {
				i++
				return words[i]
			}
			return ""
		}
		switch {
		case w == "-J":
			return next()
		case strings.HasPrefix(w, "-J"):
			return w[2:]
		case w == "-o" || strings.HasPrefix(w, "-o"):
			opt := strings.TrimPrefix(w, "-o")
			if opt == "" {
				opt = next()
			}
			key, val, ok := strings.Cut(opt, "=")
			if !ok {
				key, val, _ = strings.Cut(opt, " ")
			}
			switch strings.ToLower(strings.TrimSpace(key)) {
			case "proxyjump":
				return strings.TrimSpace(val)
			case "proxycommand":
				cmd, err := shlexSplit(val)
				if err != nil || len(cmd) == 0 || !strings.HasSuffix(cmd[0], "ssh") {
					continue
				}
				host, port := "", ""
				for j := 1; j < len(cmd); j++ {
					switch c := cmd[j]; {
					case c == "-W", c == "-l", c == "-i", c == "-o", c == "-F":
						j++
					case c == "-p" && j+1 < len(cmd):
						port = cmd[j+1]
						j++
					case strings.HasPrefix(c, "-"):
					default:
						host = c
					}
				}
				if host != "" && port != "" {
					return host + ":" + port
				}
				return host
			}
		}
	}
	return ""
}
