package fleets

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// HostFacts is what matching knows about a host.
type HostFacts struct {
	Name string
	// Fleet is the fleet the inventory names for the host, if any.
	Fleet  string
	Groups []string
	// Labels are inventory labels and, where known, Kubernetes node labels.
	Labels map[string]string
	// GPUs says whether the host has NVIDIA GPUs, RDMA whether it has RDMA
	// devices; Unknown when its snapshot could not be read or lacks the
	// section, so no facts condition matches it.
	GPUs, RDMA Presence
}

// Presence is a fact that was seen present, seen absent, or not known.
type Presence uint8

const (
	Unknown Presence = iota
	Absent
	Present
)

// PresenceOf is Present for true and Absent for false.
func PresenceOf(present bool) Presence {
	if present {
		return Present
	}
	return Absent
}

// Match returns the profile whose match selects h, in two passes over
// MatchOrder (user profiles in the order they were loaded, directory by
// directory and file name order within one, then the built-ins by name):
// first by what people named (groups, labels, hostnames), then by facts. So
// a GPU host named web-01 stays in the fleet whose hostnames say web-*, and
// a GPU host no name matches still lands in a GPU fleet. h.Fleet is not
// consulted; see FleetOf. Common and profiles without a match section never
// match.
func (s *Set) Match(h HostFacts) (string, bool) {
	for _, byFacts := range []bool{false, true} {
		for _, name := range s.order {
			if name == Common {
				continue
			}
			m := s.resolved[name].Match
			if !byFacts && m.matchesNamed(h) || byFacts && m.Facts.matches(h) {
				return name, true
			}
		}
	}
	return "", false
}

// FleetOf returns the fleet of h: the one its inventory names, else the first
// matching profile. Both failures wrap ErrUnknownFleet.
func (s *Set) FleetOf(h HostFacts) (string, error) {
	if h.Fleet != "" {
		if _, ok := s.resolved[h.Fleet]; !ok {
			return "", fmt.Errorf("host %s: inventory names fleet %q: %w (profiles: %s)",
				h.Name, h.Fleet, ErrUnknownFleet, strings.Join(s.Names(), ", "))
		}
		return h.Fleet, nil
	}
	if name, ok := s.Match(h); ok {
		return name, nil
	}
	return "", fmt.Errorf("host %s: no fleet profile matches it (groups %v, %d labels): %w",
		h.Name, h.Groups, len(h.Labels), ErrUnknownFleet)
}

// matchesNamed reports whether one of the criteria people name hosts by
// (groups, labels, hostnames) selects h.
func (m Match) matchesNamed(h HostFacts) bool {
	for _, g := range m.Groups {
		if slices.Contains(h.Groups, g) {
			return true
		}
	}
	if len(m.Labels) > 0 && m.labelsMatch(h.Labels) {
		return true
	}
	name := strings.ToLower(h.Name)
	for _, glob := range m.Hostnames {
		// Validated at load; a bad pattern cannot reach here.
		if ok, _ := path.Match(strings.ToLower(glob), name); ok {
			return true
		}
	}
	return false
}

// matches is true when f has a condition and h meets every one of them;
// a fact not known about h meets none.
func (f Facts) matches(h HostFacts) bool {
	return !f.IsZero() && f.GPUs.holds(h.GPUs) && f.RDMA.holds(h.RDMA)
}

func (w *Want) holds(got Presence) bool {
	if w == nil {
		return true
	}
	return got != Unknown && bool(*w) == (got == Present)
}

func (m Match) labelsMatch(labels map[string]string) bool {
	for k, want := range m.Labels {
		got, ok := labels[k]
		if !ok || (want != "*" && got != want) {
			return false
		}
	}
	return true
}

// Selects reports whether the (resolved) profile runs a rule. ruleProfiles
// are the fleets the rule declares in its METADATA custom.profiles ("all",
// "gpu-training", ...) and tags any other tags it carries; both are matched
// by "tag:" selectors. A rule is selected when an item of Rules.Include
// matches it and no item of Rules.Exclude does. Items are path.Match globs:
// "nccl-*" or "tag:gpu-*" work.
func (p *Profile) Selects(ruleID string, ruleProfiles, tags []string) bool {
	return anySelects(p.Rules.Include, ruleID, ruleProfiles, tags) &&
		!anySelects(p.Rules.Exclude, ruleID, ruleProfiles, tags)
}

// Excludes reports whether the profile's includes select a rule and its
// excludes then drop it: a rule the fleet switched off on purpose.
func (p *Profile) Excludes(ruleID string, ruleProfiles, tags []string) bool {
	return anySelects(p.Rules.Include, ruleID, ruleProfiles, tags) &&
		anySelects(p.Rules.Exclude, ruleID, ruleProfiles, tags)
}

func anySelects(items []string, ruleID string, ruleProfiles, tags []string) bool {
	for _, item := range items {
		pattern, isTag := strings.CutPrefix(item, TagPrefix)
		if !isTag {
			if ok, _ := path.Match(pattern, ruleID); ok {
				return true
			}
			continue
		}
		for _, t := range slices.Concat(ruleProfiles, tags) {
			if ok, _ := path.Match(pattern, t); ok {
				return true
			}
		}
	}
	return false
}

// Severity returns the profile's severity for a rule: its override if it
// has one, else def (the rule's METADATA severity).
func (p *Profile) Severity(ruleID, def string) string {
	if s, ok := p.Rules.Severity[ruleID]; ok {
		return s
	}
	return def
}
