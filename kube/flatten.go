package kube

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Labels the controllers put on the pods they create, which job rules group
// pods by.
const (
	labelJobName         = "batch.kubernetes.io/job-name"
	labelLegacyJobName   = "job-name"
	labelKubeflowJob     = "training.kubeflow.org/job-name"
	labelKubeflowReplica = "training.kubeflow.org/replica-type"
	labelKubeflowRole    = "training.kubeflow.org/job-role"
	labelLWSName         = "leaderworkerset.sigs.k8s.io/name"
)

// template is one pod template in a workload.
type template struct {
	// role is the replica type ("Worker"), "" for a workload's only template.
	role string
	// path leads from the workload to the template mapping.
	path []any
	// controller are the labels the workload's controller adds to its pods.
	controller map[string]any
	line       int
}

// fieldError is an object that is not what its kind requires, at path.
type fieldError struct {
	path []any
	msg  string
}

func (e *fieldError) Error() string { return e.msg }

// object flattens one Kubernetes object found at path in the document; false
// stops the file.
func (p *parser) object(obj map[string]any, path []any, itemKind, itemAPI string, depth int) bool {
	kind, _ := obj["kind"].(string)
	if kind == "" && itemKind != "" {
		// Items of a typed list (PodList from the API) carry no kind.
		kind = itemKind
		obj["kind"] = kind
		if _, ok := obj["apiVersion"]; !ok && itemAPI != "" {
			obj["apiVersion"] = itemAPI
		}
	}
	if items, ok := obj["items"]; ok && strings.HasSuffix(kind, "List") {
		return p.list(obj, items, path, kind, depth)
	}
	if kind == "" {
		return true // not a Kubernetes object: a values file, a kustomization
	}
	meta, err := mapping(obj, "metadata")
	if err != nil {
		return p.reject(path, &fieldError{path: []any{"metadata"}, msg: err.Error()})
	}
	if meta == nil {
		meta = map[string]any{}
	}
	name := objectName(meta)
	if kind == "Pod" {
		if _, ok := meta["namespace"].(string); !ok {
			meta["namespace"] = "default"
		}
		obj["metadata"] = meta
		return p.add(Object{Pod: obj, File: p.file, Line: p.line(path), Kind: kind, Name: name})
	}
	tmpls, err := templates(kind, obj, name)
	if err != nil {
		return p.reject(path, err)
	}
	for i := range tmpls {
		tmpls[i].line = p.line(slices.Concat(path, tmpls[i].path))
	}
	slices.SortStableFunc(tmpls, func(a, b template) int {
		return cmp.Or(cmp.Compare(a.line, b.line), strings.Compare(a.role, b.role))
	})
	for _, t := range tmpls {
		pod, err := templatePod(obj, meta, kind, name, t)
		if err != nil {
			return p.reject(path, err)
		}
		if !p.add(Object{Pod: pod, File: p.file, Line: t.line, Kind: kind, Name: name, Role: t.role}) {
			return false
		}
	}
	return true
}

func (p *parser) list(obj map[string]any, items any, path []any, kind string, depth int) bool {
	list, ok := items.([]any)
	if !ok {
		return p.reject(path, &fieldError{path: []any{"items"}, msg: "items is not a list"})
	}
	if depth >= maxListDepth {
		return p.reject(path, fmt.Errorf("lists nested deeper than %d", maxListDepth))
	}
	itemKind := strings.TrimSuffix(kind, "List")
	api, _ := obj["apiVersion"].(string)
	for i, item := range list {
		itemPath := slices.Concat(path, []any{"items", i})
		m, ok := item.(map[string]any)
		if !ok {
			if !p.reject(itemPath, fmt.Errorf("list item is a %s, not an object", typeName(item))) {
				return false
			}
			continue
		}
		if !p.object(m, itemPath, itemKind, api, depth+1) {
			return false
		}
	}
	return true
}

func (p *parser) add(o Object) bool {
	if len(p.objs) >= maxObjects {
		p.errs = append(p.errs, &ManifestError{File: p.file, Line: o.Line, Err: fmt.Errorf("more than %d pods and pod templates", maxObjects)})
		return false
	}
	RedactPod(o.Pod)
	p.objs = append(p.objs, o)
	return true
}

// reject records an object error at the line of its path (or of the field
// the error names); the file goes on.
func (p *parser) reject(path []any, err error) bool {
	if e, ok := err.(*fieldError); ok {
		path = slices.Concat(path, e.path)
	}
	p.errs = append(p.errs, &ManifestError{File: p.file, Line: p.line(path), Err: err})
	return true
}

