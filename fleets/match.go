package fleets

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/fleetaudit/fleetaudit/inventory"
	"github.com/fleetaudit/fleetaudit/policies"
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

// MatchSections are the members of a snapshot document FactsOf reads:
// hosts whose snapshots agree on them and on the name match alike.
func MatchSections() []string { return []string{"labels", "nvidia", "rdma"} }

// FactsOf is what matching knows of the host name: its inventory entry (nil
// when there is none) gives its fleet, groups and labels; its snapshot
// document in generic JSON form (nil when it was not read) gives its labels
// (Kubernetes node labels, which the inventory's override) and whether it
// has GPUs and RDMA devices.
func FactsOf(name string, h *inventory.Host, doc map[string]any) HostFacts {
	facts := HostFacts{Name: name, Labels: policies.LabelsOf(doc), GPUs: gpusOf(doc), RDMA: rdmaOf(doc)}
	if facts.Labels == nil {
		facts.Labels = map[string]string{}
	}
	if h != nil {
		facts.Fleet, facts.Groups = h.Fleet, h.Groups
		maps.Copy(facts.Labels, h.Labels)
	}
	return facts
}

// gpusOf reads whether a snapshot shows NVIDIA GPUs: the driver present or
// GPUs listed. Unknown without an nvidia section (nil doc: not read).
func gpusOf(doc map[string]any) Presence {
	nv, ok := doc["nvidia"].(map[string]any)
	if !ok {
		return advertisedGPUs(doc)
	}
	gpus, _ := nv["gpus"].([]any)
	return PresenceOf(nv["present"] == true || len(gpus) > 0)
}

// advertisedGPUs reads a host without host facts (a node only the
// Kubernetes API describes): Present when its node's allocatable holds
// NVIDIA GPUs, else Unknown (no GPU advertised is not no GPU).
func advertisedGPUs(doc map[string]any) Presence {
	node, _ := doc["node"].(map[string]any)
	alloc, _ := node["allocatable"].(map[string]any)
	if q, _ := alloc["nvidia.com/gpu"].(string); q != "" && q != "0" && strings.Trim(q, "0123456789") == "" {
		return Present
	}
	return Unknown
}

// rdmaOf reads whether a snapshot shows RDMA devices. Unknown without an
// rdma section.
func rdmaOf(doc map[string]any) Presence {
	rdma, ok := doc["rdma"].(map[string]any)
	if !ok {
		return Unknown
	}
	devices, _ := rdma["devices"].(map[string]any)
	return PresenceOf(len(devices) > 0)
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
// matching profile. Both failures wrap policies.ErrUnknownFleet.
func (s *Set) FleetOf(h HostFacts) (string, error) {
	if h.Fleet != "" {
		if _, ok := s.resolved[h.Fleet]; !ok {
			return "", fmt.Errorf("host %s: inventory names fleet %q: %w (profiles: %s)",
				h.Name, h.Fleet, policies.ErrUnknownFleet, strings.Join(s.Names(), ", "))
		}
		return h.Fleet, nil
	}
	if name, ok := s.Match(h); ok {
		return name, nil
	}
	return "", fmt.Errorf("host %s: no fleet profile matches it (groups %v, %d labels): %w",
		h.Name, h.Groups, len(h.Labels), policies.ErrUnknownFleet)
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

// Selects reports whether the (resolved) profile runs rule r: an item of
// Rules.Include matches it and no item of Rules.Exclude does. Items are
// path.Match globs over the rule id ("nccl-*"), or, after "tag:", over the
// fleets the rule declares in its METADATA custom.profiles ("tag:all",
// "tag:gpu-*"). It is the engine's selection (policies.FleetConfig.Select).
func (p *Profile) Selects(r policies.Rule) bool {
	if r.ID == policies.CollectionErrorRule {
		return true // the engine runs it in every fleet, whatever is selected
	}
	return anySelects(p.Rules.Include, r) && !anySelects(p.Rules.Exclude, r)
}

// Excludes reports whether the profile's includes select a rule and its
// excludes then drop it: a rule the fleet switched off on purpose.
func (p *Profile) Excludes(r policies.Rule) bool {
	return anySelects(p.Rules.Include, r) && anySelects(p.Rules.Exclude, r)
}

func anySelects(items []string, r policies.Rule) bool {
	for _, item := range items {
		pattern, isTag := strings.CutPrefix(item, TagPrefix)
		if !isTag {
			if ok, _ := path.Match(pattern, r.ID); ok {
				return true
			}
			continue
		}
		for _, t := range r.Profiles {
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
