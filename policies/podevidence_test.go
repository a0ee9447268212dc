package policies

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// A cited pod, or the pods of a job, shows what the pod rules read and
// nothing else, redacted also when the snapshot was not (one written by an
// earlier fleetaudit); a narrower path is shown as cited.
func TestCitedPodKeepsWhatRulesRead(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal([]byte(`{"pods": [{"apiVersion": "v1", "kind": "Pod",
		"metadata": {"name": "p", "namespace": "ml", "labels": {"job-name": "j"}, "annotations": {"note": "ANNOTATION"}},
		"spec": {"hostIPC": false, "nodeName": "NODENAME",
			"volumes": [{"name": "shm", "emptyDir": {"medium": "Memory"}, "secret": {"secretName": "SECRETVOLUME"}}],
			"containers": [{"name": "c", "image": "img", "command": ["COMMANDLINE"], "args": ["ARGS"],
				"env": [{"name": "NCCL_DEBUG", "value": "INFO"}, {"name": "HF_TOKEN", "value": "OLDSNAPSHOTTOKEN"}],
				"resources": {"limits": {"nvidia.com/gpu": 8}},
				"volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"}],
				"securityContext": {"privileged": false, "runAsUser": 1234567, "capabilities": {"add": ["IPC_LOCK"]}}}]}}]}`), &doc); err != nil {
		t.Fatal(err)
	}
	for _, fact := range []string{"pods", "pods.0"} {
		b, _ := json.Marshal(evidence(doc, fact).Value)
		got := string(b)
		for _, gone := range []string{"OLDSNAPSHOTTOKEN", "ANNOTATION", "NODENAME", "SECRETVOLUME", "COMMANDLINE", "ARGS", "1234567"} {
			if strings.Contains(got, gone) {
				t.Errorf("%s: evidence holds %s, which no pod rule reads: %s", fact, gone, got)
			}
		}
		for _, kept := range []string{`"name":"p"`, `"namespace":"ml"`, `"job-name":"j"`, `"image":"img"`, `"NCCL_DEBUG","value":"INFO"`, `"nvidia.com/gpu":8`, `"mountPath":"/dev/shm"`, `"medium":"Memory"`, `"add":["IPC_LOCK"]`, `"hostIPC":false`} {
			if !strings.Contains(got, kept) {
				t.Errorf("%s: evidence lacks %s: %s", fact, kept, got)
			}
		}
	}
	if b, _ := json.Marshal(evidence(doc, "pods.0.spec.containers.0.args").Value); string(b) != `["ARGS"]` {
		t.Errorf("a narrower path: %s, want it as cited", b)
	}
	// The snapshot itself is not changed.
	if c := doc["pods"].([]any)[0].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any); c["command"] == nil || !strings.Contains(fmt.Sprint(c["env"]), "OLDSNAPSHOTTOKEN") {
		t.Error("narrowing changed the snapshot")
	}
}
