package main

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"github.com/fleetaudit/fleetaudit/internal/safeio"
	"github.com/fleetaudit/fleetaudit/internal/strictyaml"
)

// maxConfigBytes bounds the config file; real ones are a few lines.
const maxConfigBytes = 1 << 20

// notConfigKeys are flags that mean nothing in a config file or the
// environment (the file is named by --config or FLEETAUDIT_CONFIG).
var notConfigKeys = []string{"config", "help", "version"}

// cobraCommands are cobra's own commands: they read their flags themselves,
// so a config file or variable could not set them.
var cobraCommands = []string{"completion", "help"}

// configLayout is what the config file may hold. The top level has the
// global keys, the root command's flags, which mean the same in every
// command (log-level); each command with flags of its own has a section
// named after it holding them, its subcommands' included (policies: holds
// list's format). A flag name repeats across commands with different
// meanings (format, root, output), which is why no command's key is
// accepted at the top level.
type configLayout struct {
	globals  []string
	sections map[string][]string
}

func layoutOf(root *cobra.Command) configLayout {
	l := configLayout{sections: map[string][]string{}}
	root.PersistentFlags().VisitAll(func(f *pflag.Flag) {
		if !slices.Contains(notConfigKeys, f.Name) {
			l.globals = append(l.globals, f.Name)
		}
	})
	slices.Sort(l.globals)
	for _, c := range root.Commands() {
		if slices.Contains(cobraCommands, c.Name()) {
			continue
		}
		if keys := l.commandKeys(c); len(keys) > 0 {
			l.sections[c.Name()] = keys
		}
	}
	return l
}

// commandKeys lists the flags of c and of every command below it, the
// global ones left out.
func (l configLayout) commandKeys(c *cobra.Command) []string {
	var names []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if !slices.Contains(names, f.Name) && !slices.Contains(notConfigKeys, f.Name) && !slices.Contains(l.globals, f.Name) {
				names = append(names, f.Name)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(c)
	slices.Sort(names)
	return names
}

// topKeys are the keys the top level accepts: the globals and the sections.
func (l configLayout) topKeys() []string {
	return slices.Sorted(slices.Values(append(slices.Clone(l.globals), slices.Collect(maps.Keys(l.sections))...)))
}

// sectionsWith names the sections that hold key, as "audit:, gate: or
// policies:".
func (l configLayout) sectionsWith(key string) string {
	var in []string
	for _, name := range slices.Sorted(maps.Keys(l.sections)) {
		if slices.Contains(l.sections[name], key) {
			in = append(in, name+":")
		}
	}
	switch len(in) {
	case 0:
		return ""
	case 1:
		return in[0]
	}
	return strings.Join(in[:len(in)-1], ", ") + " or " + in[len(in)-1]
}

// topCommand is the command right below the root that cmd runs under: the
// one whose section applies.
func topCommand(cmd *cobra.Command) *cobra.Command {
	for cmd.HasParent() && cmd.Parent().HasParent() {
		cmd = cmd.Parent()
	}
	return cmd
}

// readConfig reads the config file for a run of the command named section:
// the global keys of the top level and the keys of that section; other
// sections are checked and left alone. Every key not where it belongs is
// an error naming the file and line, with the keys that are known there.
func readConfig(file string, l configLayout, section string) (map[string]any, error) {
	data, err := safeio.ReadFile(file, maxConfigBytes)
	if err != nil {
		return nil, fmt.Errorf("reading config file: %w", err)
	}
	if len(data) == 0 {
		return nil, nil
	}
	_, top, err := strictyaml.DecodeMapping(data)
	if err != nil {
		return nil, fmt.Errorf("config file %s: %w", file, err)
	}
	var errs []error
	fail := func(k *yaml.Node, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s:%d: "+format, append([]any{file, k.Line}, args...)...))
	}
	values := map[string]any{}
	decode := func(k, v *yaml.Node) {
		if err := decodeInto(values, k, v); err != nil {
			fail(k, "%w", err)
		}
	}
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], top.Content[i+1]
		known, isSection := l.sections[k.Value]
		switch {
		case isSection && v.Kind == yaml.ScalarNode && v.Tag == "!!null":
			// "audit:" with every line below commented out.
		case isSection && v.Kind != yaml.MappingNode:
			fail(k, "%s: want a mapping of the %s command's settings (known: %s)", k.Value, k.Value, strings.Join(known, ", "))
		case isSection:
			for j := 0; j+1 < len(v.Content); j += 2 {
				sk, sv := v.Content[j], v.Content[j+1]
				switch {
				case slices.Contains(known, sk.Value):
					if k.Value == section {
						decode(sk, sv)
					}
				case slices.Contains(l.globals, sk.Value):
					fail(sk, "%q in the %s section: it is a top-level key (it applies to every command)", sk.Value, k.Value)
				default:
					hint := strictyaml.DidYouMean(sk.Value, known, "")
					if in := l.sectionsWith(sk.Value); in != "" && hint == "" {
						hint = " (it belongs under " + in + ")"
					}
					fail(sk, "unknown key %q in the %s section%s; known: %s", sk.Value, k.Value, hint, strings.Join(known, ", "))
				}
			}
		case slices.Contains(l.globals, k.Value):
			decode(k, v)
		case l.sectionsWith(k.Value) != "":
			fail(k, "%q is not a top-level key: it belongs under %s (a command's settings go in its section)", k.Value, l.sectionsWith(k.Value))
		default:
			hint := strictyaml.DidYouMean(k.Value, l.topKeys(), "")
			if hint == "" {
				hint = l.didYouMeanIn(k.Value)
			}
			fail(k, "unknown key %q in the top level%s; known: %s", k.Value, hint, strings.Join(l.topKeys(), ", "))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return values, nil
}

// didYouMeanIn suggests the command key closest to name, with its section.
func (l configLayout) didYouMeanIn(name string) string {
	var all []string
	for _, keys := range l.sections {
		all = append(all, keys...)
	}
	slices.Sort(all)
	if c, ok := strictyaml.Closest(name, slices.Compact(all)); ok {
		return fmt.Sprintf(" (did you mean %q under %s?)", c, l.sectionsWith(c))
	}
	return ""
}

func decodeInto(values map[string]any, k, v *yaml.Node) error {
	var val any
	if err := v.Decode(&val); err != nil {
		return fmt.Errorf("%s: %w", k.Value, err)
	}
	if _, ok := val.(map[string]any); ok {
		return fmt.Errorf("%s: want a value or a list, got a mapping", k.Value)
	}
	values[k.Value] = val
	return nil
}

// envName is the variable a flag of the running command is read from:
// FLEETAUDIT_LOG_LEVEL for a global flag, FLEETAUDIT_<SECTION>_<FLAG> for a
// command's own (FLEETAUDIT_AUDIT_FORMAT), so a variable set for one command
// never changes another.
func (l configLayout) envName(section string, f *pflag.Flag) string {
	name := f.Name
	if !slices.Contains(l.globals, f.Name) {
		name = section + "-" + name
	}
	return "FLEETAUDIT_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}
