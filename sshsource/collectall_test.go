package sshsource

import (
	"context"
	"sync"
	"time"
)

// CollectAll collects hosts with at most parallel in flight, each bounded
// by timeout (none when 0), and calls done (from one goroutine at a time)
// as each finishes. Results are in the order of hosts. The tests'
// fleet runner: fleetaudit reads hosts through Transport (audit.Collect).
func (d *Dialer) CollectAll(ctx context.Context, hosts []Host, parallel int, timeout time.Duration, done func(Result, Progress)) []Result {
	if parallel <= 0 {
		parallel = 1
	}
	results := make([]Result, len(hosts))
	var mu sync.Mutex
	var p Progress
	p.Total = len(hosts)
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i, h := range hosts {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			r := d.CollectTimeout(ctx, h, timeout)
			mu.Lock()
			defer mu.Unlock()
			results[i] = r
			p.Done++
			if r.Err != nil && r.Err.Class != ClassPartial {
				p.Failed++
			}
			if done != nil {
				done(r, p)
			}
		}()
	}
	wg.Wait()
	return results
}
