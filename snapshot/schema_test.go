package snapshot

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func genericDoc(t *testing.T, src string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(src))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		want    []CollectionError
		removed []string // fact paths gone after Validate
		kept    []string // fact paths still there
	}{{
		name:    "boot is a string",
		doc:     `{"host":"h","boot":"string","kernel":{"release":"6.8.0"}}`,
		want:    []CollectionError{{Collector: "snapshot", Path: "boot", Reason: "want object, got string"}},
		removed: []string{"boot"},
		kept:    []string{"kernel.release", "host"},
	}, {
		name:    "hugetlb_cma is a number",
		doc:     `{"boot":{"running":{"present":true,"params":{"hugetlb_cma":6,"iommu":"pt"}}}}`,
		want:    []CollectionError{{Collector: "snapshot", Path: "boot.running.params.hugetlb_cma", Reason: "want string, got number"}},
		removed: []string{"boot.running.params.hugetlb_cma"},
		kept:    []string{"boot.running.params.iommu", "boot.running.present"},
	}, {
		name: "embedded cmdline fields of configured",
		doc:  `{"boot":{"configured":{"loader":"grub","params":"x"}}}`,
		want: []CollectionError{{Collector: "snapshot", Path: "boot.configured.params", Reason: "want object, got string"}},
		kept: []string{"boot.configured.loader"},
	}, {
		name:    "a wrong list item takes the list",
		doc:     `{"libraries":{"nccl":[{"version":"2.21.5"},"2.20.5"],"cuda":[]}}`,
		want:    []CollectionError{{Collector: "snapshot", Path: "libraries.nccl.1", Reason: "want object, got string"}},
		removed: []string{"libraries.nccl"},
		kept:    []string{"libraries.cuda"},
	}, {
		name: "integers and booleans",
		doc:  `{"memory":{"present":"yes","mem_total_kb":1.5,"cma_total_kb":1024},"rdma":{"devices":{"mlx5_0":{"ports":{"1":{"state_code":"4","rate_gbps":400.5}}}}}}`,
		want: []CollectionError{
			{Collector: "snapshot", Path: "memory.mem_total_kb", Reason: "want integer, got number 1.5"},
			{Collector: "snapshot", Path: "memory.present", Reason: "want boolean, got string"},
			{Collector: "snapshot", Path: "rdma.devices.mlx5_0.ports.1.state_code", Reason: "want integer, got string"},
		},
		kept: []string{"memory.cma_total_kb", "rdma.devices.mlx5_0.ports.1.rate_gbps"},
	}, {
		name: "null is a string's wrong type, a list's empty value",
		doc:  `{"kernel":{"release":null},"modules":{"loaded":null}}`,
		want: []CollectionError{{Collector: "snapshot", Path: "kernel.release", Reason: "want string, got null"}},
		kept: []string{"modules.loaded"},
	}, {
		name: "unknown members and pods' own JSON pass",
		doc:  `{"x_site":5,"kernel":{"livepatch":[1]},"pods":[{"spec":{"containers":7}}],"labels":{"rack":"r1"}}`,
		kept: []string{"x_site", "kernel.livepatch", "pods.0.spec.containers", "labels.rack"},
	}, {
		name:    "pods must be objects",
		doc:     `{"pods":["web"]}`,
		want:    []CollectionError{{Collector: "snapshot", Path: "pods.0", Reason: "want object, got string"}},
		removed: []string{"pods"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := genericDoc(t, tt.doc)
			got := Validate(doc)
			sortErrors(got)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Validate errors (-want +got):\n%s", diff)
			}
			for _, p := range tt.removed {
				if v, ok := Lookup(doc, p); ok {
					t.Errorf("%s = %v, want it removed", p, v)
				}
			}
			for _, p := range tt.kept {
				if _, ok := Lookup(doc, p); !ok {
					t.Errorf("%s was removed", p)
				}
			}
		})
	}
}

func sortErrors(errs []CollectionError) {
	slices.SortFunc(errs, func(a, b CollectionError) int { return strings.Compare(a.Path, b.Path) })
}

// A snapshot as the collectors write it is valid, every section of it.
func TestValidateAcceptsEncodedSnapshots(t *testing.T) {
	s := New("gpu-a-001")
	s.CollectedAt = time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	s.Labels = map[string]string{"rack": "r12"}
	s.Boot.Configured.Grub = &GrubDefaults{CmdlineLinux: "quiet"}
	s.Boot.Running.Params = map[string]string{"hugetlb_cma": "6G"}
	s.RDMA.Devices = map[string]RDMADevice{"mlx5_0": {Driver: "mlx5_core", Ports: map[string]RDMAPort{"1": {StateCode: 4, RateGbps: 400}}}}
	s.PCI.Devices = map[string]PCIDevice{"0000:1b:00.0": {Kind: "bridge", ACS: &ACSControl{SourceValidation: true}}}
	s.Limits.Effective = map[string]map[string]LimitValue{"*": {"memlock": {Soft: "unlimited"}}}
	s.Pods = []Pod{{"metadata": map[string]any{"name": "p"}}}
	s.Errors = append(s.Errors, CollectionError{Collector: "limits", Path: "/etc/security/limits.conf", Reason: "x"})
	for _, normalize := range []bool{false, true} {
		c := *s
		if normalize {
			c.Normalize()
		}
		var buf bytes.Buffer
		if err := Encode(&buf, &c); err != nil {
			t.Fatal(err)
		}
		doc := genericDoc(t, buf.String())
		if errs := Validate(doc); len(errs) > 0 {
			t.Errorf("normalize=%v: Validate = %+v, want none", normalize, errs)
		}
	}
}

func TestCheckFactPath(t *testing.T) {
	ok := []string{
		"pods", "pods.0.spec", "labels", "errors", "source.kind", "host",
		"boot.running.params.hugetlb_cma", "boot.configured.params", "boot.configured.grub.files",
		"sysctl.running.vm.max_map_count", "sysctl.running.net.ipv4.conf.all.rp_filter",
		"limits.effective.*.memlock.soft", "limits.effective", "rdma.devices.*.ports.*.state",
		"pci.devices.0000:1b:00.0.acs.source_validation", "nvidia.gpus.*.persistence_mode",
		"nvidia.gpus.3.bus_id", "memory.cma_total_kb", "*.present",
	}
	for _, p := range ok {
		if err := CheckFactPath(p); err != nil {
			t.Errorf("CheckFactPath(%q) = %v, want nil", p, err)
		}
	}
	bad := map[string]string{
		"bot.running":              `no snapshot section "bot"`,
		"boot.runing.params":       "names nothing",
		"kernel.release.major":     "names nothing",
		"nvidia.gpus.first.bus_id": "names nothing",
		"memory..present":          "empty element",
		"":                         "empty fact path",
	}
	for p, want := range bad {
		if err := CheckFactPath(p); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckFactPath(%q) = %v, want error containing %q", p, err, want)
		}
	}
}

func TestSectionOmitted(t *testing.T) {
	for s, want := range map[string]bool{"pods": true, "labels": true, "boot": false, "limits": false, "nope": false} {
		if got := SectionOmitted(s); got != want {
			t.Errorf("SectionOmitted(%q) = %v, want %v", s, got, want)
		}
	}
}
