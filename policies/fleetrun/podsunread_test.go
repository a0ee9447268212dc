package fleetrun

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/google/go-cmp/cmp"
)

// A read host with neither pods nor a Kubernetes node had no pods read:
// HostRun.PodsUnread. A node with no pods, or pods from manifests, were
// read; an unread host says so through Unread alone.
func TestRunMarksHostsWhosePodsWereNotRead(t *testing.T) {
	gpu := map[string]string{"fleet": "gpu-training"}
	plain := host{Name: "ssh-only", Labels: gpu}.Doc(t)
	node := host{Name: "kube-node", Labels: gpu}.Doc(t)
	node["node"] = map[string]any{"name": "kube-node", "taints": []any{}, "allocatable": map[string]any{}, "capacity": map[string]any{}}
	pods := host{Name: "manifests", Labels: gpu}.Doc(t)
	pods["pods"] = []any{map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "train", "namespace": "ml"}, "spec": map[string]any{"containers": []any{}}}}
	load := func(doc map[string]any) func(context.Context) (map[string]any, error) {
		return func(context.Context) (map[string]any, error) { return doc, nil }
	}
	inputs := []HostInput{
		{Origin: "a", Name: "ssh-only", Load: load(plain)},
		{Origin: "b", Name: "kube-node", Load: load(node)},
		{Origin: "c", Name: "manifests", Load: load(pods)},
		{Origin: "d", Name: "down", Load: func(context.Context) (map[string]any, error) { return nil, errors.New("connection refused") }},
	}
	e := newEngine(t, policies.Options{Fleets: gpuFleets()})
	rep, err := Run(context.Background(), e, slices.Values(inputs), RunOptions{
		FleetOf: func(host string, doc map[string]any) string {
			if doc == nil {
				return "gpu-training"
			}
			return fleetByLabel(host, doc)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, h := range rep.Hosts {
		got[h.Host] = h.PodsUnread
	}
	want := map[string]bool{"ssh-only": true, "kube-node": false, "manifests": false, "down": false}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("PodsUnread (-want +got):\n%s", diff)
	}
}
