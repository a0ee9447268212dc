package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/fleetaudit/fleetaudit/internal/safeio"
	"github.com/fleetaudit/fleetaudit/inventory"
	"github.com/fleetaudit/fleetaudit/snapshot"
	"github.com/fleetaudit/fleetaudit/sshsource"
)

// SSHOptions collect inventory hosts with an address during the run.
type SSHOptions struct {
	Dialer *sshsource.Dialer
	// Parallel bounds the hosts in flight; Timeout each host's collection.
	Parallel int
	Timeout  time.Duration
	// Total is the number of hosts to collect, for Done's progress.
	Total int
	// Done, if set, sees each host as it finishes (one call at a time).
	Done func(sshsource.Result, sshsource.Progress)

	mu       sync.Mutex
	progress sshsource.Progress
}

// SSHHost is the sshsource host of an inventory entry.
func SSHHost(h inventory.Host) sshsource.Host {
	sh := sshsource.Host{Name: h.Name, Address: h.Address, Port: h.Port, User: h.User, Jump: h.Jump, Become: h.Become, Root: h.RemoteRoot}
	if h.Identity != "" {
		sh.IdentityFiles = []string{h.Identity}
	}
	return sh
}

// CollectRoot collects an inventory host whose files are the local tree
// root, as audit does: a root that cannot be read gives a snapshot saying why.
func CollectRoot(ctx context.Context, host, root string, noExec bool, version string) *snapshot.Snapshot {
	return collectOne(ctx, target{host: host, root: root, noExec: noExec}, version)
}

func (o *SSHOptions) collect(ctx context.Context, h inventory.Host) *snapshot.Snapshot {
	r := o.Dialer.CollectTimeout(ctx, SSHHost(h), o.Timeout)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.progress.Total = o.Total
	o.progress.Done++
	if r.Err != nil && r.Err.Class != sshsource.ClassPartial {
		o.progress.Failed++
	}
	if o.Done != nil {
		o.Done(r, o.progress)
	}
	return r.Snapshot
}

// snapshotHosts reads the host name of each snapshot file, stopping at its
// "host" field; a file whose name cannot be read is left to the engine,
// which reports it.
func snapshotHosts(files *fileList) (map[string]bool, error) {
	hosts := map[string]bool{}
	for f := range files.All() {
		name, err := peekHost(f)
		if err != nil {
			continue
		}
		hosts[name] = true
	}
	return hosts, nil
}

func peekHost(file string) (string, error) {
	f, err := safeio.Open(file) // never blocks on a FIFO
	if err != nil {
		return "", err
	}
	defer f.Close()
	dec := json.NewDecoder(io.LimitReader(f, 64<<20))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return "", fmt.Errorf("%s: not a JSON object", file)
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return "", err
		}
		if key == "host" {
			var name string
			if err := dec.Decode(&name); err != nil {
				return "", err
			}
			return name, nil
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return "", err
		}
	}
	return "", fmt.Errorf("%s: no host", file)
}
