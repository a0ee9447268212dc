package fleets

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fleetaudit/fleetaudit/internal/safeio"
	"github.com/fleetaudit/fleetaudit/policies"
)

//go:embed builtin/*.yaml
var builtinFS embed.FS

// ErrInvalidProfile is wrapped by every error about the content of a profile
// file (syntax, unknown keys, bad values, includes).
var ErrInvalidProfile = errors.New("invalid fleet profile")

// Set is a loaded, resolved set of profiles. It is read-only after Load and
// safe for concurrent use.
type Set struct {
	resolved map[string]*Profile
	// raw are the profiles as their files wrote them, for Check.
	raw map[string]rawProfile
	// order is the matching order: user profiles in load order, then the
	// built-ins that were not overridden, by name.
	order []string
}

// rawProfile is a profile as its file wrote it, with where it wrote what.
type rawProfile struct {
	profile *Profile
	pos     positions
}

// Load reads the built-in profiles (when builtin is true) and then each
// path: a profile file, or a directory whose *.yaml and *.yml files directly
// inside it are read in file-name order. Only regular files are read (a FIFO
// or device named as a profile is an error, never waited on), each up to
// 1 MiB. A user
// profile replaces the built-in of the same name entirely; two user files
// defining the same name are an error. Every profile is resolved at load, so
// an include cycle or unknown include is reported here, with every other bad
// file, naming the file.
func Load(builtin bool, dirs ...string) (*Set, error) {
	var errs []error
	raw := map[string]*Profile{}
	pos := map[string]positions{}
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
			p, at, err := parseProfileAt(data, strings.TrimSuffix(path.Base(f), ".yaml"))
			if err != nil {
				// A broken built-in is a bug in this package, not user input.
				return nil, fmt.Errorf("built-in %s: %w: %w", f, ErrInvalidProfile, err)
			}
			p.Source = f
			raw[p.Name], pos[p.Name] = p, at
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
			p, at, err := readProfile(f)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if prev, ok := userSource[p.Name]; ok {
				errs = append(errs, fmt.Errorf("%s: %w: profile %q is already defined in %s", f, ErrInvalidProfile, p.Name, prev))
				continue
			}
			userSource[p.Name] = f
			raw[p.Name], pos[p.Name] = p, at
			users = append(users, p.Name)
		}
	}
	s := &Set{resolved: map[string]*Profile{}, raw: map[string]rawProfile{}, order: users}
	for name, p := range raw {
		s.raw[name] = rawProfile{profile: p, pos: pos[name]}
	}
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

// profileFiles lists the profile files of a --fleets path: the path itself
// when it is not a directory, else its *.yaml and *.yml entries.
func profileFiles(p string) ([]string, error) {
	info, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("fleet profiles: %w", err)
	}
	if !info.IsDir() {
		return []string{p}, nil // readProfile refuses what is not a regular file
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return nil, fmt.Errorf("fleet profile directory: %w", err)
	}
	var files []string
	for _, e := range entries { // ReadDir sorts by name
		ext := filepath.Ext(e.Name())
		if ext != ".yaml" && ext != ".yml" || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		f := filepath.Join(p, e.Name())
		// Stat follows symlinks: a linked profile counts, a linked directory
		// does not; anything else (a FIFO, a device) is refused by readProfile.
		fi, err := os.Stat(f)
		if err != nil {
			return nil, fmt.Errorf("fleet profile: %w", err)
		}
		if fi.IsDir() {
			continue
		}
		files = append(files, f)
	}
	return files, nil
}

func readProfile(file string) (*Profile, positions, error) {
	data, err := safeio.ReadFile(file, maxProfileBytes)
	if err != nil {
		return nil, positions{}, fmt.Errorf("fleet profile: %w", err)
	}
	base := filepath.Base(file)
	p, at, err := parseProfileAt(data, strings.TrimSuffix(base, filepath.Ext(base)))
	if err != nil {
		return nil, positions{}, fmt.Errorf("%s: %w: %w", file, ErrInvalidProfile, err)
	}
	p.Source = file
	return p, at, nil
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
		return nil, fmt.Errorf("fleet %q: %w (profiles: %s)", name, policies.ErrUnknownFleet, strings.Join(s.Names(), ", "))
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
		Facts:     Facts{GPUs: cloneWant(p.Match.Facts.GPUs), RDMA: cloneWant(p.Match.Facts.RDMA)},
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

func cloneWant(w *Want) *Want {
	if w == nil {
		return nil
	}
	c := *w
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
