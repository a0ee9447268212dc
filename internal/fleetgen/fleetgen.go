// Package fleetgen writes generated host snapshots for benchmarks and
// tests: each fixture root under testdata/hosts is collected once, then
// copied with new host names and deterministic variation in the facts
// fleet-wide rules compare (NCCL, driver and kernel versions, boot params,
// memlock), so skew rules have work. With Unique, every host also differs
// from every other in its identity (collection time) and, as real drift
// does, in the facts many rules read (memlock limits, several sysctls,
// boot parameters, kernel, driver and NCCL versions): the worst case for
// an auditor that shares work between equal hosts.
package fleetgen

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/fleetaudit/fleetaudit/collectors"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

// Options say what to generate.
type Options struct {
	// N snapshots are written into Dir (created), named <host>.json.
	N   int
	Dir string
	// Roots is the directory of fixture roots (testdata/hosts).
	Roots string
	// Seed makes the variation deterministic.
	Seed uint64
	// Unique makes every host's facts differ from every other's.
	Unique bool
}

// template is one collected root as generic JSON, and the host name prefix
// that puts its copies in a fleet (gpu-* training, web-* serving).
type template struct {
	doc    map[string]any
	prefix string
}

func Generate(opts Options) error {
	n, out, roots, seed := opts.N, opts.Dir, opts.Roots, opts.Seed
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	var templates []template
	for _, root := range []struct{ dir, prefix string }{
		{"gpu-node", "gpu"}, {"dropins", "gpu"}, {"rhel-node", "gpu"}, {"web-node", "web"},
	} {
		// A missing root would still collect, as a near-empty host full of
		// errors: a benchmark of the wrong thing.
		if _, err := os.Stat(filepath.Join(roots, root.dir, "etc")); err != nil {
			return fmt.Errorf("fixture root (run from the repository root or pass -roots): %w", err)
		}
		target := collectors.Target{Origin: snapshot.Origin{Kind: "local", Root: "/"}, Files: collectors.Dir(filepath.Join(roots, root.dir))}
		snap, err := collectors.Collect(context.Background(), target, collectors.Options{
			Version: "bench",
			Now:     func() time.Time { return time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC) },
		})
		if err != nil {
			return err
		}
		doc, err := snapshot.Generic(snap)
		if err != nil {
			return err
		}
		templates = append(templates, template{doc, root.prefix})
	}
	rng := rand.New(rand.NewPCG(seed, seed))
	ncclVersions := []string{"2.18.3", "2.20.5", "2.21.5"}
	drivers := []string{"535.104.05", "535.129.03", "550.90.07"}
	kernels := []string{"5.15.0-105-generic", "5.15.0-107-generic"}
	// A training site: most GPU hosts share one build (so fleet-wide rules
	// find a majority to compare with), a few run others, and one host in
	// ten is a web server. Out of every 20 hosts: 15 gpu-node, 2 dropins,
	// 1 rhel-node, 2 web-node.
	mix := []int{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 2, 3, 3}
	// The variation is drawn in host order from one generator (the files
	// are the same at any parallelism); encoding and writing, most of the
	// time at a million hosts, run on every CPU.
	type job struct {
		doc  map[string]any
		name string
	}
	jobs := make(chan job, 64)
	g, ctx := errgroup.WithContext(context.Background())
	for range runtime.GOMAXPROCS(0) {
		g.Go(func() error {
			for j := range jobs {
				data, err := json.Marshal(j.doc)
				if err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(out, j.name), data, 0o644); err != nil {
					return err
				}
			}
			return nil
		})
	}
	g.Go(func() error {
		defer close(jobs)
		for i := range n {
			t := templates[mix[i%len(mix)]]
			doc := mutableCopy(t.doc)
			host := fmt.Sprintf("%s-%05d", t.prefix, i)
			doc["host"] = host
			if t.prefix == "gpu" && rng.IntN(10) == 0 {
				set(doc, ncclVersions[rng.IntN(len(ncclVersions))], "libraries", "nccl", 0, "version")
				set(doc, drivers[rng.IntN(len(drivers))], "nvidia", "driver_version")
				set(doc, kernels[rng.IntN(len(kernels))], "kernel", "release")
			}
			if rng.IntN(20) == 0 {
				set(doc, "0", "boot", "running", "params", "hugetlb_cma")
			}
			if rng.IntN(25) == 0 {
				set(doc, "65536", "limits", "effective", "*", "memlock", "hard")
			}
			if opts.Unique {
				unique(doc, rng, i)
			}
			name, err := snapshot.FileName(host)
			if err != nil {
				return err
			}
			select {
			case jobs <- job{doc, name}:
			case <-ctx.Done():
				return nil
			}
		}
		return nil
	})
	return g.Wait()
}

