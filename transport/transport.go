// Package transport reads an inventory host's files into a snapshot by the
// host's connection type (Ansible's ansible_connection). A transport is one
// package implementing Transport (sshsource, transport/local) and one line
// in registry; audit and collect --inventory read every host through Set.
package transport

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fleetaudit/fleetaudit/inventory"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

// Transport reads hosts of one kind of connection.
type Transport interface {
	// Collect reads one host. It never fails: a host that cannot be read
	// gets a snapshot whose source error says why.
	Collect(ctx context.Context, h inventory.Host) *snapshot.Snapshot
}

// The transports fleetaudit has.
const (
	// SSH reads a host over SSH (sshsource).
	SSH = "ssh"
	// Local reads a tree on this machine: a host's root, or this machine
	// itself for ansible_connection local (transport/local).
	Local = "local"
)

// registry maps each connection type fleetaudit reads to its transport;
// any other connection type is an error for its host, never a guess.
var registry = map[string]string{
	"ssh":      SSH,
	"paramiko": SSH,
	"smart":    SSH,
	"local":    Local,
}

// Connections lists the connection types a transport reads.
func Connections() []string {
	out := make([]string, 0, len(registry))
	for c := range registry {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// For names the transport that reads h: Local for a host with a root (a
// tree on this machine, read instead of the host); else its connection's,
// SSH when it names none (Ansible's default), but only with an address to
// connect to. "" is a host with no way to be read; an error names a
// connection type no transport reads.
func For(h inventory.Host) (string, error) {
	if h.Root != "" {
		return Local, nil
	}
	if h.Connection == "" {
		if h.Address == "" {
			return "", nil
		}
		return SSH, nil
	}
	name, ok := registry[h.Connection]
	if !ok {
		return "", fmt.Errorf("ansible_connection %s: fleetaudit reads no host over it (it reads %s)", h.Connection, strings.Join(Connections(), ", "))
	}
	if name == SSH && h.Address == "" {
		return "", nil
	}
	return name, nil
}

// Set is one run's transports by name, each set up by its caller (SSH
// needs a dialer built from flags).
type Set map[string]Transport

// Collect reads h through its transport. A host whose connection no
// transport reads, or whose transport the run did not set up, gets a
// snapshot whose source error says why.
func (s Set) Collect(ctx context.Context, h inventory.Host, version string) *snapshot.Snapshot {
	where := h.Address
	if where == "" {
		where = h.Name
	}
	name, err := For(h)
	if err != nil {
		return Failed(h.Name, "", version, where, err.Error())
	}
	t := s[name]
	if t == nil {
		if name == "" {
			return Failed(h.Name, "", version, "(no root or address)", "not collected: the host has no root, address or connection")
		}
		return Failed(h.Name, "", version, where, fmt.Sprintf("not collected: %s collection is not set up for this run", strings.ToUpper(name)))
	}
	return t.Collect(ctx, h)
}

// Failed is the snapshot of a host that could not be read: no facts, one
// source error at path saying why. A host with no name is named by root.
func Failed(host, root, version, path, reason string) *snapshot.Snapshot {
	s := snapshot.New(host)
	if s.Host == "" {
		s.Host = filepath.Base(root)
	}
	s.Source = snapshot.Origin{Kind: "local", Root: root, Collector: version}
	s.Errors = append(s.Errors, snapshot.CollectionError{Collector: snapshot.CollectorSource, Path: path, Reason: reason})
	s.Normalize()
	return s
}
