package audit

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetaudit/fleetaudit/fleets"
)

// audit --manifests over the fixtures of testdata/manifests: every kind the
// manifests reader knows, templated manifests (envsubst, Helm), a file with
// duplicate keys, and the negative controls the pod rules must not fire on.
func TestManifestsWithoutAHost(t *testing.T) {
	set, err := fleets.Load(true)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dir  string
		want []string // rule at source
	}{{
		// One GPU container without a memory limit per pod or template: each
		// kind is read, at the line of its template.
		dir: "kinds",
		want: []string{
			"pod-memory-limit-missing at kinds/cronjob.yaml:10",
			"pod-memory-limit-missing at kinds/daemonset.yaml:7",
			"pod-memory-limit-missing at kinds/deployment.yaml:7",
			"pod-memory-limit-missing at kinds/job.yaml:7",
			"pod-memory-limit-missing at kinds/kubectl-list.json:4",
			"pod-memory-limit-missing at kinds/leaderworkerset.yaml:10",
			"pod-memory-limit-missing at kinds/leaderworkerset.yaml:18",
			"pod-memory-limit-missing at kinds/mpijob.yaml:19",
			"pod-memory-limit-missing at kinds/pod.yaml:1",
			"pod-memory-limit-missing at kinds/podtemplate.yaml:6",
			"pod-memory-limit-missing at kinds/pytorchjob.yaml:10",
			"pod-memory-limit-missing at kinds/pytorchjob.yaml:20",
			"pod-memory-limit-missing at kinds/replicaset.yaml:7",
			"pod-memory-limit-missing at kinds/statefulset.yaml:7",
			"pod-memory-limit-missing at kinds/tfjob.yaml:10",
		},
	}, {
		// nvidia.com/gpu: $GPU_PER_NODE and {{ .Values.gpus }} are GPU
		// containers with an unknown count; the EFA request is RDMA.
		dir: "templated",
		want: []string{
			"pod-memory-limit-missing at templated/helm-job.yaml:10",
			"pod-memory-limit-missing at templated/pytorchjob-envsubst.yaml:16",
			"pod-rdma-without-ipc-lock at templated/pytorchjob-envsubst.yaml:16",
			"pod-shm-missing at templated/helm-job.yaml:10",
			"pod-shm-missing at templated/pytorchjob-envsubst.yaml:16",
		},
	}, {
		// The document with the duplicate key is a collection error with
		// its line; the next document is still audited.
		dir: "invalid",
		want: []string{
			"collection-error at ",
			"pod-memory-limit-missing at invalid/duplicate-keys.yaml:20",
		},
	}, {
		dir:  "negative",
		want: nil,
	}} {
		t.Run(tc.dir, func(t *testing.T) {
			path := "../testdata/manifests/" + tc.dir
			res, err := Run(context.Background(), Options{
				Fleets: set, Manifests: []string{path}, ManifestFleet: "gpu-training", Version: "test",
				Now: func() time.Time { return time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC) },
			})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range res.Findings {
				if f.Fleet != "gpu-training" || f.Host != path {
					t.Errorf("finding %s: host %q fleet %q, want %q gpu-training", f.Rule, f.Host, f.Fleet, path)
				}
				src := ""
				if len(f.Evidence) > 0 && f.Rule != "collection-error" {
					src = f.Evidence[0].Source[len("../testdata/manifests/"):]
				}
				got = append(got, fmt.Sprintf("%s at %s", f.Rule, src))
			}
			slices.Sort(got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
			// No host facts were collected: the host rules are skipped,
			// never run on an empty host.
			if res.Summary.Audited != 1 || res.Summary.RulesSkipped["hugetlb-cma-on-gpu"] != 1 || res.Summary.RulesSkipped["memlock-too-low"] != 1 {
				t.Errorf("summary %+v: want 1 audited host with the host rules skipped", res.Summary)
			}
		})
	}
}

func TestManifestsDuplicateKeyNamesItsLine(t *testing.T) {
	set, err := fleets.Load(true)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), Options{Fleets: set, Manifests: []string{"../testdata/manifests/invalid/duplicate-keys.yaml"}, ManifestFleet: "gpu-training"})
	if err != nil {
		t.Fatal(err)
	}
	// The file is also an error of the run, for the command to fail on.
	if e := res.ManifestErrors; len(e) != 1 || e[0].Source != "../testdata/manifests/invalid/duplicate-keys.yaml" || !contains(e[0].Error, `mapping key "resources" already defined at line 12`) {
		t.Errorf("manifest errors %+v: want the duplicate key of duplicate-keys.yaml", e)
	}
	for _, f := range res.Findings {
		if f.Rule == "collection-error" {
			if want := `mapping key "resources" already defined at line 12`; !contains(f.Message, want) {
				t.Errorf("message %q lacks %q", f.Message, want)
			}
			return
		}
	}
	t.Error("no collection-error for the duplicate key")
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
