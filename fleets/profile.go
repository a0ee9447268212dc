package fleets

import (
	"errors"
	"fmt"
	"math"
	"path"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/fleetaudit/fleetaudit/internal/strictyaml"
)

// Common is the baseline profile the built-in fleets include. It is never
// matched to a host.
const Common = "common"

// TagPrefix marks a rule selector that names a tag instead of a rule id.
const TagPrefix = "tag:"

// Profile is a fleet profile. Profiles handed out by a Set are resolved:
// includes are merged in and Includes lists them in merge order.
type Profile struct {
	Name        string   `yaml:"name"`
	Description string   `yaml:"description"`
	Includes    []string `yaml:"includes"`
	Match       Match    `yaml:"match"`
	Rules       Rules    `yaml:"rules"`
	// Params are handed to policies as data.fleetaudit.params.
	Params map[string]any `yaml:"params"`

	// Source is the file the profile was read from ("builtin/NAME.yaml" for
	// built-ins).
	Source string `yaml:"-"`
}

// Match selects hosts for a profile. A host matches when any one of the
// criteria matches (groups, labels, hostnames, facts); an empty Match
// matches nothing. Set.Match tries the named criteria of every profile
// before any facts.
type Match struct {
	// Groups matches when the host is in any of these inventory groups.
	Groups []string `yaml:"groups"`
	// Labels matches when every label is present with this exact value;
	// the value "*" only requires the label to be present.
	Labels map[string]string `yaml:"labels"`
	// Hostnames are path.Match globs, compared case-insensitively.
	Hostnames []string `yaml:"hostnames"`
	// Facts matches when the host's snapshot shows every fact given.
	Facts Facts `yaml:"facts"`
}

// Facts are conditions on what a host's snapshot shows; every one given
// must hold. A host whose snapshot could not be read meets none.
type Facts struct {
	// GPUs: true wants NVIDIA GPUs (nvidia.present or a non-empty
	// nvidia.gpus), false wants a host seen without them.
	GPUs *Want `yaml:"gpus"`
	// RDMA: true wants RDMA devices (a non-empty rdma.devices), false
	// wants a host seen without them.
	RDMA *Want `yaml:"rdma"`
}

// Want is a wanted fact: true for present, false for absent.
type Want bool

// IsZero reports whether f has no condition.
func (f Facts) IsZero() bool { return f.GPUs == nil && f.RDMA == nil }

// IsZero reports whether m has no criteria.
func (m Match) IsZero() bool {
	return len(m.Groups) == 0 && len(m.Labels) == 0 && len(m.Hostnames) == 0 && m.Facts.IsZero()
}

// Rules chooses which rules of the library run for the fleet. Items of
// Include and Exclude are rule ids or "tag:TAG", both path.Match globs.
type Rules struct {
	Include []string `yaml:"include"`
	Exclude []string `yaml:"exclude"`
	// Severity overrides the severity of a rule, by rule id.
	Severity map[string]string `yaml:"severity"`
}

// Severity levels a profile may assign to a rule.
const (
	SeverityCritical = "critical"
	SeverityHigh     = "high"
	SeverityMedium   = "medium"
	SeverityLow      = "low"
	SeverityInfo     = "info"
)

func validSeverity(s string) bool {
	switch s {
	case SeverityCritical, SeverityHigh, SeverityMedium, SeverityLow, SeverityInfo:
		return true
	}
	return false
}

// maxProfileBytes bounds a profile file; real ones are a few hundred bytes.
const maxProfileBytes = 1 << 20

var (
	nameRE   = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	ruleIDRE = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	paramRE  = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
)

// parseProfile decodes and validates one profile file. defaultName is used
// when the file has no name key.
func parseProfile(data []byte, defaultName string) (*Profile, error) {
	p, _, err := parseProfileAt(data, defaultName)
	return p, err
}

// parseProfileAt is parseProfile that also says on which line each rule
// selector and parameter was written, for Set.Check.
func parseProfileAt(data []byte, defaultName string) (*Profile, positions, error) {
	p, mapping, err := decodeProfileNode(data, defaultName)
	if err != nil {
		return nil, positions{}, err
	}
	return p, positionsOf(mapping), nil
}