// set writes v at a path of map keys and list indexes, when the path exists.
func set(doc any, v any, path ...any) {
	node := doc
	for i, p := range path {
		last := i == len(path)-1
		switch key := p.(type) {
		case string:
			m, ok := node.(map[string]any)
			if !ok {
				return
			}
			if last {
				m[key] = v
				return
			}
			if _, ok := m[key]; !ok {
				m[key] = map[string]any{}
			}
			node = m[key]
		case int:
			l, ok := node.([]any)
			if !ok || key >= len(l) {
				return
			}
			if last {
				l[key] = v
				return
			}
			node = l[key]
		}
	}
}

// varied are the sections the variation below changes; a host's document
// shares the others with its template (read only, by the encoders).
var varied = []string{"boot", "kernel", "libraries", "limits", "nvidia", "sysctl"}

// mutableCopy copies a template for one host: the varied sections deeply,
// the others (PCI devices and sources, most of the bytes) shared.
func mutableCopy(t map[string]any) map[string]any {
	doc := make(map[string]any, len(t))
	for k, v := range t {
		doc[k] = v
	}
	for _, k := range varied {
		if v, ok := t[k]; ok {
			doc[k] = deepCopy(v)
		}
	}
	return doc
}

func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[k] = deepCopy(x)
		}
		return m
	case []any:
		l := make([]any, len(v))
		for i, x := range v {
			l[i] = deepCopy(x)
		}
		return l
	}
	return v
}

