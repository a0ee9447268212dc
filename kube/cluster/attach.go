package cluster

import (
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

// snapshot is the node as a snapshot: labels, node and pods with their
// sources, and no host facts.
func (n *Node) snapshot(now time.Time, version string) (map[string]any, error) {
	s := snapshot.New(n.Host)
	s.CollectedAt = now.UTC()
	s.Source = snapshot.Origin{Kind: "kube", Address: n.server, Root: NodeSource(n.Name), Collector: version}
	s.Labels = maps.Clone(n.Labels)
	info := n.Info
	s.Node = &info
	src := snapshot.FileAt(NodeSource(n.Name), 0)
	s.Sources["labels"] = src
	s.Sources["node"] = src
	for i, o := range n.Pods {
		s.Pods = append(s.Pods, o.Pod)
		s.Sources[fmt.Sprintf("pods.%d", i)] = snapshot.FileAt(o.File, 0)
	}
	s.Normalize()
	doc, err := snapshot.Document(s)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", n.Name, err)
	}
	snapshot.WithoutHostFacts(doc)
	return doc, nil
}

// Snapshot is the document of a node no host snapshot was collected for:
// what the cluster knows of it (labels, node, pods, source kind "kube")
// and no host facts, so host rules skip it instead of judging an empty host.
func (n *Node) Snapshot(now time.Time, version string) (map[string]any, error) {
	return n.snapshot(now, version)
}

// Attach adds the node to a host's snapshot document: its labels (over the
// snapshot's own, which the node's live labels supersede), the node section
// and its pods. The pods the API server lists replace any the snapshot
// held (manifests given to collect --pods): they are what runs on the node.
// It returns how many pods were replaced.
func (n *Node) Attach(doc map[string]any) (replaced int, err error) {
	part, err := n.snapshot(time.Time{}, "")
	if err != nil {
		return 0, err
	}
	labels, _ := doc["labels"].(map[string]any)
	merged := maps.Clone(labels)
	if merged == nil {
		merged = map[string]any{}
	}
	if l, ok := part["labels"].(map[string]any); ok {
		maps.Copy(merged, l)
	}
	doc["labels"] = merged
	doc["node"] = part["node"]
	old, _ := doc["pods"].([]any)
	replaced = len(old)
	if p, ok := part["pods"]; ok {
		doc["pods"] = p
	} else {
		delete(doc, "pods")
	}
	sources, _ := doc["sources"].(map[string]any)
	if sources == nil {
		sources = map[string]any{}
		doc["sources"] = sources
	}
	for k := range sources {
		if k == "pods" || strings.HasPrefix(k, "pods.") {
			delete(sources, k)
		}
	}
	if s, ok := part["sources"].(map[string]any); ok {
		maps.Copy(sources, s)
	}
	return replaced, nil
}
