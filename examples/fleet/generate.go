//go:build ignore

// generate writes the example fleet's snapshots: eight GPU training nodes and
// four web servers collected from the fixture roots, with the drift a real
// fleet shows. Run from the repository root:
//
//	go run examples/fleet/generate.go
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fleetaudit/fleetaudit/collectors"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

func main() {
	out := "examples/fleet/snapshots"
	if err := os.MkdirAll(out, 0o755); err != nil {
		log.Fatal(err)
	}
	at := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	for i := 1; i <= 8; i++ {
		host := fmt.Sprintf("gpu-a-%03d", i)
		s := collect("testdata/hosts/gpu-node", host, at)
		switch host {
		case "gpu-a-003":
			// A node imaged later: a newer libnccl2 from the package repo.
			for j, l := range s.Libraries.NCCL {
				if l.Kind == "system" {
					s.Libraries.NCCL[j].Version = "2.21.5"
					s.Libraries.NCCL[j].Path = "/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5"
					s.Libraries.NCCL[j].Source = snapshot.FileAt(s.Libraries.NCCL[j].Path, 0)
				}
			}
			s.Sources["libraries.nccl"] = snapshot.ParseProvenance(strings.ReplaceAll(s.Sources["libraries.nccl"].String(), "2.18.3", "2.21.5"))
		case "gpu-a-005":
			// Driver hot-fixed by hand on one node.
			s.NVIDIA.DriverVersion, s.NVIDIA.ModuleVersion = "535.129.03", "535.129.03"
			s.NVIDIA.NVMLVersions = []string{"535.129.03"}
		case "gpu-a-006":
			// A hardening role enabled the image's drop-policy nftables.conf
			// on one node: ssh from the bastions only, NCCL's peers dropped.
			s.Firewall.Nftables.Enabled = true
			s.Sources["firewall.nftables.enabled"] = snapshot.FileAt("/etc/systemd/system/sysinit.target.wants/nftables.service", 0)
		case "gpu-a-007":
			// The logind drop-in never reached this node: Ubuntu's default applies.
			s.Logind.RemoveIPC, s.Logind.RemoveIPCDefault = "yes", true
			s.Logind.Files = []string{"/etc/systemd/logind.conf"}
			s.Sources["logind.remove_ipc"] = snapshot.Defaulted("Ubuntu 22.04.4 LTS (upstream systemd default RemoveIPC=yes)")
		case "gpu-a-008":
			// Kernel upgraded, not yet rebooted into on the rest of the rack.
			s.Kernel.Release = "5.15.0-107-generic"
		}
		write(out, s)
	}
	for i := 1; i <= 4; i++ {
		write(out, collect("testdata/hosts/web-node", fmt.Sprintf("web-%02d", i), at))
	}
}

func collect(root, host string, at time.Time) *snapshot.Snapshot {
	target := collectors.Target{Origin: snapshot.Origin{Kind: "local", Root: "/"}, Files: collectors.Dir(root)}
	s, err := collectors.Collect(context.Background(), target, collectors.Options{
		Hostname: host, Version: "example",
		Now: func() time.Time { return at },
	})
	if err != nil {
		log.Fatal(err)
	}
	return s
}

func write(dir string, s *snapshot.Snapshot) {
	name, err := snapshot.FileName(s.Host)
	if err != nil {
		log.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	if err := snapshot.Encode(f, s); err != nil {
		log.Fatal(err)
	}
}
