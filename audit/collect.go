package audit

import (
	"context"
	"sync"

	"github.com/fleetaudit/fleetaudit/inventory"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

// Collect reads the hosts of opts.Inventory as a run without --snapshots
// does, through the same precedence and transports (Options.Transports),
// at most opts.Parallel at once: each host with a root, an address or a
// connection. done sees each host's snapshot, one call at a time; a host
// that cannot be read gets one whose source error says why, and so does
// each host still to read once ctx ends (its transport says it stopped).
func Collect(ctx context.Context, opts Options, done func(inventory.Host, *snapshot.Snapshot)) error {
	opts.Roots, opts.Snapshots = nil, nil
	targets, err := collectTargets(opts, &fileList{})
	if err != nil {
		return err
	}
	co := inputsOf(opts)
	sem := make(chan struct{}, max(opts.Parallel, 1))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, t := range targets {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			snap := collectOne(ctx, t, co)
			mu.Lock()
			defer mu.Unlock()
			done(t.host, snap)
		}()
	}
	wg.Wait()
	return nil
}

// CollectHosts are the inventory hosts Collect reads, in order.
func CollectHosts(inv *inventory.Inventory) []inventory.Host {
	targets, _ := collectTargets(Options{Inventory: inv}, &fileList{})
	hosts := make([]inventory.Host, len(targets))
	for i, t := range targets {
		hosts[i] = t.host
	}
	return hosts
}
