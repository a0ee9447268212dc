// Package kube turns Kubernetes manifests into pod-shaped objects: Pods as
// they are, and the pod templates of workloads (Deployments, Jobs, Kubeflow
// training jobs, ...) as the pods their controllers would create, so the pod
// rules can judge a workload before it runs.
package kube

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

// Limits that keep a hostile or runaway file from exhausting memory.
const (
	maxDocuments = 10000
	maxObjects   = 10000
	// maxListDepth bounds Lists of Lists.
	maxListDepth = 4
)

// Object is one pod, or the pod a workload's template describes, and where it
// came from.
type Object struct {
	// Pod is Kubernetes JSON (numbers as json.Number) with apiVersion, kind,
	// metadata (name, namespace, labels) and spec.
	Pod map[string]any
	// File and Line locate the Pod object, or the template (its key line).
	File string
	Line int
	// Kind and Name are the object the pod came from: "Pod" for a pod, else
	// the workload ("PyTorchJob", "train-llama").
	Kind string
	Name string
	// Role is the replica or template role ("Worker", "leader"), "" when the
	// workload has a single template.
	Role string
}

// ManifestError is a manifest file, or a document in it, that could not be
// read or is not a valid Kubernetes object.
type ManifestError struct {
	File string
	// Line is 0 when the error concerns the whole file.
	Line int
	Err  error
}

func (e *ManifestError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.File, e.Err)
}

func (e *ManifestError) Unwrap() error { return e.Err }

// ParseManifests reads multi-document YAML or JSON (such as the List that
// kubectl get -o json prints) and returns every pod and pod template in it,
// in file order. Objects that hold no pod (ConfigMap, Service, ...) are
// skipped. The error joins one *ManifestError per document that is not a
// valid object; a YAML syntax error ends the file, and the objects before it
// are still returned. Values left to a template (Helm's {{ }}, envsubst's
// $VAR) are read as their template text: see untemplate.
func ParseManifests(data []byte, file string) ([]Object, error) {
	data = untemplate(data)
	objs, errs := parse(data, file)
	if len(errs) > 0 && syntaxError(errs[len(errs)-1]) && looksJSON(data) && bytes.Contains(data, []byte(`\/`)) {
		// JSON may escape "/" but YAML may not; the rewrite keeps lines.
		objs, errs = parse(unescapeSlashes(data), file)
	}
	return objs, errors.Join(errs...)
}

// syntaxErr marks an error from the YAML parser (as opposed to an object
// that parsed but is invalid).
type syntaxErr struct{ error }

func (e syntaxErr) Unwrap() error { return e.error }

func syntaxError(err error) bool {
	var s syntaxErr
	return errors.As(err, &s)
}

func parse(data []byte, file string) ([]Object, []error) {
	p := &parser{file: file}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for docs := 0; ; docs++ {
		if docs == maxDocuments {
			p.errs = append(p.errs, &ManifestError{File: file, Err: fmt.Errorf("more than %d documents", maxDocuments)})
			break
		}
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			p.errs = append(p.errs, yamlError(file, err))
			break
		}
		if !p.document(&doc) {
			break
		}
	}
	return p.objs, p.errs
}

// yamlError moves the line yaml.v3 writes into its message ("yaml: line 3:
// ...", a plain string) into the error.
func yamlError(file string, err error) error {
	rest, ok := strings.CutPrefix(err.Error(), "yaml: line ")
	num, msg, found := strings.Cut(rest, ": ")
	if line, convErr := strconv.Atoi(num); ok && found && convErr == nil {
		return &ManifestError{File: file, Line: line, Err: syntaxErr{errors.New(msg)}}
	}
	return &ManifestError{File: file, Err: syntaxErr{err}}
}

type parser struct {
	file string
	// root is the current document's top node, for line lookups.
	root *yaml.Node
	objs []Object
	errs []error
}

// document flattens one YAML document; false stops the file.
func (p *parser) document(doc *yaml.Node) bool {
	p.root = doc
	if len(doc.Content) > 0 {
		p.root = doc.Content[0]
	}
	var raw any
	if err := doc.Decode(&raw); err != nil {
		p.errs = append(p.errs, &ManifestError{File: p.file, Line: p.root.Line, Err: err})
		return true
	}
	if raw == nil {
		return true // an empty document, e.g. between two "---"
	}
	v, err := normalize(raw)
	if err != nil {
		p.errs = append(p.errs, &ManifestError{File: p.file, Line: p.root.Line, Err: err})
		return true
	}
	obj, ok := v.(map[string]any)
	if !ok {
		p.errs = append(p.errs, &ManifestError{File: p.file, Line: p.root.Line, Err: fmt.Errorf("not a Kubernetes object: the document is a %s", typeName(v))})
		return true
	}
	return p.object(obj, nil, "", "", 0)
}

// normalize gives a decoded YAML value the shape a snapshot document has
// (string keys, numbers as json.Number: snapshot.DecodeJSON), so a pod's
// resources read the same from a manifest as from a snapshot file.
func normalize(v any) (any, error) {
	v, err := stringKeys(v)
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	if err := snapshot.DecodeJSON(data, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// stringKeys converts maps with non-string scalar keys (yaml.v3 decodes
// {1: a} as map[any]any) the way kubectl does: the key's text.
func stringKeys(v any) (any, error) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			e, err := stringKeys(e)
			if err != nil {
				return nil, err
			}
			v[k] = e
		}
		return v, nil
	case map[any]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			var key string
			switch k := k.(type) {
			case string:
				key = k
			case bool:
				key = strconv.FormatBool(k)
			case int:
				key = strconv.Itoa(k)
			case int64:
				key = strconv.FormatInt(k, 10)
			case uint64:
				key = strconv.FormatUint(k, 10)
			case float64:
				key = strconv.FormatFloat(k, 'g', -1, 64)
			default:
				return nil, fmt.Errorf("a %s is not a valid key", typeName(k))
			}
			e, err := stringKeys(e)
			if err != nil {
				return nil, err
			}
			out[key] = e
		}
		return out, nil
	case []any:
		for i, e := range v {
			e, err := stringKeys(e)
			if err != nil {
				return nil, err
			}
			v[i] = e
		}
		return v, nil
	}
	return v, nil
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any, map[any]any:
		return "mapping"
	case []any:
		return "list"
	case string:
		return "string"
	case bool:
		return "boolean"
	case float64, int, int64, uint64, json.Number:
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

func looksJSON(data []byte) bool {
	data = bytes.TrimLeft(data, " \t\r\n")
	return len(data) > 0 && (data[0] == '{' || data[0] == '[')
}

// unescapeSlashes rewrites the JSON escape \/ to / inside strings.
func unescapeSlashes(data []byte) []byte {
	out := make([]byte, 0, len(data))
	inString := false
	for i := 0; i < len(data); i++ {
		b := data[i]
		if inString && b == '\\' && i+1 < len(data) {
			if data[i+1] != '/' {
				out = append(out, b)
			}
			out = append(out, data[i+1])
			i++
			continue
		}
		if b == '"' {
			inString = !inString
		}
		out = append(out, b)
	}
	return out
}
