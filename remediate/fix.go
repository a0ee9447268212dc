package remediate

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// Fix kinds: the schema rules attach to a finding's "fix" (see
// docs/writing-policies.md, "Fixes").
const (
	KindBootParam = "boot-param"
	KindSysctl    = "sysctl"
	KindLimits    = "limits"
	KindLogind    = "logind"
	KindModules   = "modules"
	KindNCCLEnv   = "nccl-env"
	KindPod       = "pod"
	// KindServiceLimits sets resource limits (LimitMEMLOCK= ...) of one
	// systemd service in a drop-in of its own.
	KindServiceLimits = "service-limits"
)

// Fix is a finding's structured fix, decoded and checked.
type Fix struct {
	Kind string `json:"kind"`
	// Set maps a key to its value (boot params, sysctls, logind keys, NCCL
	// variables; for limits: domain, type, item, value).
	Set map[string]string `json:"set,omitempty"`
	// Remove are boot params to drop.
	Remove []string `json:"remove,omitempty"`
	// Load and Blacklist are kernel modules.
	Load      []string `json:"load,omitempty"`
	Blacklist []string `json:"blacklist,omitempty"`
	// Pods are the changes of a pod fix, one per finding; each is placed
	// in the manifest its finding's evidence (pods.<i>) cites.
	Pods []PodChange `json:"pods,omitempty"`
	// Services map a systemd unit to the [Service] limits a
	// service-limits fix sets ({"slurmd.service": {"LimitMEMLOCK":
	// "infinity"}}); a finding's "unit" and "set".
	Services map[string]map[string]string `json:"services,omitempty"`
}

// ErrNoFix marks a finding whose rule attached no fix.
var ErrNoFix = errors.New("the rule attaches no fix")

// ParseFix checks a finding's fix against the schema: one kind, known keys,
// string values.
func ParseFix(raw map[string]any) (Fix, error) {
	if len(raw) == 0 {
		return Fix{}, ErrNoFix
	}
	var f Fix
	kind, ok := raw["kind"].(string)
	if !ok {
		return Fix{}, errors.New(`fix: no "kind"`)
	}
	f.Kind = kind
	allowed := map[string][]string{
		KindBootParam:     {"set", "remove"},
		KindSysctl:        {"set"},
		KindLimits:        {"set"},
		KindLogind:        {"set"},
		KindModules:       {"load", "blacklist"},
		KindNCCLEnv:       {"set"},
		KindPod:           {"file", "container", "add_capabilities", "volume_size_limit", "resources", "env", "remove_env"},
		KindServiceLimits: {"unit", "set"},
	}[kind]
	if allowed == nil {
		return Fix{}, fmt.Errorf("fix: unknown kind %q", kind)
	}
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		if k != "kind" && !slices.Contains(allowed, k) {
			return Fix{}, fmt.Errorf("fix %s: unknown key %q", kind, k)
		}
	}
	if kind == KindPod {
		c, err := parsePodChange(raw)
		if err != nil {
			return Fix{}, fmt.Errorf("fix pod: %w", err)
		}
		f.Pods = []PodChange{c}
		return f, nil
	}
	var err error
	if f.Set, err = stringMap(raw, "set"); err != nil {
		return Fix{}, fmt.Errorf("fix %s: %w", kind, err)
	}
	if kind == KindServiceLimits {
		unit, _ := raw["unit"].(string)
		if !unitName.MatchString(unit) {
			return Fix{}, fmt.Errorf("fix %s: unit %#v: want a service unit name (name.service)", kind, raw["unit"])
		}
		if len(f.Set) == 0 {
			return Fix{}, fmt.Errorf("fix %s: nothing to set", kind)
		}
		f.Services = map[string]map[string]string{unit: f.Set}
		f.Set = nil
		return f, f.check()
	}
	for key, dst := range map[string]*[]string{"remove": &f.Remove, "load": &f.Load, "blacklist": &f.Blacklist} {
		if *dst, err = stringList(raw, key); err != nil {
			return Fix{}, fmt.Errorf("fix %s: %w", kind, err)
		}
	}
	if len(f.Set)+len(f.Remove)+len(f.Load)+len(f.Blacklist) == 0 {
		return Fix{}, fmt.Errorf("fix %s: nothing to set", kind)
	}
	return f, f.check()
}

