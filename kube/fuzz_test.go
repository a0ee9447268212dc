package kube

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func FuzzParseManifests(f *testing.F) {
	files, err := filepath.Glob("testdata/*")
	if err != nil {
		f.Fatal(err)
	}
	// The manifests audit --manifests reads: every kind, Helm and envsubst
	// templates, duplicate keys.
	more, err := filepath.Glob("../testdata/manifests/*/*")
	if err != nil {
		f.Fatal(err)
	}
	files = append(files, more...)
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("kind: List\nitems:\n- kind: CronJob\n  spec: {jobTemplate: {metadata: {labels: 1}, spec: {template: {spec: {}}}}}\n"))
	f.Add([]byte("kind: LeaderWorkerSet\nmetadata: {name: l}\nspec: {leaderWorkerTemplate: {workerTemplate: {metadata: {labels: {a: b}}, spec: {containers: []}}}}\n"))
	f.Add([]byte("x: &a {<<: *a}\n"))
	f.Add([]byte("{\"kind\": \"PodList\", \"items\": [{\"metadata\": {\"name\": \"a\\/b\"}}]}"))
	f.Add([]byte("kind: Pod\nspec: {a: .nan, 1: 2}\n---\n- 1\n"))
	f.Add([]byte("kind: Pod\nspec:\n  {{- if x }}\n  - {{ a }}: {{ b }}\n  {{ c }}:\n  x: '{{ it's }}'\r\n{{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := ParseManifests(data, "fuzz.yaml")
		if len(objs) > maxObjects {
			t.Fatalf("%d objects, over the cap", len(objs))
		}
		for _, e := range unjoin(err) {
			if _, ok := e.(*ManifestError); !ok {
				t.Fatalf("error %v (%T) is not a *ManifestError", e, e)
			}
		}
		for _, o := range objs {
			// Pods go into snapshots as JSON: they must encode, and have
			// the pod shape the rules read.
			if _, err := json.Marshal(o.Pod); err != nil {
				t.Fatalf("pod does not encode: %v", err)
			}
			meta, ok := o.Pod["metadata"].(map[string]any)
			if !ok {
				t.Fatalf("pod without metadata: %v", o.Pod)
			}
			if _, ok := meta["namespace"].(string); !ok {
				t.Fatalf("pod without a namespace: %v", o.Pod)
			}
			if o.Kind == "" || o.Line < 1 {
				t.Fatalf("object without kind or line: %+v", o)
			}
		}
	})
}
