package fleets

import (
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

//go:embed builtin/*.yaml
var builtinFS embed.FS

// ErrInvalidProfile is wrapped by every error about the content of a profile
// file (syntax, unknown keys, bad values, includes).
var ErrInvalidProfile = errors.New("invalid fleet profile")

// ErrUnknownFleet is wrapped when a host's fleet cannot be decided: its
// inventory names a fleet no profile defines, or no profile matches it.
// Audits report it as the unknown-fleet finding.
var ErrUnknownFleet = errors.New("unknown fleet")

// Set is a loaded, resolved set of profiles. It is read-only after Load and
// safe for concurrent use.
type Set struct {
	resolved map[string]*Profile
	// order is the matching order: user profiles in load order, then the
	// built-ins that were not overridden, by name.
	order []string
}

// Load reads the built-in profiles (when builtin is true) and then every
// *.yaml and *.yml file directly inside each dir, in file-name order. A user
// profile replaces the built-in of the same name entirely; two user files
// defining the same name are an error. Every profile is resolved at load, so
// an include cycle or unknown include is reported here, with every other bad
// file, naming the file.
func Load(builtin bool, dirs ...string) (*Set, error) {
	var errs []error
	raw := map[string]*Profile{}
	var builtins, users []string
	if builtin {
		files, err := fs.Glob(builtinFS, "builtin/*.yaml")
		if err != nil {
			return nil, err
		}
		for _, f := range files { // fs.Glob returns names sorted
			data, err := builtinFS.ReadFile(f)
			if err != nil {
				return nil, err
			}
			p, err := parseProfile(data, strings.TrimSuffix(path.Base(f), ".yaml"))
			if err != nil {
				// A broken built-in is a bug in this package, not user input.
				return nil, fmt.Errorf("built-in %s: %w: %w", f, ErrInvalidProfile, err)
			}
			p.Source = f
			raw[p.Name] = p
			builtins = append(builtins, p.Name)
		}
	}
	userSource := map[string]string{}
	for _, dir := range dirs {
		files, err := profileFiles(dir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, f := range files {
			p, err := readProfile(f)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if prev, ok := userSource[p.Name]; ok {
				errs = append(errs, fmt.Errorf("%s: %w: profile %q is already defined in %s", f, ErrInvalidProfile, p.Name, prev))
				continue
			}
			userSource[p.Name] = f
			raw[p.Name] = p
			users = append(users, p.Name)
		}
	}
	s := &Set{resolved: map[string]*Profile{}, order: users}
	for _, name := range builtins {
		if _, overridden := userSource[name]; !overridden {
			s.order = append(s.order, name)
		}
	}
	for _, name := range sortedKeys(raw) {
		p, err := resolve(raw, name)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w: %w", raw[name].Source, ErrInvalidProfile, err))
			continue
		}
		s.resolved[name] = p
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return s, nil
}

func profileFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("fleet profile directory: %w", err)
	}
	var files []string
	for _, e := range entries { // ReadDir sorts by name
		ext := filepath.Ext(e.Name())
		if ext != ".yaml" && ext != ".yml" || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		f := filepath.Join(dir, e.Name())
		// Stat follows symlinks: a linked profile counts, a linked directory does not.
		if fi, err := os.Stat(f); err != nil || !fi.Mode().IsRegular() {
			if err != nil {
				return nil, fmt.Errorf("fleet profile: %w", err)
			}
			continue
		}
		files = append(files, f)
	}
	return files, nil
}

func readProfile(file string) (*Profile, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("fleet profile: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxProfileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("fleet profile %s: %w", file, err)
	}
	base := filepath.Base(file)
	p, err := parseProfile(data, strings.TrimSuffix(base, filepath.Ext(base)))
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", file, ErrInvalidProfile, err)
	}
	p.Source = file
	return p, nil
}

// Names returns the name of every profile, sorted.
func (s *Set) Names() []string {
	return sortedKeys(s.resolved)
}

// MatchOrder returns the names of the profiles Match tries, in order.
func (s *Set) MatchOrder() []string {
	var names []string
	for _, n := range s.order {
		if n != Common && !s.resolved[n].Match.IsZero() {
			names = append(names, n)
		}
	}
	return names
}

// Resolve returns the named profile with its includes merged in; the result
// is a copy the caller may change.
//
// Includes are linearized depth-first, each profile once, in the order they
// are written (a diamond through common merges common once, first); the
// profile itself comes last and later wins:
//   - params: mappings merge key by key, later wins; lists and scalars replace;
//   - rules.include and rules.exclude: union in order; excludes apply after
//     every include, so an exclude anywhere in the chain removes the rule;
//   - rules.severity: merged by rule id, later wins;
//   - name, description and match are the profile's own: a profile does not
//     inherit the hosts its includes match.
//
// A fleet always selects the rules that name it (rules.include gains
// "tag:NAME"), and a chain that declares no include at all also selects the
// rules tagged "all": a profile without a rules section is never silent.
// Includes of the result lists the merged profiles in merge order.
func (s *Set) Resolve(name string) (*Profile, error) {
	p, ok := s.resolved[name]
	if !ok {
		return nil, fmt.Errorf("fleet %q: %w (profiles: %s)", name, ErrUnknownFleet, strings.Join(s.Names(), ", "))
	}
	return p.clone(), nil
}

func (p *Profile) clone() *Profile {
	c := *p
	c.Includes = slices.Clone(p.Includes)
	c.Match = Match{
		Groups:    slices.Clone(p.Match.Groups),
		Labels:    cloneMap(p.Match.Labels),
		Hostnames: slices.Clone(p.Match.Hostnames),
	}
	c.Rules = Rules{
		Include:  slices.Clone(p.Rules.Include),
		Exclude:  slices.Clone(p.Rules.Exclude),
		Severity: cloneMap(p.Rules.Severity),
	}
	if p.Params != nil {
		c.Params = deepCopy(p.Params).(map[string]any)
	}
	return &c
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		c := make(map[string]any, len(v))
		for k, item := range v {
			c[k] = deepCopy(item)
		}
		return c
	case []any:
		c := make([]any, len(v))
		for i, item := range v {
			c[i] = deepCopy(item)
		}
		return c
	}
	return v
}
