package store

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/policies/fleetrun"
)

// benchHosts is the fleet size of BenchmarkRecord.
const benchHosts = 10000

// benchFleet is a run of n hosts: a snapshot document each (about 4 KB
// of JSON: kernel, 60 sysctls, boot parameters, 40 packages, distinct
// per host), two findings each, as the engine hands them to a Recorder.
func benchFleet(n int) ([]map[string]any, *audit.Result) {
	docs := make([]map[string]any, n)
	res := &audit.Result{Schema: audit.Schema, Summary: audit.Summary{Hosts: n, Audited: n}}
	for i := range n {
		host := fmt.Sprintf("gpu-%05d", i)
		sysctl := map[string]any{}
		for j := range 60 {
			sysctl[fmt.Sprintf("net.core.param_%02d", j)] = fmt.Sprint(j * 1024)
		}
		sysctl["kernel.numa_balancing"] = fmt.Sprint(i % 2)
		pkgs := map[string]any{}
		for j := range 40 {
			pkgs[fmt.Sprintf("package-%02d", j)] = map[string]any{"version": fmt.Sprintf("1.%d.%d-1", j, i%7), "arch": "amd64"}
		}
		docs[i] = map[string]any{
			"schema": "fleetaudit.snapshot/v1", "host": host, "collected_at": "2026-12-07T02:00:00Z",
			"kernel":   map[string]any{"release": "6.8.0-45-generic", "cmdline": fmt.Sprintf("BOOT_IMAGE=/vmlinuz root=UUID=%08x ro quiet iommu=pt hugepages=%d", i, 1024+i%3)},
			"sysctl":   map[string]any{"running": sysctl},
			"packages": pkgs,
		}
		res.Hosts = append(res.Hosts, fleetrun.HostRun{File: host + ".json", Host: host, Fleet: "gpu-training"})
		for _, rule := range []string{"numa-balancing-enabled", "hugetlb-cma-on-gpu"} {
			res.Findings = append(res.Findings, policies.Finding{Rule: rule, Severity: "high", Host: host, Fleet: "gpu-training",
				Message: "kernel.numa_balancing is 1", Evidence: []policies.Evidence{{Fact: "sysctl.running.kernel.numa_balancing", Value: "1", Source: "/proc/sys/kernel/numa_balancing"}}})
		}
	}
	return docs, res
}

// recordFleet records docs and res as audit --record does: snapshots
// stored by 8 workers as the engine loads hosts, then the run finished.
func recordFleet(b *testing.B, s Store, docs []map[string]any, res *audit.Result) (finish time.Duration) {
	ctx := context.Background()
	rec, err := Begin(ctx, s, RunMeta{Version: "bench", Writer: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range next {
				host := docs[i]["host"].(string)
				rec.Loaded(fleetrun.HostInput{Origin: host + ".json", Name: host}, docs[i], nil)
			}
		})
	}
	for i := range docs {
		next <- i
	}
	close(next)
	wg.Wait()
	start := time.Now()
	if err := rec.Finish(ctx, res, nil); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

// BenchmarkRecord measures write throughput, hosts recorded per second
// (and the time of the transaction that finishes the run), of a
// 10,000-host run on each backend: "new" into an empty store (every
// snapshot a new blob), "unchanged" into one that has the same fleet's
// previous run (every snapshot stored already).
func BenchmarkRecord(b *testing.B) {
	docs, res := benchFleet(benchHosts)
	for _, be := range backends {
		for _, kind := range []string{"new", "unchanged"} {
			b.Run(be.name+"/"+kind, func(b *testing.B) {
				var took, finish time.Duration
				for range b.N {
					b.StopTimer()
					s, err := Open(context.Background(), be.new(b), Options{Create: true, Version: "bench"})
					if err != nil {
						b.Fatal(err)
					}
					if kind == "unchanged" {
						recordFleet(b, s, docs, res)
					}
					b.StartTimer()
					start := time.Now()
					finish += recordFleet(b, s, docs, res)
					took += time.Since(start)
					b.StopTimer()
					s.Close()
					b.StartTimer()
				}
				b.ReportMetric(float64(benchHosts*b.N)/took.Seconds(), "hosts/s")
				// FinishRun's one transaction (hosts and findings), apart
				// from storing the snapshots, which is mostly CPU.
				b.ReportMetric(finish.Seconds()*1000/float64(b.N), "finish-ms/op")
			})
		}
	}
}
