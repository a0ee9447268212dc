// Command gen writes N host snapshots for benchmarks: each fixture root under
// testdata/hosts is collected once, then copied with new host names and
// deterministic variation in the facts fleet-wide rules compare (NCCL,
// driver and kernel versions, boot params, memlock), so skew rules have work.
//
//	go run ./bench/gen -n 10000 -o /tmp/snaps
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/fleetaudit/fleetaudit/collectors"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

func main() {
	n := flag.Int("n", 1000, "snapshots to write")
	out := flag.String("o", "", "output directory (created)")
	roots := flag.String("roots", "testdata/hosts", "directory of fixture roots")
	seed := flag.Uint64("seed", 1, "variation seed")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "gen: -o DIR is required")
		os.Exit(2)
	}
	if err := run(*n, *out, *roots, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

// template is one collected root as generic JSON, and the host name prefix
// that puts its copies in a fleet (gpu-* training, web-* serving).
type template struct {
	doc    map[string]any
	prefix string
}

func run(n int, out, roots string, seed uint64) error {
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
	for i := range n {
		t := templates[mix[i%len(mix)]]
		doc := deepCopy(t.doc).(map[string]any)
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
		data, err := json.Marshal(doc)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, host+".json"), data, 0o644); err != nil {
			return err
		}
	}
	return nil
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
