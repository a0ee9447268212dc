package cluster

import (
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A pod from the API server is redacted as a manifest's pod is (one step,
// kube.RedactPod): every env value but NCCL's and libfabric's, secrets on
// the command line, the last-applied copy. It redacted only env names that
// looked secret.
func TestPodObjectIsRedactedAsManifestsAre(t *testing.T) {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "train-0", Namespace: "ml", Annotations: map[string]string{
			"kubectl.kubernetes.io/last-applied-configuration": `{"value":"LASTAPPLIEDvalue"}`,
		}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name:    "trainer",
			Command: []string{"torchrun", "--hf-token", "CMDLINEvalue"},
			Env: []corev1.EnvVar{
				{Name: "HF_TOKEN", Value: "TOKENvalue"},
				{Name: "S3_URL", Value: "s3://bucket?sig=SIGNEDvalue"},
				{Name: "NCCL_DEBUG", Value: "INFO"},
			},
		}}},
	}
	o, err := podObject(p)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(o.Pod)
	text := string(b)
	for _, gone := range []string{"LASTAPPLIEDvalue", "CMDLINEvalue", "TOKENvalue", "SIGNEDvalue"} {
		if strings.Contains(text, gone) {
			t.Errorf("pod holds %s:\n%s", gone, text)
		}
	}
	if !strings.Contains(text, `{"name":"NCCL_DEBUG","value":"INFO"}`) || !strings.Contains(text, `{"name":"S3_URL","value":"(redacted)"}`) {
		t.Errorf("env not as the pod rules need it:\n%s", text)
	}
}
