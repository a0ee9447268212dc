package configrepo

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/fleetaudit/fleetaudit/fleets"
	"github.com/fleetaudit/fleetaudit/internal/gittest"
)

// benchRepo writes a config repo of fleets fleets, each stacking five shared
// layers and one of its own, every layer holding files files spread over the
// directories collectors read (sysctl.d, limits.d, modprobe.d, grub.d,
// logind.conf.d, modules-load.d) and some they do not.
func benchRepo(b *testing.B, fleets, files int) *gitRepo {
	b.Helper()
	r := &gitRepo{gittest.New(b)}
	shared := []string{"base", "os", "security", "net", "monitoring"}
	var m strings.Builder
	m.WriteString("fleets:\n")
	for i := range fleets {
		profile := "gpu-training"
		if i%2 == 1 {
			profile = "web-serving"
		}
		fmt.Fprintf(&m, "  fleet-%02d: {profile: %s, layers: [%s, own-%02d]}\n", i, profile, strings.Join(shared, ", "), i)
	}
	r.Write(ManifestFile, m.String())
	layers := append([]string{}, shared...)
	for i := range fleets {
		layers = append(layers, fmt.Sprintf("own-%02d", i))
	}
	r.Write("layers/base/etc/default/grub", "GRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\nGRUB_CMDLINE_LINUX=\"console=ttyS0\"\n")
	for li, layer := range layers {
		for f := range files {
			var path, body string
			switch f % 8 {
			case 0:
				path, body = fmt.Sprintf("etc/sysctl.d/%02d-%s-%d.conf", f%100, layer, f), fmt.Sprintf("net.core.rmem_max = %d\nvm.max_map_count = %d\n", 1<<20+f, 262144+li)
			case 1:
				path, body = fmt.Sprintf("etc/security/limits.d/%02d-%s-%d.conf", f%100, layer, f), "* soft nofile 1048576\n* hard nofile 1048576\n"
			case 2:
				path, body = fmt.Sprintf("etc/modprobe.d/%s-%d.conf", layer, f), "options nvidia NVreg_EnableGpuFirmware=1\n"
			case 3:
				path, body = fmt.Sprintf("etc/default/grub.d/%02d-%s-%d.cfg", f%100, layer, f), fmt.Sprintf("GRUB_CMDLINE_LINUX=\"$GRUB_CMDLINE_LINUX opt%d=%d\"\n", f, li)
			case 4:
				path, body = fmt.Sprintf("etc/systemd/logind.conf.d/%s-%d.conf", layer, f), "[Login]\nKillUserProcesses=no\n"
			case 5:
				path, body = fmt.Sprintf("etc/modules-load.d/%s-%d.conf", layer, f), "br_netfilter\n"
			default:
				path, body = fmt.Sprintf("etc/app/%s/%d.yaml", layer, f), strings.Repeat("key: value\n", 20)
			}
			r.Write("layers/"+layer+"/"+path, body)
		}
	}
	r.Commit("generated")
	// The change: one shared file.
	r.Write("layers/base/etc/default/grub.d/60-hugetlb.cfg", hugetlbCMA)
	r.Commit("hugetlb_cma in base")
	return r
}

// BenchmarkGate is the gate on 10 fleets × 6 layers × 50 files, base and
// head, as `fleetaudit gate` runs it.
func BenchmarkGate(b *testing.B) {
	r := benchRepo(b, 10, 50)
	set, err := fleets.Load(true)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		res, err := Run(context.Background(), Options{Repo: r.Dir, Base: "HEAD~1", Head: "HEAD", Fleets: set})
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Fleets) != 10 || len(res.Errors) != 0 || res.Summary.Introduced == 0 {
			b.Fatalf("fleets %d errors %v introduced %d", len(res.Fleets), res.Errors, res.Summary.Introduced)
		}
	}
}