func stringMap(raw map[string]any, key string) (map[string]string, error) {
	v, ok := raw[key]
	if !ok {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: want an object", key)
	}
	out := make(map[string]string, len(m))
	for k, x := range m {
		s, ok := x.(string)
		if !ok {
			return nil, fmt.Errorf("%s.%s: want a string, not %T", key, k, x)
		}
		out[k] = s
	}
	return out, nil
}

func stringList(raw map[string]any, key string) ([]string, error) {
	v, ok := raw[key]
	if !ok {
		return nil, nil
	}
	l, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s: want a list", key)
	}
	out := make([]string, 0, len(l))
	for i, x := range l {
		s, ok := x.(string)
		if !ok {
			return nil, fmt.Errorf("%s[%d]: want a string, not %T", key, i, x)
		}
		out = append(out, s)
	}
	return out, nil
}

var (
	// Values are written into shell, INI and key=value files: only
	// characters that mean nothing special in any of them.
	safeValue = regexp.MustCompile(`^[A-Za-z0-9_.,:/@%+=-]*$`)
	// A sysctl may hold several values ("4096 87380 6291456"): sysctl.d
	// takes the rest of the line, so spaces between safe words are safe.
	sysctlValue = regexp.MustCompile(`^[A-Za-z0-9_.,:/@%+=-]+([ \t]+[A-Za-z0-9_.,:/@%+=-]+)*$`)
	paramName   = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*$`)
	sysctlKey   = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_./-]*$`)
	iniKey      = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*$`)
	envName     = regexp.MustCompile(`^(NCCL|FI)_[A-Za-z0-9_]+$`)
	moduleName  = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	limitDomain = regexp.MustCompile(`^[*%@A-Za-z0-9_.:-]+$`)
	// unitName is a service unit (a template instance included), one path
	// component: systemd's unit name characters less the backslash.
	unitName = regexp.MustCompile(`^[A-Za-z0-9_:-][A-Za-z0-9_.:@-]*\.service$`)
	// serviceLimit is a resource-limit directive of [Service]
	// (systemd.exec(5), "Process Properties").
	serviceLimit = regexp.MustCompile(`^Limit[A-Z]+$`)
)

func (f Fix) check() error {
	for unit, set := range f.Services {
		for k, v := range set {
			if !serviceLimit.MatchString(k) {
				return fmt.Errorf("fix %s: %s: %s is not a Limit*= directive", f.Kind, unit, k)
			}
			if v == "" || !safeValue.MatchString(v) {
				return fmt.Errorf("fix %s: %s: %s=%q: a value must be non-empty and hold only letters, digits and _.,:/@%%+=-", f.Kind, unit, k, v)
			}
		}
	}
	for k, v := range f.Set {
		if f.Kind == KindLimits && k == "domain" {
			continue // checked below: "*", "@group", "%group"
		}
		if f.Kind == KindSysctl && sysctlValue.MatchString(v) {
			continue
		}
		if !safeValue.MatchString(v) || v == "" && f.Kind != KindBootParam {
			return fmt.Errorf("fix %s: %s=%q: a value must be non-empty and hold only letters, digits and _.,:/@%%+=-", f.Kind, k, v)
		}
	}
	var keyRE *regexp.Regexp
	switch f.Kind {
	case KindBootParam:
		keyRE = paramName
	case KindSysctl:
		keyRE = sysctlKey
	case KindLogind:
		keyRE = iniKey
	case KindNCCLEnv:
		keyRE = envName
	case KindLimits:
		for k := range f.Set {
			if !slices.Contains([]string{"domain", "type", "item", "value"}, k) {
				return fmt.Errorf("fix limits: set.%s: want domain, type, item, value", k)
			}
		}
		if f.Set["item"] == "" || f.Set["value"] == "" {
			return errors.New("fix limits: set.item and set.value are required")
		}
		if d := f.Set["domain"]; d != "" && !limitDomain.MatchString(d) {
			return fmt.Errorf("fix limits: domain %q", d)
		}
		if t := f.Set["type"]; t != "" && t != "-" && t != "soft" && t != "hard" {
			return fmt.Errorf("fix limits: type %q: want -, soft or hard", t)
		}
	}
	if keyRE != nil {
		for k := range f.Set {
			if !keyRE.MatchString(k) {
				return fmt.Errorf("fix %s: key %q is not a valid name", f.Kind, k)
			}
		}
	}
	for _, p := range f.Remove {
		if !paramName.MatchString(p) {
			return fmt.Errorf("fix %s: remove %q is not a valid name", f.Kind, p)
		}
	}
	for _, m := range slices.Concat(f.Load, f.Blacklist) {
		if !moduleName.MatchString(m) {
			return fmt.Errorf("fix %s: module %q is not a valid name", f.Kind, m)
		}
	}
	return nil
}

// merge joins the fixes of one (rule, fleet) group; two findings asking for
// different values of one key cannot both be met.
func (f Fix) merge(o Fix) (Fix, error) {
	if f.Kind != o.Kind {
		return f, fmt.Errorf("the findings ask for fixes of kinds %s and %s", f.Kind, o.Kind)
	}
	out := Fix{Kind: f.Kind, Set: maps.Clone(f.Set)}
	if f.Kind == KindPod {
		out.Pods = slices.Clone(f.Pods)
		for _, c := range o.Pods {
			if !slices.ContainsFunc(out.Pods, c.equal) {
				out.Pods = append(out.Pods, c)
			}
		}
		return out, nil
	}
	if f.Kind == KindServiceLimits {
		out.Services = map[string]map[string]string{}
		for _, src := range []map[string]map[string]string{f.Services, o.Services} {
			for unit, set := range src {
				if out.Services[unit] == nil {
					out.Services[unit] = map[string]string{}
				}
				for k, v := range set {
					if old, ok := out.Services[unit][k]; ok && old != v {
						return f, fmt.Errorf("the findings ask for %s %s=%s and %s=%s", unit, k, old, k, v)
					}
					out.Services[unit][k] = v
				}
			}
		}
		return out, nil
	}
	if f.Kind == KindLimits {
		// The soft and the hard limit of one item to one value are one
		// line of type "-".
		a, b := maps.Clone(f.Set), maps.Clone(o.Set)
		ta, tb := cmpOr(a["type"], "-"), cmpOr(b["type"], "-")
		delete(a, "type")
		delete(b, "type")
		if maps.Equal(a, b) && ta != tb {
			a["type"] = "-"
			return Fix{Kind: f.Kind, Set: a}, nil
		}
		if !maps.Equal(f.Set, o.Set) {
			return f, fmt.Errorf("the findings ask for different limits (%s and %s)", describeSet(f.Set), describeSet(o.Set))
		}
		return f, nil
	}
	for k, v := range o.Set {
		if old, ok := out.Set[k]; ok && old != v {
			return f, fmt.Errorf("the findings ask for %s=%s and %s=%s", k, old, k, v)
		}
		if out.Set == nil {
			out.Set = map[string]string{}
		}
		out.Set[k] = v
	}
	union := func(a, b []string) []string {
		u := slices.Concat(a, b)
		slices.Sort(u)
		return slices.Compact(u)
	}
	out.Remove, out.Load, out.Blacklist = union(f.Remove, o.Remove), union(f.Load, o.Load), union(f.Blacklist, o.Blacklist)
	for _, p := range out.Remove {
		if _, ok := out.Set[p]; ok {
			return f, fmt.Errorf("the findings ask to set and to remove %s", p)
		}
	}
	return out, nil
}

func describeSet(m map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, " ")
}

// String is the fix in one line, for people.
func (f Fix) String() string {
	var parts []string
	if len(f.Set) > 0 {
		parts = append(parts, "set "+describeSet(f.Set))
	}
	if len(f.Remove) > 0 {
		parts = append(parts, "remove "+strings.Join(f.Remove, " "))
	}
	if len(f.Load) > 0 {
		parts = append(parts, "load "+strings.Join(f.Load, " "))
	}
	if len(f.Blacklist) > 0 {
		parts = append(parts, "blacklist "+strings.Join(f.Blacklist, " "))
	}
	for _, c := range f.Pods {
		parts = append(parts, c.String())
	}
	for _, unit := range slices.Sorted(maps.Keys(f.Services)) {
		parts = append(parts, unit+": "+describeSet(f.Services[unit]))
	}
	return f.Kind + ": " + strings.Join(parts, "; ")
}
