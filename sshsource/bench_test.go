package sshsource

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/fleetaudit/fleetaudit/internal/sshdtest"
)

// BenchmarkSSHFleet collects a fleet of inventory hosts from one real
// sshd on loopback, 50 in flight, each a full snapshot of the gpu-node
// fixture (fixture) or of this machine's live "/" (live, with its
// commands); hosts/s is the figure to compare with bench/ssh-vs-ansible.sh's
// one bare exec per host, execs/host what sshd ran per host (1 unless a
// name had to be fetched after the stream), and the median and slowest
// host say how even the pool is.
func BenchmarkSSHFleet(b *testing.B) {
	s := &testSSHD{Server: sshdtest.Start(b), timeout: sshdtest.Timeout(b)}
	d := NewDialer(s.options())
	defer d.Close()
	for _, bc := range []struct{ name, root string }{{"fixture", fixture(b, "gpu-node")}, {"live", "/"}} {
		b.Run(bc.name, func(b *testing.B) { benchFleet(b, s, d, bc.root) })
	}
}

func benchFleet(b *testing.B, s *testSSHD, d *Dialer, root string) {
	const fleet, parallel = 200, 50
	hosts := make([]Host, fleet)
	for i := range hosts {
		hosts[i] = s.host(fmt.Sprintf("h%03d", i), root)
	}
	var took []time.Duration
	var mu sync.Mutex
	execs := s.Execs()
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
	if s.CountsExecs {
		b.ReportMetric(float64(s.Execs()-execs)/float64(b.N*fleet), "execs/host")
	}
	slices.Sort(took)
	b.ReportMetric(took[len(took)/2].Seconds(), "median-host-s")
	b.ReportMetric(took[len(took)-1].Seconds(), "slowest-host-s")
}
