package policies

import (
	"strconv"
	"strings"
)

func splitPath(p string) []string { return strings.Split(p, ".") }

// covers reports whether pattern covers path: pattern matches a prefix of
// path, "*" matching any one element.
func covers(pattern, path []string) bool {
	if len(pattern) > len(path) {
		return false
	}
	for i, s := range pattern {
		if s != "*" && s != path[i] {
			return false
		}
	}
	return true
}

// related reports whether fact path p lies on, above or below pattern.
func related(pattern, p []string) bool {
	n := min(len(pattern), len(p))
	return covers(pattern[:n], p[:n])
}

// Project keeps what fleet-wide rules need from a host snapshot: host,
// labels, errors, the facts their METADATA declares, and the sources of those facts.
// Fleet rules see a list of these, so the full snapshots need not stay in
// memory for the fleet pass. The projection shares values with doc.
func (e *Engine) Project(doc map[string]any) map[string]any {
	out := map[string]any{"host": doc["host"]}
	if l, ok := doc["labels"]; ok {
		out["labels"] = l
	}
	if errs, ok := doc["errors"].([]any); ok && len(errs) > 0 {
		// What could not be collected decides which findings stand.
		out["errors"] = errs
	}
	if offlineImage(doc) {
		// So does an image's running state, never collected.
		out["source"] = map[string]any{"image": true}
	}
	for _, f := range e.facts {
		project(doc, f, out)
	}
	if sources, ok := doc["sources"].(map[string]any); ok {
		kept := map[string]any{}
		for k, v := range sources {
			if e.relatedFact(k) {
				kept[k] = v
			}
		}
		out["sources"] = kept
	}
	return copyValue(out).(map[string]any)
}

// relatedFact reports whether fact path k lies on, above or below a fact
// some fleet rule reads. Most patterns have no "*": prefix tests then avoid
// splitting each of a snapshot's hundreds of source keys.
func (e *Engine) relatedFact(k string) bool {
	var p []string
	for i, f := range e.facts {
		if joined := e.factPaths[i]; joined != "" {
			if k == joined || pathPrefix(joined, k) || pathPrefix(k, joined) {
				return true
			}
			continue
		}
		if p == nil {
			p = splitPath(k)
		}
		if related(f, p) {
			return true
		}
	}
	return false
}

// pathPrefix reports whether fact path p lies strictly above q.
func pathPrefix(p, q string) bool {
	return len(q) > len(p) && q[len(p)] == '.' && strings.HasPrefix(q, p)
}

// copyValue deep-copies a JSON value's objects and lists; strings are
// shared (the decoder already shares repeated ones).
func copyValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[k] = copyValue(x)
		}
		return m
	case []any:
		l := make([]any, len(v))
		for i, x := range v {
			l[i] = copyValue(x)
		}
		return l
	}
	return v
}

// project copies the values at path from src into dst, creating the
// objects and lists between. Keys may contain dots, so (as in
// snapshot.Lookup) every way of joining path elements into a key is tried.
func project(src map[string]any, path []string, dst map[string]any) {
	if path[0] == "*" {
		for k, v := range src {
			projectValue(k, v, path[1:], dst)
		}
		return
	}
	for n := len(path); n >= 1; n-- {
		key := strings.Join(path[:n], ".")
		if v, ok := src[key]; ok {
			projectValue(key, v, path[n:], dst)
		}
	}
}

func projectValue(key string, v any, rest []string, dst map[string]any) {
	if len(rest) == 0 {
		dst[key] = v
		return
	}
	switch x := v.(type) {
	case map[string]any:
		sub, _ := dst[key].(map[string]any)
		if sub == nil {
			sub = map[string]any{}
			dst[key] = sub
		}
		project(x, rest, sub)
	case []any:
		// A list keeps its length, so indexes in evidence paths stay valid.
		sub, _ := dst[key].([]any)
		if sub == nil {
			sub = make([]any, len(x))
			dst[key] = sub
		}
		for i, el := range x {
			if rest[0] != "*" && rest[0] != strconv.Itoa(i) {
				continue
			}
			if len(rest) == 1 {
				sub[i] = el
				continue
			}
			if m, ok := el.(map[string]any); ok {
				sm, _ := sub[i].(map[string]any)
				if sm == nil {
					sm = map[string]any{}
					sub[i] = sm
				}
				project(m, rest[1:], sm)
			}
		}
	}
}