// templates finds the pod templates of a workload. A kind it does not know
// counts only when spec.template looks like a pod template.
func templates(kind string, obj map[string]any, name string) ([]template, error) {
	spec, err := mapping(obj, "spec")
	if err != nil {
		return nil, &fieldError{path: []any{"spec"}, msg: err.Error()}
	}
	switch kind {
	case "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "ReplicationController":
		return single(spec, []any{"spec", "template"}, nil)
	case "Job":
		var labels map[string]any
		if name != "" {
			labels = map[string]any{labelJobName: name, labelLegacyJobName: name}
		}
		return single(spec, []any{"spec", "template"}, labels)
	case "PodTemplate":
		return single(obj, []any{"template"}, nil)
	case "CronJob":
		jobTmpl, err := mapping(spec, "jobTemplate")
		if err != nil {
			return nil, &fieldError{path: []any{"spec", "jobTemplate"}, msg: err.Error()}
		}
		jobSpec, err := mapping(jobTmpl, "spec")
		if err != nil {
			return nil, &fieldError{path: []any{"spec", "jobTemplate", "spec"}, msg: err.Error()}
		}
		// Jobs a CronJob starts are named at run time: no job-name label.
		return single(jobSpec, []any{"spec", "jobTemplate", "spec", "template"}, nil)
	case "LeaderWorkerSet":
		return leaderWorker(spec, name)
	}
	ts, err := replicaSpecs(spec, name)
	if err != nil || len(ts) > 0 {
		return ts, err
	}
	if t, ok := spec["template"].(map[string]any); ok && looksLikePod(t) {
		return []template{{path: []any{"spec", "template"}}}, nil
	}
	return nil, nil
}

// single returns the template at the end of path (parent holds its last key).
func single(parent map[string]any, path []any, controller map[string]any) ([]template, error) {
	key := path[len(path)-1].(string)
	t, err := mapping(parent, key)
	if err != nil {
		return nil, &fieldError{path: path, msg: err.Error()}
	}
	if t == nil {
		return nil, nil
	}
	return []template{{path: path, controller: controller}}, nil
}

// replicaSpecs finds Kubeflow training jobs' templates:
// spec.pytorchReplicaSpecs.Master.template, spec.mpiReplicaSpecs.Launcher...
func replicaSpecs(spec map[string]any, name string) ([]template, error) {
	var ts []template
	for _, key := range slices.Sorted(maps.Keys(spec)) {
		if !strings.HasSuffix(key, "ReplicaSpecs") {
			continue
		}
		replicas, err := mapping(spec, key)
		if err != nil {
			return nil, &fieldError{path: []any{"spec", key}, msg: err.Error()}
		}
		for _, role := range slices.Sorted(maps.Keys(replicas)) {
			rs, err := mapping(replicas, role)
			if err != nil {
				return nil, &fieldError{path: []any{"spec", key, role}, msg: err.Error()}
			}
			labels := map[string]any{labelKubeflowReplica: strings.ToLower(role)}
			if name != "" {
				labels[labelKubeflowJob] = name
			}
			switch strings.ToLower(role) {
			case "launcher":
				labels[labelKubeflowRole] = "launcher"
			case "master", "chief":
				labels[labelKubeflowRole] = "master"
			}
			t, err := single(rs, []any{"spec", key, role, "template"}, labels)
			if err != nil {
				return nil, err
			}
			for i := range t {
				t[i].role = role
			}
			ts = append(ts, t...)
		}
	}
	return ts, nil
}

// leaderWorker finds a LeaderWorkerSet's leader and worker templates.
func leaderWorker(spec map[string]any, name string) ([]template, error) {
	lwt, err := mapping(spec, "leaderWorkerTemplate")
	if err != nil {
		return nil, &fieldError{path: []any{"spec", "leaderWorkerTemplate"}, msg: err.Error()}
	}
	var labels map[string]any
	if name != "" {
		labels = map[string]any{labelLWSName: name}
	}
	var ts []template
	for _, role := range []string{"leader", "worker"} {
		t, err := single(lwt, []any{"spec", "leaderWorkerTemplate", role + "Template"}, labels)
		if err != nil {
			return nil, err
		}
		for i := range t {
			t[i].role = role
		}
		ts = append(ts, t...)
	}
	return ts, nil
}

func looksLikePod(t map[string]any) bool {
	spec, ok := t["spec"].(map[string]any)
	if !ok {
		return false
	}
	_, ok = spec["containers"].([]any)
	return ok
}

