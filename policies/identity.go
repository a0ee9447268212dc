package policies

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

// What a finding is across two evaluations (the gate's base and head, two
// recorded audit runs), and what a fact's value and provenance are outside
// an evaluation: one definition for the gate and the history store.

// FindingKey identifies a finding across evaluations of the same host or
// fleet: its rule and the facts it cites. The message text and the file
// that set a value may change while the finding stays the same. Pods are
// cited by index; pods (PodIDs of the finding's snapshot) names them by
// kind, namespace and name, so a reordered pod list is no change. Equal
// keys match one to one.
func FindingKey(f Finding, pods map[string]string) string {
	facts := make([]string, 0, len(f.Evidence))
	for _, e := range f.Evidence {
		fact := e.Fact
		if rest, ok := strings.CutPrefix(fact, "pods."); ok {
			i, tail, _ := strings.Cut(rest, ".")
			if id, ok := pods["pods."+i]; ok {
				fact = "pods[" + id + "]"
				if tail != "" {
					fact += "." + tail
				}
			}
		}
		facts = append(facts, fact)
	}
	slices.Sort(facts)
	var b bytes.Buffer
	b.WriteString(f.Rule)
	for _, fact := range facts {
		b.WriteByte('\x00')
		b.WriteString(fact)
	}
	return b.String()
}

// PodIDs names the pods of a snapshot document by kind, namespace and name,
// keyed by their fact path ("pods.0").
func PodIDs(doc map[string]any) map[string]string {
	pods, _ := doc["pods"].([]any)
	out := make(map[string]string, len(pods))
	for i, p := range pods {
		m, _ := p.(map[string]any)
		meta, _ := m["metadata"].(map[string]any)
		out[fmt.Sprintf("pods.%d", i)] = fmt.Sprintf("%v/%v/%v", m["kind"], meta["namespace"], meta["name"])
	}
	return out
}

// EvidenceOf resolves a fact path in a snapshot document as a finding's
// evidence would: its value, and where it was set (the fact's source, else
// its nearest ancestor's, else the sources of the facts below it).
func EvidenceOf(doc map[string]any, fact string) Evidence { return evidence(doc, fact) }

// AbsenceKnown reports whether a fact that doc does not hold is known to be
// absent: the host was read, the fact's section was collected, no member on
// its path was removed on decode, and the family that writes it recorded no
// error (which may be what kept the fact out). Otherwise the fact was not
// collected and nothing can be said about it.
func AbsenceKnown(doc map[string]any, fact string) bool {
	c := coverageOf(doc)
	if c.unread != "" {
		return false
	}
	p := splitPath(fact)
	if metaSections[p[0]] {
		return true
	}
	if _, ok := doc[p[0]]; !ok && !snapshot.SectionOmitted(p[0]) {
		return false
	}
	for _, r := range c.removed {
		if related(r, p) {
			return false
		}
	}
	if c.image && snapshot.IsRunningState(fact) {
		return false
	}
	return !c.partlyUnread(p)
}

// Unread says why nothing of a snapshot document's host was read; "" when
// it was read.
func Unread(doc map[string]any) string { return coverageOf(doc).unread }

// FleetRules lists the ids of the rules a fleet runs (host and fleet-wide),
// sorted; nil for a fleet the engine does not know.
func (e *Engine) FleetRules(fleet string) []string {
	fq, ok := e.fleets[fleet]
	if !ok {
		return nil
	}
	var ids []string
	for _, ps := range []*preparedScope{fq.host, fq.fleet} {
		if ps == nil {
			continue
		}
		for _, r := range ps.rules {
			ids = append(ids, r.ID)
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// LabelsOf returns a snapshot document's labels (string values only).
func LabelsOf(doc map[string]any) map[string]string {
	m, _ := doc["labels"].(map[string]any)
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}
