package main

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"github.com/fleetaudit/fleetaudit/internal/safeio"
	"github.com/fleetaudit/fleetaudit/internal/strictyaml"
)

// maxConfigBytes bounds the config file; real ones are a few lines.
const maxConfigBytes = 1 << 20

// notConfigKeys are flags that mean nothing in a config file.
var notConfigKeys = []string{"config", "help", "version"}

// readConfig reads the config file for the command cmd runs: top-level keys
// are flag names of any command, and a section named after a command
// (audit:, gate:, collect:, policies:) holds that command's flags and wins
// over the top level when that command runs. An unknown key is an error
// naming the file and line, with the closest known key.
func readConfig(file string, cmd *cobra.Command) (map[string]any, error) {
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
	root := cmd.Root()
	running := cmd
	for running.HasParent() && running.Parent() != root {
		running = running.Parent()
	}
	sections := map[string][]string{}
	for _, c := range root.Commands() {
		sections[c.Name()] = flagNames(c)
	}
	everyFlag := flagNames(root)

	var errs []error
	unknown := func(k *yaml.Node, where string, known []string) {
		errs = append(errs, fmt.Errorf("%s:%d: unknown key %q in %s%s", file, k.Line, k.Value, where, strictyaml.DidYouMean(k.Value, known, "")))
	}
	values := map[string]any{}
	var mine *yaml.Node
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], top.Content[i+1]
		if known, ok := sections[k.Value]; ok && v.Kind == yaml.MappingNode {
			for j := 0; j+1 < len(v.Content); j += 2 {
				if sk := v.Content[j]; !slices.Contains(known, sk.Value) {
					unknown(sk, "the "+k.Value+" section", known)
				}
			}
			if k.Value == running.Name() {
				mine = v
			}
			continue
		}
		if !slices.Contains(everyFlag, k.Value) {
			unknown(k, "the top level", append(slices.Sorted(maps.Keys(sections)), everyFlag...))
			continue
		}
		if err := decodeInto(values, k, v); err != nil {
			errs = append(errs, fmt.Errorf("%s:%d: %w", file, k.Line, err))
		}
	}
	if mine != nil {
		for j := 0; j+1 < len(mine.Content); j += 2 {
			if err := decodeInto(values, mine.Content[j], mine.Content[j+1]); err != nil {
				errs = append(errs, fmt.Errorf("%s:%d: %w", file, mine.Content[j].Line, err))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return values, nil
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

// flagNames lists the flags of c and every command below it, with the
// persistent flags they inherit.
func flagNames(c *cobra.Command) []string {
	var names []string
	add := func(f *pflag.Flag) {
		if !slices.Contains(names, f.Name) && !slices.Contains(notConfigKeys, f.Name) {
			names = append(names, f.Name)
		}
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(add)
		c.InheritedFlags().VisitAll(add)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(c)
	slices.Sort(names)
	return names
}
