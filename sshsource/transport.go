package sshsource

import (
	"context"
	"sync"
	"time"

	"github.com/fleetaudit/fleetaudit/inventory"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

// Transport reads inventory hosts over SSH (transport.Transport) for audit
// and collect --inventory alike.
type Transport struct {
	Dialer *Dialer
	// Timeout bounds each host's collection.
	Timeout time.Duration
	// Total is the number of hosts to collect, for Done's progress.
	Total int
	// Done, if set, sees each host as it finishes (one call at a time).
	Done func(Result, Progress)

	mu       sync.Mutex
	progress Progress
}

// HostOf is the sshsource host of an inventory entry.
func HostOf(h inventory.Host) Host {
	sh := Host{Name: h.Name, Address: h.Address, Port: h.Port, User: h.User, Jump: h.Jump, Become: h.Become, Root: h.RemoteRoot}
	if h.Identity != "" {
		sh.IdentityFiles = []string{h.Identity}
	}
	return sh
}

// Collect reads one host over SSH.
func (t *Transport) Collect(ctx context.Context, h inventory.Host) *snapshot.Snapshot {
	r := t.Dialer.CollectTimeout(ctx, HostOf(h), t.Timeout)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.progress.Total = t.Total
	t.progress.Done++
	if r.Err != nil && r.Err.Class != ClassPartial {
		t.progress.Failed++
	}
	if t.Done != nil {
		t.Done(r, t.progress)
	}
	return r.Snapshot
}
