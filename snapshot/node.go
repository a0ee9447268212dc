package snapshot

// KubeNode is the host's Kubernetes Node object as the API server lists it:
// what the cluster believes about the host. Its labels are the snapshot's
// labels; its provenance is "kube:node/NAME".
type KubeNode struct {
	// Name is the Node object's name.
	Name string `json:"name"`
	// Taints are spec.taints.
	Taints []Taint `json:"taints"`
	// Allocatable and Capacity are status.allocatable and status.capacity,
	// quantities as the API writes them ("8", "1000", "2003424Ki"): GPUs
	// (nvidia.com/gpu), EFA (vpc.amazonaws.com/efa) and RDMA (rdma/*)
	// devices that device plugins advertise.
	Allocatable map[string]string `json:"allocatable"`
	Capacity    map[string]string `json:"capacity"`
	// Unschedulable is spec.unschedulable (kubectl cordon).
	Unschedulable bool `json:"unschedulable,omitempty"`
}

// Taint is one node taint.
type Taint struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect"`
}

// hostless are the sections a snapshot made from the Kubernetes API alone
// keeps: the auditor's own, and the node's labels, the node and its pods.
var hostless = map[string]bool{
	"schema": true, "host": true, "collected_at": true, "source": true, "sources": true, "errors": true,
	"labels": true, "node": true, "pods": true,
}

// WithoutHostFacts removes from doc (a snapshot document) every section read
// from the host itself, so a snapshot of what only the cluster knows (a node
// and its pods) says its host facts were not collected instead of claiming
// a host with no boot parameters, no sysctls and no GPUs. Rules that read a
// removed section are skipped on it.
func WithoutHostFacts(doc map[string]any) {
	for _, s := range Sections() {
		if !hostless[s] {
			delete(doc, s)
		}
	}
}
