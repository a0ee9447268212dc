package kube

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestUntemplate(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		// Values, list items and keys that start with an action are quoted.
		{"nvidia.com/gpu: {{ .Values.gpus }}\n", "nvidia.com/gpu: '{{ .Values.gpus }}'\n"},
		{"- {{ .Values.arg }}\n", "- '{{ .Values.arg }}'\n"},
		{"  - - {{ x }}\n", "  - - '{{ x }}'\n"},
		{"{{ .Values.key }}: 1\n", "'{{ .Values.key }}': 1\n"},
		{"name: {{ printf \"%s-x\" .Release.Name }}  \r\n", "name: '{{ printf \"%s-x\" .Release.Name }}'\r\n"},
		{"v: {{ 'a' }}\n", "v: '{{ ''a'' }}'\n"},
		// Control lines are blanked; their line stays.
		{"a: 1\n  {{- if .Values.rdma }}\nb: 2\n{{- end }}{{/* c */}}\n", "a: 1\n\nb: 2\n\n"},
		// An action inside a scalar is YAML already.
		{"image: \"{{ .Values.image }}:{{ .Values.tag }}\"\n", "image: \"{{ .Values.image }}:{{ .Values.tag }}\"\n"},
		{"image: repo/{{ .Values.image }}\n", "image: repo/{{ .Values.image }}\n"},
		// No action: the bytes are returned as they are.
		{"a: $X\n", "a: $X\n"},
		// An unclosed action is left to the YAML parser to report.
		{"a: {{ .x\n", "a: '{{ .x'\n"},
	} {
		if got := string(untemplate([]byte(tc.in))); got != tc.want {
			t.Errorf("untemplate(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if strings.Count(tc.in, "\n") != strings.Count(string(untemplate([]byte(tc.in))), "\n") {
			t.Errorf("untemplate(%q) changed the line count", tc.in)
		}
	}
}

// A template's GPU count reads as its text, so the pod rules know a GPU is
// requested; the template's lines are the pod's.
func TestParseTemplatedManifests(t *testing.T) {
	helm := `apiVersion: batch/v1
kind: Job
metadata:
  name: {{ include "trainer.fullname" . }}
spec:
  template:
    spec:
      {{- with .Values.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      containers:
      - name: trainer
        resources:
          limits:
            nvidia.com/gpu: {{ .Values.gpus }}
            memory: $MEMORY
`
	objs, err := ParseManifests([]byte(helm), "job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 || objs[0].Line != 6 || objs[0].Name != `{{ include "trainer.fullname" . }}` {
		t.Fatalf("objects %+v", objs)
	}
	c := objs[0].Pod["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	want := map[string]any{"nvidia.com/gpu": "{{ .Values.gpus }}", "memory": "$MEMORY"}
	if diff := cmp.Diff(want, c["resources"].(map[string]any)["limits"]); diff != "" {
		t.Errorf("limits (-want +got):\n%s", diff)
	}
}
