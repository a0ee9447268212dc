package policies

import (
	"strconv"
	"strings"

	"github.com/fleetaudit/fleetaudit/kube"
)

// A finding that cites a whole pod ("pods.<i>") or every pod ("pods")
// shows the fields the pod rules read, not the pod: names, labels, images,
// env, resources, /dev/shm mounts and volumes, host namespaces and
// capabilities. Command lines, annotations, probes and the rest of the spec
// never reach a report through evidence. A rule that cites a narrower path
// (pods.0.spec.containers.0.args) gets that path's value as it is.
//
// Keep podFields in step with what policies/lib's pod rules read.

// podFields is the shape a cited pod is narrowed to: a key maps to nil to
// keep its value whole, to a podFields to narrow a mapping (or each mapping
// of a list) further.
type podFields map[string]podFields

var (
	containerFields = podFields{
		"name":  nil,
		"image": nil,
		// Values are already redacted when the pod was read
		// (kube.RedactPod), but for NCCL_* and FI_*.
		"env":             podFields{"name": nil, "value": nil, "valueFrom": nil},
		"resources":       nil,
		"volumeMounts":    podFields{"name": nil, "mountPath": nil},
		"securityContext": podFields{"privileged": nil, "capabilities": podFields{"add": nil}},
	}
	specFields = podFields{
		"hostNetwork":    nil,
		"hostIPC":        nil,
		"resources":      nil,
		"volumes":        podFields{"name": nil, "emptyDir": nil},
		"containers":     containerFields,
		"initContainers": containerFields,
	}
	citedPod = podFields{
		"apiVersion": nil,
		"kind":       nil,
		"metadata":   podFields{"name": nil, "namespace": nil, "labels": nil},
		"spec": func() podFields {
			s := podFields{"template": podFields{"spec": specFields}}
			for k, v := range specFields {
				s[k] = v
			}
			return s
		}(),
	}
)

// citedValue is the value a finding shows for fact: a whole pod, or the
// pods, narrowed to citedPod; anything else as it is.
func citedValue(fact string, v any) any {
	if fact == "pods" {
		pods, ok := v.([]any)
		if !ok {
			return v
		}
		out := make([]any, len(pods))
		for i, p := range pods {
			out[i] = cited(p)
		}
		return out
	}
	if i, ok := strings.CutPrefix(fact, "pods."); ok {
		if _, err := strconv.Atoi(i); err == nil {
			return cited(v)
		}
	}
	return v
}

// cited is pod narrowed, and redacted as a pod source redacts it: a
// snapshot written by an earlier fleetaudit, or by hand, may hold env
// values. The snapshot's own pod is not changed (narrow copies what
// RedactPod may change).
func cited(pod any) any {
	p := narrow(pod, citedPod)
	if m, ok := p.(map[string]any); ok {
		kube.RedactPod(m)
	}
	return p
}

// narrow copies of v the fields keep names.
func narrow(v any, keep podFields) any {
	if keep == nil {
		return v
	}
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(keep))
		for k, sub := range keep {
			if x, ok := v[k]; ok {
				out[k] = narrow(x, sub)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = narrow(x, keep)
		}
		return out
	}
	return v
}
