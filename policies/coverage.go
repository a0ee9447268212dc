package policies

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

// No finding without data. A rule declares the fact paths it reads
// (custom.facts); the first element of each is the snapshot section it
// reads. Per host the engine decides which sections were collected:
//
//   - A host whose errors include a snapshot.CollectorSource error was not
//     read at all: none of its sections were collected, labels included. Only
//     rules that read nothing but the auditor's own keys (metaSections: the
//     errors, host name, source) run, which is collection-error.
//   - Otherwise a section is collected when the document has it, or when the
//     writer leaves it out when empty (labels, pods: absent means none).
//   - A member of the wrong type, removed on decode (a "snapshot" error naming
//     its fact path), was not collected either: a rule whose facts lie on,
//     above or below it does not run.
//
// A rule any of whose sections was not collected does not fire on the host:
// its findings are dropped and the rule is listed in HostRun.Skipped. The
// facts a collector family writes (snapshot.FamilyWrites of errors[].collector,
// which need not be a section's name: processes writes
// nvidia.persistenced) are partly unread when it recorded an error: a
// finding citing one of them whose value is absent (or a zero value, false,
// 0, "", an empty list or object, that no source backs) is withheld, since
// the absence may be what could not be read; the collection-error finding
// already reports the blind spot. An error marked
// skipped (a bad line the file's reader skips too) leaves the section
// complete: its facts are what the reader computes. A
// fact that was collected and is absent (a limits section with no memlock
// line) still fires.
//
// An offline image (source.image: nothing was mounted on /proc) has no
// running state: the facts of snapshot.RunningState were not collected. A
// rule reading any of them does not run there (listed in HostRun.Skipped,
// so reports show it as not evaluated rather than passed), unless its
// METADATA says custom.image: true, i.e. it judges configuration alone
// (hugetlb_cma in the GRUB defaults); then a finding of it citing nothing
// but running facts is withheld.

// metaSections are written by the auditor, not read from the host, so they
// are known even for a host that could not be read.
var metaSections = map[string]bool{
	"schema": true, "host": true, "collected_at": true, "source": true, "sources": true, "errors": true,
}

// setFacts splits the rule's fact paths and lists the sections they read.
func (r *Rule) setFacts() {
	r.facts, r.sections, r.readsRunning = nil, nil, false
	for _, f := range r.Facts {
		parts := splitPath(f)
		r.facts = append(r.facts, parts)
		if s := parts[0]; s != "*" && !metaSections[s] && !slices.Contains(r.sections, s) {
			r.sections = append(r.sections, s)
		}
		if snapshot.IsRunningState(f) {
			r.readsRunning = true
		}
	}
}

// ReadsRunningState reports whether some fact of the rule lies on or below
// snapshot.RunningState, which an offline image does not have.
func (r *Rule) ReadsRunningState() bool { return r.readsRunning }

// coverage is what was collected of one host: a snapshot document or its
// fleet projection (which keeps the errors and the sections fleet rules
// read, so the answer is the same).
type coverage struct {
	doc map[string]any
	// unread says why nothing was read; "" when the host was read.
	unread string
	// partial are fact paths written by a family that recorded an error.
	partial [][]string
	// removed are fact paths of members removed on decode.
	removed [][]string
	// image: an offline image, whose running state was not collected.
	image bool
}

// offlineImage reports whether doc is of an offline image (source.image).
func offlineImage(doc map[string]any) bool {
	src, _ := doc["source"].(map[string]any)
	return src["image"] == true
}

func coverageOf(doc map[string]any) *coverage {
	c := &coverage{doc: doc, image: offlineImage(doc)}
	errs, _ := doc["errors"].([]any)
	for _, x := range errs {
		e, _ := x.(map[string]any)
		collector, _ := e["collector"].(string)
		path, _ := e["path"].(string)
		switch {
		case collector == snapshot.CollectorSource:
			if c.unread == "" {
				reason, _ := e["reason"].(string)
				c.unread = strings.TrimPrefix(path+": "+reason, ": ")
			}
		case collector == snapshot.CollectorSnapshot:
			if p := splitPath(path); snapshot.IsSection(p[0]) {
				c.removed = append(c.removed, p)
				c.partly(p[:1])
			}
		case e["skipped"] == true:
			// A line its reader skips: the facts are complete without it.
		default:
			writes := snapshot.FamilyWrites(collector)
			if writes == nil && snapshot.IsSection(collector) {
				writes = []string{collector} // a family this build does not know
			}
			for _, w := range writes {
				c.partly(splitPath(w))
			}
		}
	}
	return c
}

func (c *coverage) partly(fact []string) {
	if !slices.ContainsFunc(c.partial, func(p []string) bool { return slices.Equal(p, fact) }) {
		c.partial = append(c.partial, fact)
	}
}

// partlyUnread reports whether fact lies on, above or below a fact whose
// family recorded an error.
func (c *coverage) partlyUnread(fact []string) bool {
	for _, p := range c.partial {
		if related(fact, p) {
			return true
		}
	}
	return false
}

// podsUnread reports whether the host's pods were not read: a read host
// with neither pods nor a Kubernetes node (whose pods the cluster lists,
// none included).
func (c *coverage) podsUnread() bool {
	if c.unread != "" {
		return false
	}
	_, pods := c.doc["pods"]
	_, node := c.doc["node"]
	return !pods && !node
}

// runs reports whether every section r reads was collected.
func (c *coverage) runs(r *Rule) bool {
	for _, s := range r.sections {
		if c.unread != "" {
			return false
		}
		if _, ok := c.doc[s]; !ok && !snapshot.SectionOmitted(s) && !(c.image && snapshot.ImageMayLack(s)) {
			return false
		}
	}
	for _, p := range c.removed {
		for _, f := range r.facts {
			if related(f, p) {
				return false
			}
		}
	}
	return !c.image || r.Image || !r.readsRunning
}

// admits reports whether finding f of rule r rests on collected data.
func (c *coverage) admits(r *Rule, f *Finding) bool {
	if !c.runs(r) {
		return false
	}
	if c.image && onlyRunning(f.Evidence) {
		return false
	}
	if c.partial == nil {
		return true
	}
	for _, ev := range f.Evidence {
		if (ev.Value == nil || ev.Source == "" && isZero(ev.Value)) && c.partlyUnread(splitPath(ev.Fact)) {
			return false
		}
	}
	return true
}

// isZero: false, 0, "", an empty list or object, which a collector writes
// for what it found none of, and also for what it could not read; a source
// tells the two apart.
func isZero(v any) bool {
	switch v := v.(type) {
	case []any:
		return len(v) == 0
	case map[string]any:
		return len(v) == 0
	case bool:
		return !v
	case string:
		return v == ""
	case float64:
		return v == 0
	case json.Number:
		f, err := v.Float64()
		return err == nil && f == 0
	}
	return false
}

// skipped lists the ids of rules that do not run on the host.
func (c *coverage) skipped(rules []*Rule) []string {
	var out []string
	for _, r := range rules {
		if !c.runs(r) {
			out = append(out, r.ID)
		}
	}
	return out
}

// onlyRunning: every fact cited is running state (none at all is not).
func onlyRunning(evidence []Evidence) bool {
	for _, ev := range evidence {
		if !snapshot.IsRunningState(ev.Fact) {
			return false
		}
	}
	return len(evidence) > 0
}
