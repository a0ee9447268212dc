//go:build ignore

// generate writes snapshots of a small fleet that runs examples/config-repo
// at its committed state: each host is a fixture root (testdata/hosts) with
// the repo's layers for its fleet deployed, collected as of an hour ago.
// The GPU hosts differ as real ones do: gpu-a-[001-004] run driver
// 535.104.05 (no FOLL_LONGTERM pin), gpu-b-[001-002] driver 550.90.07 (with
// it), gpu-c-001 has no RDMA devices, gpu-l-001 keeps a local
// /etc/sysctl.d/99-local.conf. scripts/gate-demo.sh records them and gates
// the incident change against them. Run from the repository root:
//
//	go run examples/config-repo/fleet/generate.go OUTDIR
package main

import (
	"context"
	"fmt"
	"io/fs"
	"log"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/fleetaudit/fleetaudit/collectors"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

type host struct {
	name, from, fleet, driver string
	noRDMA                    bool
	local                     map[string]string
}

func main() {
	if len(os.Args) != 2 {
		log.Fatal("usage: generate.go OUTDIR")
	}
	out := os.Args[1]
	if err := os.MkdirAll(out, 0o755); err != nil {
		log.Fatal(err)
	}
	work, err := os.MkdirTemp("", "fleetaudit-example-fleet-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(work)
	hosts := []host{
		{name: "gpu-b-001", from: "gpu-node", fleet: "gpu-training", driver: "550.90.07"},
		{name: "gpu-b-002", from: "gpu-node", fleet: "gpu-training", driver: "550.90.07"},
		{name: "gpu-c-001", from: "gpu-node", fleet: "gpu-training", noRDMA: true},
		{name: "gpu-l-001", from: "gpu-node", fleet: "gpu-training",
			local: map[string]string{"etc/sysctl.d/99-local.conf": "# a search index runs here too\nvm.max_map_count = 2097152\n"}},
		{name: "web-01", from: "web-node", fleet: "web-serving"},
		{name: "web-02", from: "web-node", fleet: "web-serving"},
	}
	for i := 1; i <= 4; i++ {
		hosts = append(hosts, host{name: fmt.Sprintf("gpu-a-%03d", i), from: "gpu-node", fleet: "gpu-training"})
	}
	at := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	for _, h := range hosts {
		root := filepath.Join(work, h.name)
		if err := os.CopyFS(root, os.DirFS(filepath.Join("testdata/hosts", h.from))); err != nil {
			log.Fatal(err)
		}
		// The fixtures are hosts after the incident: these are from before.
		os.Remove(filepath.Join(root, "etc/default/grub.d/60-hugetlb.cfg"))
		edit(root, "proc/cmdline", ` hugetlb_cma=\S+`, "")
		edit(root, "proc/meminfo", `(?m)^(Cma(Total|Free)):.*$`, "$1:              0 kB")
		deploy(root, h.fleet)
		if h.driver != "" {
			edit(root, "proc/driver/nvidia/version", `Kernel Module  [0-9.]+`, "Kernel Module  "+h.driver)
		}
		if h.noRDMA {
			os.RemoveAll(filepath.Join(root, "sys/class/infiniband"))
			os.RemoveAll(filepath.Join(root, "dev/infiniband"))
		}
		for p, content := range h.local {
			write(filepath.Join(root, p), content)
		}
		target := collectors.Target{Origin: snapshot.Origin{Kind: "local", Root: "/"}, Files: collectors.Dir(root)}
		s, err := collectors.Collect(context.Background(), target, collectors.Options{
			Hostname: h.name, Version: "example", Now: func() time.Time { return at },
		})
		if err != nil {
			log.Fatal(err)
		}
		name, err := snapshot.FileName(s.Host)
		if err != nil {
			log.Fatal(err)
		}
		f, err := os.Create(filepath.Join(out, name))
		if err != nil {
			log.Fatal(err)
		}
		if err := snapshot.Encode(f, s); err != nil {
			log.Fatal(err)
		}
		if err := f.Close(); err != nil {
			log.Fatal(err)
		}
	}
}

// deploy writes the example repo's layers of fleet over root, as the
// rollout of the committed repo left them.
func deploy(root, fleet string) {
	layers := map[string][]string{"gpu-training": {"base", "gpu"}, "web-serving": {"base", "web"}}[fleet]
	for _, layer := range layers {
		dir := filepath.Join("examples/config-repo/layers", layer)
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			write(filepath.Join(root, rel), string(b))
			return nil
		})
		if err != nil {
			log.Fatal(err)
		}
	}
}

func edit(root, file, re, repl string) {
	p := filepath.Join(root, file)
	b, err := os.ReadFile(p)
	if err != nil {
		return
	}
	write(p, regexp.MustCompile(re).ReplaceAllString(string(b), repl))
}

func write(p, content string) {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(strings.Clone(content)), 0o644); err != nil {
		log.Fatal(err)
	}
}