func decodeProfileNode(data []byte, defaultName string) (*Profile, *yaml.Node, error) {
	if len(data) > maxProfileBytes {
		return nil, nil, fmt.Errorf("larger than %d bytes", maxProfileBytes)
	}
	// yaml.v3, not viper: viper lowercases every key and splits keys on dots,
	// so the label key node.kubernetes.io/instance-type and the param key
	// p5.48xlarge would be mangled into nested maps (see
	// TestViperWouldMangleProfileKeys). Case and dots are data here.
	doc, mapping, err := strictyaml.DecodeMapping(data)
	if err != nil {
		return nil, nil, err
	}
	if err := strictyaml.Check(doc, &Profile{}); err != nil {
		return nil, nil, err
	}
	var p Profile
	if err := doc.Decode(&p); err != nil {
		return nil, nil, err
	}
	if p.Name == "" {
		p.Name = defaultName
	}
	params, err := normalizeParams(p.Params)
	if err != nil {
		return nil, nil, err
	}
	p.Params = params
	if err := p.validate(); err != nil {
		return nil, nil, err
	}
	return &p, mapping, nil
}

func (p *Profile) validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if !nameRE.MatchString(p.Name) {
		bad("name %q: want lowercase letters, digits and dashes (at most 63)", p.Name)
	}
	for _, inc := range p.Includes {
		if inc == p.Name {
			bad("includes: %q includes itself", inc)
		} else if !nameRE.MatchString(inc) {
			bad("includes: %q is not a profile name", inc)
		}
	}
	for _, g := range p.Match.Groups {
		if g == "" || strings.ContainsAny(g, " \t") {
			bad("match.groups: %q is not a group name", g)
		}
	}
	for k := range p.Match.Labels {
		if k == "" {
			bad("match.labels: empty label key")
		}
	}
	for _, h := range p.Match.Hostnames {
		if _, err := path.Match(h, ""); err != nil || h == "" {
			bad("match.hostnames: %q is not a valid glob", h)
		}
	}
	for _, field := range []struct {
		name  string
		items []string
	}{{"rules.include", p.Rules.Include}, {"rules.exclude", p.Rules.Exclude}} {
		for _, item := range field.items {
			if err := checkSelector(item); err != nil {
				bad("%s: %v", field.name, err)
			}
		}
	}
	for _, id := range sortedKeys(p.Rules.Severity) {
		if !ruleIDRE.MatchString(id) {
			bad("rules.severity: %q is not a rule id", id)
		}
		if s := p.Rules.Severity[id]; !validSeverity(s) {
			bad("rules.severity.%s: %q is not one of critical, high, medium, low, info", id, s)
		}
	}
	for _, name := range sortedKeys(p.Params) {
		if !paramRE.MatchString(name) {
			bad("params: %q is not a snake_case name", name)
			continue
		}
		if err := checkKnownParam(name, p.Params[name]); err != nil {
			bad("params.%s: %v", name, err)
		}
	}
	return errors.Join(errs...)
}

func checkSelector(item string) error {
	pattern, isTag := strings.CutPrefix(item, TagPrefix)
	if pattern == "" {
		return fmt.Errorf("%q: empty selector", item)
	}
	if _, err := path.Match(pattern, ""); err != nil {
		return fmt.Errorf("%q: bad glob", item)
	}
	if !isTag && strings.Contains(pattern, ":") {
		return fmt.Errorf("%q: only %q selectors may contain a colon", item, TagPrefix)
	}
	return nil
}

