// Package snapshot defines the host snapshot: the facts one host presents to the
// policy engine, where each fact came from, and what could not be collected.
//
// A snapshot is the contract between collectors and policies. Its JSON form is
// versioned ("fleetaudit.snapshot/v1"); a reader keeps fields it does not know so
// an older fleetaudit can carry a newer snapshot through unchanged, and refuses a
// snapshot of a newer major version instead of misreading it.
package snapshot

import (
	"time"
)

// Schema is the schema identifier this package writes.
const Schema = SchemaPrefix + "v1"

// SchemaPrefix is the part of a schema identifier before the major version.
const SchemaPrefix = "fleetaudit.snapshot/"

// MajorVersion is the schema major version this package reads and writes.
const MajorVersion = 1

// Snapshot is everything collected from one host (or one rendered fleet root).
//
// Section fields are values, not pointers: an empty section means "collected,
// nothing present", and a section that could not be read says so in Errors.
type Snapshot struct {
	Schema      string            `json:"schema"`
	Host        string            `json:"host"`
	CollectedAt time.Time         `json:"collected_at"`
	Source      Origin            `json:"source"`
	Labels      map[string]string `json:"labels,omitempty"`

	Boot       Boot       `json:"boot"`
	Sysctl     Sysctl     `json:"sysctl"`
	Limits     Limits     `json:"limits"`
	Logind     Logind     `json:"logind"`
	Kernel     Kernel     `json:"kernel"`
	OS         OSRelease  `json:"os"`
	NVIDIA     NVIDIA     `json:"nvidia"`
	Modules    Modules    `json:"modules"`
	Libraries  Libraries  `json:"libraries"`
	Memory     Memory     `json:"memory"`
	RDMA       RDMA       `json:"rdma"`
	IOMMU      IOMMU      `json:"iommu"`
	PCI        PCI        `json:"pci"`
	NCCLConfig NCCLConfig `json:"nccl_config"`
	Net        Net        `json:"net"`
	Services   Services   `json:"services"`
	Firewall   Firewall   `json:"firewall"`
	Pods       []Pod      `json:"pods,omitempty"`
	// Node is the host's Kubernetes Node, nil when none was read: absent,
	// it claims nothing (no labels, devices or taints to hold the host to).
	Node *KubeNode `json:"node,omitempty"`
	// DMI is nil when /sys/class/dmi/id was not read (a config repo, a
	// guest without SMBIOS, an older snapshot): absent, it says nothing.
	DMI *DMI `json:"dmi,omitempty"`

	// Sources maps a fact path (e.g. "boot.configured.params.hugetlb_cma") to
	// the place its value came from, written as text: "file:line", or
	// "default: <why>" (see Provenance).
	Sources map[string]Provenance `json:"sources"`
	// Errors lists what could not be read or parsed; the rest of the snapshot
	// is still valid.
	Errors []CollectionError `json:"errors"`

	// unknown holds fields written by a newer fleetaudit.
	unknown []unknownField
}

// Origin says how the snapshot was produced.
type Origin struct {
	// Kind is "local", "ssh", "config-repo", or "kube" for a snapshot of
	// what the Kubernetes API alone knows of the host (its node and pods).
	Kind string `json:"kind"`
	// Address is a remote host's address ("" for a local root or a
	// config repo).
	Address string `json:"address,omitempty"`
	// Root is the directory the collectors read as "/".
	Root string `json:"root"`
	// Collector is the fleetaudit version that wrote the snapshot.
	Collector string `json:"collector,omitempty"`
	// Image: the root is an offline OS image (nothing mounted on /proc: an
	// image before first boot, a mounted disk), not a running host. Its
	// running state (RunningState) was not read and counts as not collected.
	Image bool `json:"image,omitempty"`
}

// CollectorSource names collection errors about reaching a host at all (no
// snapshot file, an unreachable address, a root that is not a directory). A
// snapshot with such an error holds no facts: its sections are empty because
// nothing was read, not because the host has nothing.
const CollectorSource = "source"

// CollectionError is a source that a collector could not read or parse.
type CollectionError struct {
	Collector string `json:"collector"`
	Path      string `json:"path"`
	Reason    string `json:"reason"`
	// Skipped: what is reported is a line the file's reader itself skips
	// (pam_limits' "invalid line ... skipped"); the facts are computed
	// without it, as the reader computes them, so nothing is unread.
	Skipped bool `json:"skipped,omitempty"`
}

// Pod is a pod (or pod template) scheduled on the host, kept as the
// Kubernetes JSON so pod rules see exactly what the API server holds.
type Pod = map[string]any
