// Package factdiff compares two snapshot documents fact by fact, with the
// provenance of each side, for drift between recorded runs. It says only
// what the documents support: a fact one side did not collect is "not
// collected", never "removed".
package factdiff

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

// Kinds of change.
const (
	Changed      = "changed"       // value before → after
	Added        = "added"         // absent before (known absent)
	Removed      = "removed"       // absent after (known absent)
	Moved        = "moved"         // same value, set by another file
	NotCollected = "not-collected" // one side did not collect it
)

// Change is one fact whose value or provenance changed. Before and
// After are nil when absent; the sources say which file set each value.
type Change struct {
	Fact         string `json:"fact"`
	Change       string `json:"change"`
	Before       any    `json:"before"`
	After        any    `json:"after"`
	BeforeSource string `json:"before_source,omitempty"`
	AfterSource  string `json:"after_source,omitempty"`
	// NotCollectedIn names the run ("from" or "to") that did not collect
	// the fact, for NotCollected.
	NotCollectedIn string `json:"not_collected_in,omitempty"`
}

// skipTop are snapshot members that are not facts: provenance is compared
// through the facts, collected_at is not stored in the blob.
var skipTop = map[string]bool{"sources": true, "collected_at": true}

// Coverage is what Diff asks of a document beyond its values; the store
// passes the policy engine's answers (policies.AbsenceKnown, and
// policies.EvidenceOf's source), so drift and findings agree on what was
// collected.
type Coverage struct {
	// AbsenceKnown reports whether a fact doc does not hold is known to
	// be absent (its section collected without error).
	AbsenceKnown func(doc map[string]any, fact string) bool
	// Source is where doc's value of fact was set ("" when unknown).
	Source func(doc map[string]any, fact string) string
}

// Diff compares two snapshot documents fact by fact: values changed,
// facts added or removed where the other side collected them, facts set by
// another file with the same value, and what one side did not collect.
// Sorted by fact path.
func Diff(from, to map[string]any, cov Coverage) []Change {
	fl, tl := map[string]any{}, map[string]any{}
	var changes []Change
	for _, sec := range slices.Sorted(maps.Keys(unionKeys(from, to))) {
		if skipTop[sec] {
			continue
		}
		fv, inF := from[sec]
		tv, inT := to[sec]
		// A whole section one side did not collect is one line, not
		// every fact in it.
		if inF && !inT && !cov.AbsenceKnown(to, sec) {
			changes = append(changes, Change{Fact: segment(sec), Change: NotCollected, Before: summarize(fv), NotCollectedIn: "to"})
			continue
		}
		if inT && !inF && !cov.AbsenceKnown(from, sec) {
			changes = append(changes, Change{Fact: segment(sec), Change: NotCollected, After: summarize(tv), NotCollectedIn: "from"})
			continue
		}
		if inF {
			flatten(segment(sec), fv, fl)
		}
		if inT {
			flatten(segment(sec), tv, tl)
		}
	}
	for _, fact := range slices.Sorted(maps.Keys(unionKeys(fl, tl))) {
		fv, inF := fl[fact]
		tv, inT := tl[fact]
		c := Change{Fact: fact, Before: fv, After: tv}
		switch {
		case inF && inT:
			if equalJSON(fv, tv) {
				continue
			}
			c.Change = Changed
		case inF:
			c.Change = Removed
			if !cov.AbsenceKnown(to, fact) {
				c.Change, c.NotCollectedIn = NotCollected, "to"
			}
		default:
			c.Change = Added
			if !cov.AbsenceKnown(from, fact) {
				c.Change, c.NotCollectedIn = NotCollected, "from"
			}
		}
		if inF {
			c.BeforeSource = cov.Source(from, fact)
		}
		if inT {
			c.AfterSource = cov.Source(to, fact)
		}
		changes = append(changes, c)
	}
	changes = dropEmptyParents(changes)
	// Same value, set by another file: the provenance moved.
	fs, _ := from["sources"].(map[string]any)
	ts, _ := to["sources"].(map[string]any)
	seen := map[string]bool{}
	for _, c := range changes {
		seen[c.Fact] = true
	}
	for _, fact := range slices.Sorted(maps.Keys(unionKeys(fs, ts))) {
		a, b := fmt.Sprint(fs[fact]), fmt.Sprint(ts[fact])
		if a == b || seen[fact] || fs[fact] == nil || ts[fact] == nil {
			continue
		}
		fv, okF := snapshot.Lookup(from, fact)
		tv, okT := snapshot.Lookup(to, fact)
		if !okF || !okT || !equalJSON(fv, tv) {
			continue
		}
		changes = append(changes, Change{Fact: fact, Change: Moved, Before: summarize(fv), After: summarize(tv), BeforeSource: a, AfterSource: b})
	}
	slices.SortStableFunc(changes, func(x, y Change) int { return cmp.Compare(x.Fact, y.Fact) })
	return changes
}

// dropEmptyParents drops an empty object or list added or removed where
// the other side has members below it: errors [] → errors.0.* is one change,
// its entry, not two.
func dropEmptyParents(changes []Change) []Change {
	below := map[string]bool{}
	for _, c := range changes {
		for p := c.Fact; ; {
			i := strings.LastIndexByte(p, '.')
			if i < 0 {
				break
			}
			p = p[:i]
			below[p] = true
		}
	}
	return slices.DeleteFunc(changes, func(c Change) bool {
		v := c.Before
		if c.Change == Added {
			v = c.After
		}
		return (c.Change == Added || c.Change == Removed) && isEmptyContainer(v) && below[c.Fact]
	})
}

func isEmptyContainer(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return false
}

// flatten adds the leaves of v under prefix: objects by key, lists by
// index; an empty object or list is a leaf.
func flatten(prefix string, v any, out map[string]any) {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			out[prefix] = x
			return
		}
		for k, c := range x {
			flatten(prefix+"."+segment(k), c, out)
		}
	case []any:
		if len(x) == 0 {
			out[prefix] = x
			return
		}
		for i, c := range x {
			flatten(prefix+"."+strconv.Itoa(i), c, out)
		}
	default:
		out[prefix] = v
	}
}

// segment is a key as a fact path element: an empty key (a malformed
// document's) is shown as "" rather than vanish from the path.
func segment(k string) string {
	if k == "" {
		return `""`
	}
	return k
}

// summarize stands for a whole section in a change: its size.
func summarize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return fmt.Sprintf("{%d keys}", len(x))
	case []any:
		return fmt.Sprintf("[%d items]", len(x))
	}
	return v
}

func equalJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

func unionKeys[V any](a, b map[string]V) map[string]bool {
	out := make(map[string]bool, len(a)+len(b))
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}
