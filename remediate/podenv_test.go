package remediate

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Env edits: a value replaced in place (comments and quoting style kept
// around it), an entry appended in the list's own layout, an env list
// added, entries deleted with their lines, the key with its last entry.
func TestEditPodEnv(t *testing.T) {
	set := func(k, v string) PodChange {
		return PodChange{Line: 1, Container: "c", Env: map[string]string{k: v}}
	}
	remove := func(k ...string) PodChange { return PodChange{Line: 1, Container: "c", RemoveEnv: k} }
	for _, tc := range []struct {
		name, in string
		change   PodChange
		want     string
	}{{
		name:   "value replaced, comment kept",
		in:     "kind: Pod\nspec:\n  containers:\n  - name: c\n    env:\n    - name: FI_PROVIDER\n      value: tcp   # debugging\n    - name: B\n      value: x\n",
		change: set("FI_PROVIDER", "efa"),
		want:   "kind: Pod\nspec:\n  containers:\n  - name: c\n    env:\n    - name: FI_PROVIDER\n      value: efa   # debugging\n    - name: B\n      value: x\n",
	}, {
		name:   "quoted number replaced by a quoted number",
		in:     "kind: Pod\nspec:\n  containers:\n  - name: c\n    env:\n      - {name: FI_EFA_USE_DEVICE_RDMA, value: \"0\"}\n",
		change: set("FI_EFA_USE_DEVICE_RDMA", "1"),
		want:   "kind: Pod\nspec:\n  containers:\n  - name: c\n    env:\n      - {name: FI_EFA_USE_DEVICE_RDMA, value: \"1\"}\n",
	}, {
		name:   "entry without a value gets one",
		in:     "kind: Pod\nspec:\n  containers:\n  - name: c\n    env:\n    - name: NCCL_COLLNET_ENABLE\n    image: x\n",
		change: set("NCCL_COLLNET_ENABLE", "0"),
		want:   "kind: Pod\nspec:\n  containers:\n  - name: c\n    env:\n    - name: NCCL_COLLNET_ENABLE\n      value: \"0\"\n    image: x\n",
	}, {
		name:   "appended to a block list, indented dashes",
		in:     "kind: Pod\nspec:\n  containers:\n    - name: c\n      env:\n        - name: A\n          value: a\n      image: x\n",
		change: set("FI_PROVIDER", "efa"),
		want:   "kind: Pod\nspec:\n  containers:\n    - name: c\n      env:\n        - name: A\n          value: a\n        - name: FI_PROVIDER\n          value: efa\n      image: x\n",
	}, {
		name:   "appended to a flow list",
		in:     "kind: Pod\nspec:\n  containers:\n  - name: c\n    env: [{name: A, value: a}]\n",
		change: set("FI_PROVIDER", "efa"),
		want:   "kind: Pod\nspec:\n  containers:\n  - name: c\n    env: [{name: A, value: a}, {name: FI_PROVIDER, value: efa}]\n",
	}, {
		name:   "appended as a flow item to a block list of flow items",
		in:     "kind: Pod\nspec:\n  containers:\n  - name: c\n    env:\n    - {name: A, value: a}\n",
		change: set("FI_PROVIDER", "efa"),
		want:   "kind: Pod\nspec:\n  containers:\n  - name: c\n    env:\n    - {name: A, value: a}\n    - {name: FI_PROVIDER, value: efa}\n",
	}, {
		name:   "env added to a container without one",
		in:     "kind: Pod\nspec:\n  containers:\n  - name: c\n    image: x\n  - name: d\n",
		change: set("FI_PROVIDER", "efa"),
		want:   "kind: Pod\nspec:\n  containers:\n  - name: c\n    image: x\n    env:\n    - name: FI_PROVIDER\n      value: efa\n  - name: d\n",
	}, {
		name:   "already so",
		in:     "kind: Pod\nspec:\n  containers:\n  - name: c\n    env: [{name: FI_PROVIDER, value: efa}]\n",
		change: set("FI_PROVIDER", "efa"),
		want:   "kind: Pod\nspec:\n  containers:\n  - name: c\n    env: [{name: FI_PROVIDER, value: efa}]\n",
	}, {
		name:   "entry removed with its comment lines inside, comment before the next kept",
		in:     "kind: Pod\nspec:\n  containers:\n  - name: c\n    env:\n    - name: A\n      value: a\n    - name: NCCL_ALGO\n      # forced while debugging\n      value: Ring\n    # B is real\n    - name: B\n      value: b\n",
		change: remove("NCCL_ALGO"),
		want:   "kind: Pod\nspec:\n  containers:\n  - name: c\n    env:\n    - name: A\n      value: a\n    # B is real\n    - name: B\n      value: b\n",
	}, {
		name:   "two removed, flow items in a block list",
		in:     "kind: Pod\nspec:\n  containers:\n  - name: c\n    env:\n    - {name: NCCL_ALGO, value: Ring}\n    - {name: A, value: a}\n    - {name: NCCL_PROTO, value: LL128}\n    image: x\n",
		change: remove("NCCL_ALGO", "NCCL_PROTO"),
		want:   "kind: Pod\nspec:\n  containers:\n  - name: c\n    env:\n    - {name: A, value: a}\n    image: x\n",
	}, {
		name:   "the last entry removed with its key",
		in:     "kind: Pod\nspec:\n  containers:\n  - name: c\n    env:   # tuning\n    - name: NCCL_P2P_DISABLE\n      value: \"1\"\n    image: x\n",
		change: remove("NCCL_P2P_DISABLE"),
		want:   "kind: Pod\nspec:\n  containers:\n  - name: c\n    image: x\n",
	}, {
		name:   "nothing to remove",
		in:     "kind: Pod\nspec:\n  containers:\n  - name: c\n    env: [{name: A, value: a}]\n",
		change: remove("NCCL_ALGO"),
		want:   "kind: Pod\nspec:\n  containers:\n  - name: c\n    env: [{name: A, value: a}]\n",
	}, {
		name:   "CRLF line ends kept",
		in:     "kind: Pod\r\nspec:\r\n  containers:\r\n  - name: c\r\n    env:\r\n    - name: A\r\n      value: a\r\n",
		change: set("FI_PROVIDER", "efa"),
		want:   "kind: Pod\r\nspec:\r\n  containers:\r\n  - name: c\r\n    env:\r\n    - name: A\r\n      value: a\r\n    - name: FI_PROVIDER\r\n      value: efa\r\n",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := editPod([]byte(tc.in), tc.change)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("edited (-want +got):\n%s", diff)
			}
		})
	}
}

