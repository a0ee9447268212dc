// Package local is the transport of trees on this machine: an inventory
// host's root (fleetaudit_root, root:), a --root, or this machine itself
// for ansible_connection local (its "/", or fleetaudit_remote_root).
package local

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/fleetaudit/fleetaudit/collectors"
	"github.com/fleetaudit/fleetaudit/inventory"
	"github.com/fleetaudit/fleetaudit/snapshot"
	"github.com/fleetaudit/fleetaudit/transport"
)

// Transport collects a host from a local tree as collect does
// (collectors.Local): commands run only when the tree is this machine's
// own "/" and NoExec is off.
type Transport struct {
	NoExec  bool
	Version string
}

// Root is the tree a host is read from: its root, else (this machine) its
// remote root, else "/".
func Root(h inventory.Host) string {
	switch {
	case h.Root != "":
		return h.Root
	case h.RemoteRoot != "":
		return h.RemoteRoot
	}
	return "/"
}

// Collect reads h's tree; one that cannot be read gives a snapshot saying why.
func (t Transport) Collect(ctx context.Context, h inventory.Host) *snapshot.Snapshot {
	root := Root(h)
	fail := func(reason string) *snapshot.Snapshot {
		return transport.Failed(h.Name, root, t.Version, root, reason)
	}
	info, err := os.Stat(root)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the entry names the path already
		}
		return fail("root: " + err.Error())
	}
	if !info.IsDir() {
		return fail("root is not a directory")
	}
	target, err := collectors.Local(root, collectors.LocalOptions{NoExec: t.NoExec})
	if err != nil {
		return fail(err.Error())
	}
	snap, err := collectors.Collect(ctx, target, collectors.Options{Hostname: h.Name, Version: t.Version})
	if err != nil {
		return fail(err.Error())
	}
	if snap.Host == "" {
		snap.Host = filepath.Base(root)
	}
	return snap
}
