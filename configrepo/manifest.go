// Package configrepo renders the fleets of a layered config repo into root
// trees and gates a change to it: audit every fleet at the base and head of
// the change and report what the change introduces.
//
// A repo holds fleetaudit.yaml, layers/<name>/ (files as they sit under /)
// and optionally k8s/<fleet>/ (manifests audited with the pod rules).
//
// The change under review must not be able to alter what the gate reads. A
// committed ref is read as raw blobs (git ls-tree, then git cat-file --batch
// by object id), never through git archive or a checkout: .gitattributes
// (export-ignore, export-subst, eol, working-tree-encoding), filter drivers
// and replace refs play no part. Git runs with a fixed environment (PATH,
// HOME and XDG_CONFIG_HOME of the caller's, no system config, nothing of
// GIT_DIR or GIT_CONFIG_*). The work tree is read as the files the user has,
// opened inside the repo only. Symlinks and submodules are recorded as
// refused, never rendered; paths that are absolute, unclean or hold ".." or
// ".git" are refused; a checkout holds at most 200,000 files and 1 GiB.
//
// A render command (render: in fleetaudit.yaml) is code from the change: it
// runs only when allowed, once per fleet, in the checkout written to a
// scratch directory, in a process group of its own, with an environment of
// PATH, HOME and TMPDIR (scratch directories), LANG=C, LC_ALL=C,
// FLEETAUDIT_FLEET, FLEETAUDIT_ROOT and FLEETAUDIT_LAYERS, and nothing else
// (no tokens or credentials of the caller's). The group is killed when the
// command times out (5 minutes), when the gate is cancelled, and when the
// command exits, so background children neither hold the gate nor outlive
// the render; a child that leaves the group (setsid) is beyond that, but its
// hold on the output pipe is cut. What an error keeps of the command's
// output is its last lines, bounded, with control characters escaped.
package configrepo

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/fleetaudit/fleetaudit/internal/strictyaml"
)

// ManifestFile is the config repo's manifest, at the repo's top.
const ManifestFile = "fleetaudit.yaml"

// maxManifestBytes bounds fleetaudit.yaml.
const maxManifestBytes = 1 << 20

// Manifest is fleetaudit.yaml.
type Manifest struct {
	// Fleets maps a fleet name to what it stacks.
	Fleets map[string]*Fleet `yaml:"fleets"`
	// Render, when set, is a command that writes each fleet's root instead
	// of stacking layers (Ansible, image builders).
	Render *RenderCommand `yaml:"render"`
	// Inventory is a repo path of an inventory, for the blast radius.
	Inventory string `yaml:"inventory"`
}

// Fleet is one fleet of the repo.
type Fleet struct {
	// Layers are layer names under layers/, stacked in order.
	Layers []string `yaml:"layers"`
	// Profile is the fleet profile its findings are judged by; the fleet's
	// name when empty.
	Profile string `yaml:"profile"`
	// K8s is a repo directory of manifests for the fleet; k8s/<fleet> when
	// that exists.
	K8s string `yaml:"k8s"`
	// Baseline is a repo path of a snapshot of a typical host of the fleet:
	// facts a repo cannot know (driver, devices, libraries) come from it.
	Baseline string `yaml:"baseline"`
	// Labels are the labels of the fleet's hosts: rules see them, and the
	// blast radius counts the inventory hosts that carry all of them.
	Labels map[string]string `yaml:"labels"`
}

// RenderCommand runs in the checked-out repo once per fleet, with
// FLEETAUDIT_FLEET, FLEETAUDIT_ROOT (the directory to fill) and
// FLEETAUDIT_LAYERS (space-separated) in its environment, besides PATH, a
// scratch HOME and TMPDIR and the C locale; nothing else of the gate's.
type RenderCommand struct {
	Command []string `yaml:"command"`
}

// ParseManifest reads fleetaudit.yaml, rejecting unknown keys and paths that
// leave the repo.
func ParseManifest(data []byte) (*Manifest, error) {
	if len(data) > maxManifestBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes", ManifestFile, maxManifestBytes)
	}
	doc, top, err := strictyaml.DecodeMapping(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ManifestFile, err)
	}
	var m Manifest
	if err := strictyaml.Check(top, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", ManifestFile, err)
	}
	if err := doc.Decode(&m); err != nil {
		return nil, fmt.Errorf("%s: %w", ManifestFile, err)
	}
	if err := m.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", ManifestFile, err)
	}
	return &m, nil
}

func (m *Manifest) validate() error {
	var errs []error
	if len(m.Fleets) == 0 {
		errs = append(errs, errors.New("no fleets: want fleets: {NAME: {layers: [...]}}"))
	}
	for _, name := range m.FleetNames() {
		f := m.Fleets[name]
		if f == nil {
			errs = append(errs, fmt.Errorf("fleet %s: empty", name))
			continue
		}
		if err := checkName(name); err != nil {
			errs = append(errs, fmt.Errorf("fleet %q: %w", name, err))
		}
		if len(f.Layers) == 0 && m.Render == nil {
			errs = append(errs, fmt.Errorf("fleet %s: no layers", name))
		}
		for _, l := range f.Layers {
			if _, err := repoPath("layers/" + l); err != nil || strings.Contains(l, "/") {
				errs = append(errs, fmt.Errorf("fleet %s: layer %q: want a directory name under layers/", name, l))
			}
		}
		for field, p := range map[string]string{"k8s": f.K8s, "baseline": f.Baseline} {
			if p == "" {
				continue
			}
			if _, err := repoPath(p); err != nil {
				errs = append(errs, fmt.Errorf("fleet %s: %s: %w", name, field, err))
			}
		}
	}
	if m.Render != nil && len(m.Render.Command) == 0 {
		errs = append(errs, errors.New("render: command is empty"))
	}
	if m.Inventory != "" {
		if _, err := repoPath(m.Inventory); err != nil {
			errs = append(errs, fmt.Errorf("inventory: %w", err))
		}
	}
	return errors.Join(errs...)
}

// FleetNames returns the fleet names, sorted.
func (m *Manifest) FleetNames() []string {
	names := make([]string, 0, len(m.Fleets))
	for n := range m.Fleets {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// ProfileOf is the fleet profile a repo fleet is judged by.
func (m *Manifest) ProfileOf(fleet string) string {
	if f := m.Fleets[fleet]; f != nil && f.Profile != "" {
		return f.Profile
	}
	return fleet
}

func checkName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\\\x00") {
		return errors.New("want a plain name")
	}
	return nil
}

// repoPath cleans a slash-separated path relative to the repo top and
// refuses one that leaves it.
func repoPath(p string) (string, error) {
	if p == "" || path.IsAbs(p) || strings.Contains(p, "\\") || strings.Contains(p, "\x00") {
		return "", fmt.Errorf("%q: want a relative path inside the repo", p)
	}
	c := path.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("%q: leaves the repo", p)
	}
	return c, nil
}
