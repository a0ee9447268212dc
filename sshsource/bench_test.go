package sshsource

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkSSHFleet collects a fleet of inventory hosts from one real
// sshd on loopback, 50 in flight, each a full snapshot of the gpu-node
// fixture; hosts/s is the figure to compare with bench/ssh-vs-ansible.sh's
// one bare exec per host.
func BenchmarkSSHFleet(b *testing.B) {
	s := startSSHD(b)
	d := NewDialer(s.options())
	defer d.Close()
	const fleet, parallel = 200, 50
	hosts := make([]Host, fleet)
	for i := range hosts {
		hosts[i] = s.host(fmt.Sprintf("h%03d", i), fixture(b, "gpu-node"))
	}
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		for _, r := range d.CollectAll(context.Background(), hosts, parallel, time.Minute, nil) {
			if r.Err != nil {
				b.Fatalf("%s: %v", r.Host.Name, r.Err)
			}
		}
	}
	b.ReportMetric(float64(b.N*fleet)/time.Since(start).Seconds(), "hosts/s")
}
