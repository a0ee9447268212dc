package sshsource

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// BenchmarkSSHFleet collects a fleet of inventory hosts from one real
// sshd on loopback, 50 in flight, each a full snapshot of the gpu-node
// fixture; hosts/s is the figure to compare with bench/ssh-vs-ansible.sh's
// one bare exec per host, and the median and slowest host say how even
// the pool is.
func BenchmarkSSHFleet(b *testing.B) {
	s := startSSHD(b)
	d := NewDialer(s.options())
	defer d.Close()
	const fleet, parallel = 200, 50
	hosts := make([]Host, fleet)
	for i := range hosts {
		hosts[i] = s.host(fmt.Sprintf("h%03d", i), fixture(b, "gpu-node"))
	}
	var took []time.Duration
	var mu sync.Mutex
	start := time.Now()
	for b.Loop() {
		sem := make(chan struct{}, parallel)
		var wg sync.WaitGroup
		for _, h := range hosts {
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				began := time.Now()
				// Throughput is measured here; timeouts are the CLI's.
				r := d.Collect(context.Background(), h)
				if r.Err != nil {
					b.Errorf("%s: %v", h.Name, r.Err)
				}
				mu.Lock()
				took = append(took, time.Since(began))
				mu.Unlock()
			}()
		}
		wg.Wait()
	}
	b.ReportMetric(float64(b.N*fleet)/time.Since(start).Seconds(), "hosts/s")
	slices.Sort(took)
	b.ReportMetric(took[len(took)/2].Seconds(), "median-host-s")
	b.ReportMetric(took[len(took)-1].Seconds(), "slowest-host-s")
}