// unique gives host i a collection time of its own and drifts every fact
// that many rules read, the way a real fleet drifts: each host has its own
// root file system (boot parameter root=UUID), its own memlock limit and
// configured sysctl (so no section rules read is equal between two hosts),
// and draws its running sysctls,
// hugetlb_cma, kernel, driver and NCCL versions from small sets of
// real-looking values, most often the template's own so every fleet keeps a
// majority for skew rules to compare with (skew rules cost distinct values
// × hosts, so a version unique to every host would make them quadratic,
// which no real fleet is).
func unique(doc map[string]any, rng *rand.Rand, i int) {
	base := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	doc["collected_at"] = base.Add(time.Duration(i) * time.Second).Format(time.RFC3339)
	// setIn sets a member of an object that exists: a change never adds a
	// section the host does not have.
	setIn := func(v any, path ...any) bool {
		if _, ok := lookup(doc, path[:len(path)-1]...).(map[string]any); !ok {
			return false
		}
		set(doc, v, path...)
		return true
	}
	// drift keeps the current value at path three times in five, else
	// draws one of vs.
	drift := func(vs []string, path ...any) string {
		cur, ok := lookup(doc, path...).(string)
		if ok && rng.IntN(5) < 3 {
			return cur
		}
		v := vs[rng.IntN(len(vs))]
		setIn(v, path...)
		return v
	}
	own := strconv.Itoa(65536 + 4*i)

	// Limits: a memlock hard limit of its own, the soft one drawn; the
	// limits.conf entries say the same.
	if setIn(own, "limits", "effective", "*", "memlock", "hard") {
		soft := drift([]string{"unlimited", "65536", own}, "limits", "effective", "*", "memlock", "soft")
		entries, _ := lookup(doc, "limits", "entries").([]any)
		for _, e := range entries {
			if m, ok := e.(map[string]any); ok && m["domain"] == "*" && m["item"] == "memlock" {
				switch m["type"] {
				case "hard":
					m["value"] = own
				case "soft":
					m["value"] = soft
				}
			}
		}
	}

	// Sysctls: one configured with a value of its own (host rules read
	// it, fleet-wide rules do not), several running ones drawn.
	configured := []string{"vm.max_map_count", "net.core.rmem_max", "net.core.wmem_max", "net.core.somaxconn", "fs.file-max", "kernel.pid_max"}
	name := configured[rng.IntN(len(configured))]
	setIn(own, "sysctl", "configured", name)
	for _, s := range []struct {
		name string
		vs   []string
	}{
		{"vm.max_map_count", []string{"262144", "1048576", "65530"}},
		{"net.core.somaxconn", []string{"4096", "65535"}},
		{"kernel.numa_balancing", []string{"0", "1"}},
		{"vm.swappiness", []string{"1", "10", "60"}},
		{"net.core.rmem_max", []string{"212992", "268435456"}},
		{"kernel.perf_event_paranoid", []string{"2", "4"}},
	} {
		drift(s.vs, "sysctl", "running", s.name)
	}

	// Kernel, driver and NCCL versions.
	kernel := drift([]string{"5.15.0-105-generic", "5.15.0-107-generic", "6.8.0-45-generic"}, "kernel", "release")
	if nv, _ := lookup(doc, "nvidia", "present").(bool); nv {
		driver := drift([]string{"535.104.05", "535.129.03", "550.90.07"}, "nvidia", "driver_version")
		// A driver upgraded without a reload, one host in ten.
		if rng.IntN(10) != 0 {
			setIn(driver, "nvidia", "module_version")
			setIn([]any{driver}, "nvidia", "nvml_versions")
		}
	}
	if l, _ := lookup(doc, "libraries", "nccl").([]any); len(l) > 0 {
		drift([]string{"2.18.3", "2.20.5", "2.21.5"}, "libraries", "nccl", 0, "version")
	}

	// Boot parameters of the running kernel: the host's own root file
	// system, the booted image, hugetlb_cma drawn.
	params, ok := lookup(doc, "boot", "running", "params").(map[string]any)
	if !ok {
		return
	}
	params["root"] = fmt.Sprintf("UUID=%08x-9b1f-4d7e-a0c4-%012x", rng.Uint32(), i)
	if img, ok := params["BOOT_IMAGE"].(string); ok {
		if j := strings.LastIndex(img, "vmlinuz-"); j >= 0 {
			params["BOOT_IMAGE"] = img[:j] + "vmlinuz-" + kernel
		}
	}
	if _, ok := params["hugetlb_cma"]; ok {
		drift([]string{"0", "2G", "6G"}, "boot", "running", "params", "hugetlb_cma")
	} else if rng.IntN(10) == 0 {
		params["hugetlb_cma"] = "2G"
	}
	cmdline, _ := lookup(doc, "boot", "running", "cmdline").(string)
	fields := strings.Fields(cmdline)
	seen := map[string]bool{}
	for j, f := range fields {
		k, _, _ := strings.Cut(f, "=")
		if v, ok := params[k].(string); ok && (k == "root" || k == "BOOT_IMAGE" || k == "hugetlb_cma") {
			fields[j] = k + "=" + v
			seen[k] = true
		}
	}
	for _, k := range []string{"root", "hugetlb_cma"} {
		if v, ok := params[k].(string); ok && !seen[k] {
			fields = append(fields, k+"="+v)
		}
	}
	set(doc, strings.Join(fields, " "), "boot", "running", "cmdline")
}

// lookup returns the value at a path of map keys and list indexes, or nil.
func lookup(doc any, path ...any) any {
	node := doc
	for _, p := range path {
		switch key := p.(type) {
		case string:
			m, ok := node.(map[string]any)
			if !ok {
				return nil
			}
			node = m[key]
		case int:
			l, ok := node.([]any)
			if !ok || key >= len(l) {
				return nil
			}
			node = l[key]
		}
	}
	return node
}