// Env changes fleetaudit would have to guess at are refused.
func TestEditPodEnvRefuses(t *testing.T) {
	set := PodChange{Line: 1, Container: "c", Env: map[string]string{"FI_PROVIDER": "efa"}}
	remove := PodChange{Line: 1, Container: "c", RemoveEnv: []string{"NCCL_ALGO"}}
	for _, tc := range []struct {
		name, in string
		change   PodChange
		want     string
	}{
		{"value from a ConfigMap", "kind: Pod\nspec:\n  containers:\n  - name: c\n    env:\n    - name: FI_PROVIDER\n      valueFrom: {configMapKeyRef: {name: fabric, key: provider}}\n", set, "valueFrom"},
		{"two entries of one name", "kind: Pod\nspec:\n  containers:\n  - name: c\n    env:\n    - {name: FI_PROVIDER, value: tcp}\n    - {name: FI_PROVIDER, value: sockets}\n", set, "2 env entries named FI_PROVIDER"},
		{"envFrom could set the removed name", "kind: Pod\nspec:\n  containers:\n  - name: c\n    envFrom: [{configMapRef: {name: nccl}}]\n    env:\n    - {name: NCCL_ALGO, value: Ring}\n", remove, "envFrom"},
		{"a $(NAME) reference", "kind: Pod\nspec:\n  containers:\n  - name: c\n    args: [\"--algo=$(NCCL_ALGO)\"]\n    env:\n    - {name: NCCL_ALGO, value: Ring}\n", remove, "$(NCCL_ALGO)"},
		{"flow env list", "kind: Pod\nspec:\n  containers:\n  - name: c\n    env: [{name: NCCL_ALGO, value: Ring}]\n", remove, "flow style"},
		{"env not a list", "kind: Pod\nspec:\n  containers:\n  - name: c\n    env: {FI_PROVIDER: tcp}\n", set, "not a list"},
		{"templated value next to the edit", "kind: Pod\nspec:\n  containers:\n  - name: c\n    env:\n    - name: FI_PROVIDER\n      value: ${PROVIDER}\n", set, "template variable"},
		{"anchored env", "kind: Pod\nspec:\n  containers:\n  - name: c\n    env: &e\n    - {name: FI_PROVIDER, value: tcp}\n  - name: d\n    env: *e\n", set, "anchor"},
		{"no such container", "kind: Pod\nspec:\n  containers:\n  - name: d\n", set, "no container c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := editPod([]byte(tc.in), tc.change)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("editPod = %q, %v; want an error with %q", got, err, tc.want)
			}
		})
	}
}
