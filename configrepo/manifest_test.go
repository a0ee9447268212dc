package configrepo

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

func TestParseManifest(t *testing.T) {
	m, err := ParseManifest([]byte(`fleets:
  gpu-training:
    layers: [base, gpu]
    profile: gpu-training
    baseline: baselines/gpu.json
    labels: {node.kubernetes.io/instance-type: p5.48xlarge}
  web: {layers: [base, web], profile: web-serving, k8s: manifests/web}
inventory: hosts.ini
`))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"gpu-training", "web"}, m.FleetNames()); diff != "" {
		t.Error(diff)
	}
	if m.ProfileOf("web") != "web-serving" || m.ProfileOf("gpu-training") != "gpu-training" {
		t.Errorf("profiles %q %q", m.ProfileOf("web"), m.ProfileOf("gpu-training"))
	}
	if got := m.Fleets["gpu-training"].Labels["node.kubernetes.io/instance-type"]; got != "p5.48xlarge" {
		t.Errorf("label keys must survive as written, got %q", got)
	}
	for name, tc := range map[string]struct{ doc, want string }{
		"unknown key":    {"fleets:\n  a: {layers: [x], layer: [y]}\n", `unknown key "layer"`},
		"no fleets":      {"inventory: x\n", "no fleets"},
		"no layers":      {"fleets:\n  a: {profile: web-serving}\n", "fleet a: no layers"},
		"layer escapes":  {"fleets:\n  a: {layers: [../secrets]}\n", `layer "../secrets"`},
		"nested layer":   {"fleets:\n  a: {layers: [gpu/extra]}\n", `layer "gpu/extra"`},
		"absolute k8s":   {"fleets:\n  a: {layers: [x], k8s: /etc}\n", "k8s"},
		"baseline up":    {"fleets:\n  a: {layers: [x], baseline: ../../b.json}\n", "leaves the repo"},
		"inventory up":   {"fleets:\n  a: {layers: [x]}\ninventory: ../hosts\n", "inventory"},
		"empty command":  {"fleets:\n  a: {}\nrender: {command: []}\n", "render: command is empty"},
		"bad fleet name": {"fleets:\n  ../x: {layers: [a]}\n", "want a plain name"},
		"two documents":  {"fleets:\n  a: {layers: [x]}\n---\nx: 1\n", "more than one"},
		"not a mapping":  {"- a\n", "mapping"},
	} {
		_, err := ParseManifest([]byte(tc.doc))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), ManifestFile) {
			t.Errorf("%s: err = %v, want %q", name, err, tc.want)
		}
	}
}

func FuzzParseManifest(f *testing.F) {
	for _, seed := range []string{
		"fleets:\n  gpu-training: {layers: [base, gpu], baseline: baselines/gpu.json}\n  web-serving: {layers: [base, web]}\ninventory: inventory.yaml\n",
		"fleets:\n  a: {}\nrender:\n  command: [ansible-playbook, render.yml]\n",
		"fleets: {a: {layers: [x], labels: {k: v}, k8s: k8s/a, profile: p}}\n",
		"fleets:\n  a: &x {layers: [b]}\n  c: *x\n",
		"",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseManifest(data)
		if err != nil {
			return
		}
		for _, name := range m.FleetNames() {
			for _, l := range m.Fleets[name].Layers {
				if p, err := repoPath("layers/" + l); err != nil || strings.Contains(l, "/") || !strings.HasPrefix(p, "layers/") {
					t.Fatalf("accepted layer %q", l)
				}
			}
		}
	})
}

func checkoutOf(files map[string]string) *Checkout {
	co := &Checkout{Files: fstest.MapFS{}, Refused: map[string]string{}}
	for p, data := range files {
		co.Files[p] = &fstest.MapFile{Data: []byte(data)}
	}
	return co
}

func TestRenderStacksLayers(t *testing.T) {
	co := checkoutOf(map[string]string{
		"layers/base/etc/default/grub":               "base grub",
		"layers/base/etc/sysctl.d/10-a.conf":         "base a",
		"layers/base/etc/sysctl.d/20-b.conf":         "base b",
		"layers/gpu/etc/sysctl.d/20-b.conf":          "gpu b",
		"layers/gpu/etc/sysctl.d/30-c.conf":          "gpu c",
		"layers/gpu/etc/security/limits.d/rdma.conf": "gpu limits",
	})
	m := &Manifest{Fleets: map[string]*Fleet{"gpu": {Layers: []string{"base", "gpu"}}}}
	r, err := Render(context.Background(), co, m, "gpu", RenderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"/etc/default/grub":                "layers/base/etc/default/grub",
		"/etc/sysctl.d/10-a.conf":          "layers/base/etc/sysctl.d/10-a.conf",
		"/etc/sysctl.d/20-b.conf":          "layers/gpu/etc/sysctl.d/20-b.conf",
		"/etc/sysctl.d/30-c.conf":          "layers/gpu/etc/sysctl.d/30-c.conf",
		"/etc/security/limits.d/rdma.conf": "layers/gpu/etc/security/limits.d/rdma.conf",
	}
	if diff := cmp.Diff(want, r.Origins); diff != "" {
		t.Errorf("origins (-want +got):\n%s", diff)
	}
	entries, err := r.Root.ReadDir("etc/sysctl.d")
	if err != nil || len(entries) != 3 {
		t.Fatalf("etc/sysctl.d: %v %v", entries, err)
	}
	f, err := r.Root.Open("etc/sysctl.d/20-b.conf")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	n, _ := f.Read(buf)
	f.Close()
	if string(buf[:n]) != "gpu b" {
		t.Errorf("20-b.conf = %q, want the later layer's", buf[:n])
	}

	for name, tc := range map[string]struct {
		files  map[string]string
		layers []string
		want   string
	}{
		"missing layer":       {map[string]string{"layers/base/etc/x": ""}, []string{"base", "gpu"}, "layers/gpu: no such directory"},
		"file then directory": {map[string]string{"layers/base/etc/x": "", "layers/gpu/etc/x/y": ""}, []string{"base", "gpu"}, "/etc/x"},
		"directory then file": {map[string]string{"layers/base/etc/x/y": "", "layers/gpu/etc/x": ""}, []string{"base", "gpu"}, "/etc/x"},
	} {
		m := &Manifest{Fleets: map[string]*Fleet{"f": {Layers: tc.layers}}}
		_, err := Render(context.Background(), checkoutOf(tc.files), m, "f", RenderOptions{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", name, err, tc.want)
		}
	}
	m = &Manifest{Fleets: map[string]*Fleet{"f": {Layers: []string{"x"}}}, Render: &RenderCommand{Command: []string{"true"}}}
	if _, err := Render(context.Background(), co, m, "f", RenderOptions{}); !errors.Is(err, ErrRenderCommandNotAllowed) {
		t.Errorf("render command without permission: %v", err)
	}
}
