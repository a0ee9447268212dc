package kube

import (
	"bytes"
	"strings"
)

// Manifests are often kept as templates: Helm charts ({{ .Values.gpus }}),
// envsubst or kustomize inputs ($GPU_PER_NODE). A value a template fills in
// is unknown, not absent: the key stays, with the template text as its
// value, so a rule sees that nvidia.com/gpu is requested even when the
// count is not known. envsubst's $VAR is a YAML string already; Go template
// actions are not YAML, so untemplate makes them YAML before parsing:
//
//   - a line holding only actions ({{- if .Values.rdma }}, {{- end }},
//     {{ include "labels" . | nindent 4 }}) is blanked: what it controls or
//     emits is unknown, and the lines around it are read as written;
//   - a key's value, list item or key that starts with an action is quoted,
//     so nvidia.com/gpu: {{ .Values.gpus }} reads as the string
//     "{{ .Values.gpus }}" rather than a YAML flow mapping.
//
// Lines keep their numbers, so findings still cite the template's lines.

func untemplate(data []byte) []byte {
	if !bytes.Contains(data, []byte("{{")) {
		return data
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	var out bytes.Buffer
	out.Grow(len(data) + len(lines))
	for _, line := range lines {
		body, eol := splitEOL(line)
		if !onlyActions(body) {
			out.Write(quoteActionValue(body))
		}
		out.Write(eol)
	}
	return out.Bytes()
}

func splitEOL(line []byte) (body, eol []byte) {
	n := len(line)
	for n > 0 && (line[n-1] == '\n' || line[n-1] == '\r') {
		n--
	}
	return line[:n], line[n:]
}

// onlyActions reports whether a line holds template actions and blanks only.
func onlyActions(line []byte) bool {
	s := bytes.TrimSpace(line)
	if !bytes.HasPrefix(s, []byte("{{")) {
		return false
	}
	for len(s) > 0 {
		if !bytes.HasPrefix(s, []byte("{{")) {
			return false
		}
		end := bytes.Index(s, []byte("}}"))
		if end < 0 {
			return false
		}
		s = bytes.TrimSpace(s[end+2:])
	}
	return true
}

// quoteActionValue single-quotes the rest of a line from the first place a
// YAML scalar starts with "{{": after "key: ", after "- ", or at the start
// of a key. A comment after the action is kept in the string: the line is
// the template's, and the value is unknown either way.
func quoteActionValue(line []byte) []byte {
	i := 0
	for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
		i++
	}
	for {
		rest := line[i:]
		switch {
		case bytes.HasPrefix(rest, []byte("- ")):
			i += 2
			for i < len(line) && line[i] == ' ' {
				i++
			}
			continue
		case bytes.HasPrefix(rest, []byte("{{")):
			return quoteFrom(line, i)
		}
		break
	}
	// key: {{ ... }}
	if c := bytes.Index(line[i:], []byte(": ")); c >= 0 {
		j := i + c + 2
		for j < len(line) && line[j] == ' ' {
			j++
		}
		if bytes.HasPrefix(line[j:], []byte("{{")) {
			return quoteFrom(line, j)
		}
	}
	return line
}

// quoteFrom quotes line[from:] as a single-quoted YAML scalar, or, when it
// is "{{ ... }}: value" (a templated key), the key alone.
func quoteFrom(line []byte, from int) []byte {
	rest := line[from:]
	if end := bytes.Index(rest, []byte("}}")); end >= 0 {
		after := rest[end+2:]
		if bytes.HasPrefix(after, []byte(": ")) || bytes.Equal(after, []byte(":")) {
			return append(append(append([]byte{}, line[:from]...), singleQuote(rest[:end+2])...), after...)
		}
	}
	return append(append([]byte{}, line[:from]...), singleQuote(bytes.TrimRight(rest, " \t"))...)
}

func singleQuote(s []byte) []byte {
	return []byte("'" + strings.ReplaceAll(string(s), "'", "''") + "'")
}