// checkKnownParam type-checks the parameters the built-in rules read, so a
// typo in a value fails at load rather than silently disabling a rule.
// Other names pass through for user policies.
func checkKnownParam(name string, v any) error {
	switch name {
	case "nofile_min", "max_map_count_min", "somaxconn_min":
		return wantCount(v)
	case "memlock_min_kb":
		if s, ok := v.(string); ok && s == "unlimited" {
			return nil
		}
		if err := wantCount(v); err != nil {
			return errors.New(`want a number of KiB or "unlimited"`)
		}
	case "forbidden_boot_params":
		return wantStrings(v)
	case "forbidden_boot_param_values":
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("want a mapping of boot param to values, got %s", typeName(v))
		}
		for _, k := range sortedKeys(m) {
			if err := wantStrings(m[k]); err != nil {
				return fmt.Errorf("%s: %v", k, err)
			}
		}
	case "nccl_min_stack_safe":
		return wantVersion(v)
	case "efa_devices_by_instance_type":
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("want a mapping of instance type to device count, got %s", typeName(v))
		}
		for _, k := range sortedKeys(m) {
			if err := wantCount(m[k]); err != nil {
				return fmt.Errorf("%s: %v", k, err)
			}
		}
	case "job_user":
		if _, ok := v.(string); !ok {
			return fmt.Errorf("want a user name, got %s", typeName(v))
		}
	case "baseline":
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("want a mapping, got %s", typeName(v))
		}
		for _, k := range sortedKeys(m) {
			switch k {
			case "nccl_version", "driver_version", "kernel_release":
				if err := wantVersion(m[k]); err != nil {
					return fmt.Errorf("%s: %v", k, err)
				}
			case "boot_params": // boot-cmdline-skew
				if err := wantStrings(m[k]); err != nil {
					return fmt.Errorf("%s: %v", k, err)
				}
			case "sysctl": // sysctl-skew
				if _, ok := m[k].(map[string]any); !ok {
					return fmt.Errorf("%s: want a mapping of sysctl to value, got %s", k, typeName(m[k]))
				}
			default:
				return fmt.Errorf("unknown key %q (known: boot_params, driver_version, kernel_release, nccl_version, sysctl)", k)
			}
		}
	default:
		return checkHazardParam(name, v)
	}
	return nil
}

func wantCount(v any) error {
	if n, ok := v.(int); ok && n >= 0 {
		return nil
	}
	return fmt.Errorf("want a non-negative integer, got %s", typeName(v))
}

func wantStrings(v any) error {
	list, ok := v.([]any)
	if !ok {
		return fmt.Errorf("want a list of strings, got %s", typeName(v))
	}
	for _, item := range list {
		if s, ok := item.(string); !ok || s == "" {
			return fmt.Errorf("want a list of strings, got %s in it", typeName(item))
		}
	}
	return nil
}

// wantVersion insists on a string: unquoted 550.90 is the float 550.9 in YAML.
func wantVersion(v any) error {
	if s, ok := v.(string); ok && s != "" {
		return nil
	}
	return fmt.Errorf("want a quoted version string, got %s", typeName(v))
}

func typeName(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("string %q", v)
	case int:
		return fmt.Sprintf("integer %d", v)
	case float64:
		return fmt.Sprintf("number %v", v)
	case bool:
		return fmt.Sprintf("boolean %v", v)
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	}
	return fmt.Sprintf("%T", v)
}

// normalizeParams makes params plain JSON-shaped data (what Rego receives):
// string-keyed maps, finite numbers, no YAML-specific types.
func normalizeParams(params map[string]any) (map[string]any, error) {
	if params == nil {
		return nil, nil
	}
	out, err := normalize(params, "params")
	if err != nil {
		return nil, err
	}
	return out.(map[string]any), nil
}

func normalize(v any, at string) (any, error) {
	switch v := v.(type) {
	case nil, string, bool, int:
		return v, nil
	case int64:
		return v, nil
	case uint64:
		return v, nil
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%s: %v is not a finite number", at, v)
		}
		return v, nil
	case []any:
		out := make([]any, len(v))
		for i, item := range v {
			n, err := normalize(item, fmt.Sprintf("%s[%d]", at, i))
			if err != nil {
				return nil, err
			}
			out[i] = n
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, item := range v {
			n, err := normalize(item, at+"."+k)
			if err != nil {
				return nil, err
			}
			out[k] = n
		}
		return out, nil
	case map[any]any:
		return nil, fmt.Errorf("%s: keys must be strings (quote them)", at)
	}
	return nil, fmt.Errorf("%s: unsupported value of type %T", at, v)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