// templatePod is the pod a template describes: the workload's name (with the
// role) and namespace, the template's labels and annotations and its spec.
func templatePod(obj, meta map[string]any, kind, name string, t template) (map[string]any, error) {
	tmpl := lookupPath(obj, t.path)
	tmeta, err := mapping(tmpl, "metadata")
	if err != nil {
		return nil, &fieldError{path: slices.Concat(t.path, []any{"metadata"}), msg: err.Error()}
	}
	spec, err := mapping(tmpl, "spec")
	if err != nil {
		return nil, &fieldError{path: slices.Concat(t.path, []any{"spec"}), msg: err.Error()}
	}
	if spec == nil {
		spec = map[string]any{}
	}
	// A controller's pods carry the template's labels and the ones the
	// controller adds, never the workload's own (as the API server shows).
	labels := map[string]any{}
	if l := tmeta["labels"]; l != nil {
		m, ok := l.(map[string]any)
		if !ok {
			return nil, &fieldError{path: slices.Concat(t.path, []any{"metadata", "labels"}), msg: fmt.Sprintf("labels is a %s, not a mapping", typeName(l))}
		}
		maps.Copy(labels, m)
	}
	maps.Copy(labels, t.controller)
	podName := name
	if t.role != "" && name != "" {
		podName = name + "-" + strings.ToLower(t.role)
	}
	namespace, _ := meta["namespace"].(string)
	if namespace == "" {
		namespace = "default"
	}
	pmeta := map[string]any{"name": podName, "namespace": namespace, "labels": labels}
	if a, ok := tmeta["annotations"]; ok {
		pmeta["annotations"] = a
	}
	pod := map[string]any{"kind": kind, "metadata": pmeta, "spec": spec}
	if api, ok := obj["apiVersion"]; ok {
		pod["apiVersion"] = api
	}
	return pod, nil
}

// mapping returns m[key] as a mapping: nil when absent or null, an error when
// it is something else.
func mapping(m map[string]any, key string) (map[string]any, error) {
	v, ok := m[key]
	if !ok || v == nil {
		return nil, nil
	}
	sub, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s is a %s, not a mapping", key, typeName(v))
	}
	return sub, nil
}

func lookupPath(v map[string]any, path []any) map[string]any {
	for _, step := range path {
		v, _ = v[step.(string)].(map[string]any)
	}
	return v
}

func objectName(meta map[string]any) string {
	if name, ok := meta["name"].(string); ok && name != "" {
		return name
	}
	name, _ := meta["generateName"].(string)
	return name
}

// line is the line of the value at path in the current document: a key's
// line for a field, an item's line for a list index.
func (p *parser) line(path []any) int {
	n := resolve(p.root)
	if n == nil {
		return 0
	}
	line := n.Line
	for _, step := range path {
		switch s := step.(type) {
		case string:
			k, v := lookup(n, s, 0)
			if k == nil {
				return line
			}
			line, n = k.Line, resolve(v)
		case int:
			if n.Kind != yaml.SequenceNode || s < 0 || s >= len(n.Content) {
				return line
			}
			line, n = n.Content[s].Line, resolve(n.Content[s])
		}
		if n == nil {
			return line
		}
	}
	return line
}

// maxMergeDepth bounds merge keys ("<<: *base") followed in a lookup.
const maxMergeDepth = 8

// lookup finds key in a mapping node, in the mapping itself first and then
// in the mappings it merges, as the decoder does.
func lookup(n *yaml.Node, key string, depth int) (k, v *yaml.Node) {
	if n == nil || n.Kind != yaml.MappingNode || depth > maxMergeDepth {
		return nil, nil
	}
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		if kn.Kind == yaml.ScalarNode && kn.Tag == "!!merge" {
			merges = append(merges, vn)
			continue
		}
		if kn.Kind == yaml.ScalarNode && kn.Value == key {
			return kn, vn
		}
	}
	for _, m := range merges {
		m = resolve(m)
		if m == nil {
			continue
		}
		sources := []*yaml.Node{m}
		if m.Kind == yaml.SequenceNode {
			sources = m.Content
		}
		for _, s := range sources {
			if k, v := lookup(resolve(s), key, depth+1); k != nil {
				return k, v
			}
		}
	}
	return nil, nil
}

// resolve follows aliases to the node they name.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode; i++ {
		if i > maxMergeDepth {
			return nil
		}
		n = n.Alias
	}
	return n
}
