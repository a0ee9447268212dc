package sshsource

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/fleetaudit/fleetaudit/collectors"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

// Result is one host's collection: a snapshot, and Err when the host could
// not be read (Snapshot then says why in its errors, and holds no fact) or
// was read only in part (Class partial).
type Result struct {
	Host     Host
	Snapshot *snapshot.Snapshot
	Err      *HostError
	// Misses counts names fetched after the stream (round trips beyond
	// the first).
	Misses int64
}

// Collect reads one host: one connection, one command streaming what the
// collectors read, the collectors over that stream, and nvidia-smi
// through the same connection when the root is "/". It never fails: a
// host that cannot be read gets a snapshot whose source error says why.
func (d *Dialer) Collect(ctx context.Context, h Host) Result {
	root := h.Root
	if root == "" {
		root = "/"
	}
	addr := h.Address
	if addr == "" {
		addr = h.Name
	}
	origin := snapshot.Origin{Kind: "ssh", Address: addr, Root: root, Collector: d.opts.Version}
	if h.Port != 0 {
		origin.Address = net.JoinHostPort(addr, strconv.Itoa(h.Port))
	}
	fail := func(he *HostError) Result {
		if ctx.Err() != nil {
			he = stopped(ctx)
		}
		s := snapshot.New(h.Name)
		s.Source = origin
		s.Errors = append(s.Errors, snapshot.CollectionError{Collector: snapshot.CollectorSource, Path: origin.Address, Reason: he.Error()})
		s.Normalize()
		return Result{Host: h, Snapshot: s, Err: he}
	}
	client, via, err := d.dial(ctx, h)
	if err != nil {
		return fail(classify(err))
	}
	// Whatever the host does, its time (or the run) ending ends it.
	stopClose := context.AfterFunc(ctx, func() { client.Close() })
	defer func() {
		stopClose()
		client.Close()
		for i := len(via) - 1; i >= 0; i-- {
			via[i].Close()
		}
	}()
	sess := &session{client: client, become: h.Become}
	capBytes := int64(collectors.DefaultMaxFileSize + 1)
	t := newTree(ctx, sess, root, capBytes)
	stderr, exit, err := sess.load(ctx, wrap(snapshotScript(root, capBytes), h.Become), t)
	if err != nil && !errors.Is(err, errStream) {
		return fail(classify(err))
	}
	if err != nil {
		// No stream: the command itself failed (sudo, no such root, no
		// GNU find).
		msg := firstLine(stderr)
		if msg == "" {
			msg = err.Error()
		}
		class := ClassRemoteFailed
		switch {
		case exit != nil && exit.status == 3:
			msg = "root " + root + ": " + msg
		case h.Become:
			// sudo missing, or asking for a password sudo -n may not give.
			class, msg = ClassBecome, "sudo -n: "+msg
		}
		return fail(&HostError{Class: class, Err: errors.New(msg)})
	}
	target := collectors.Target{Origin: origin, Files: collectors.Chroot(t)}
	if root == "/" && !d.opts.NoExec {
		target.Exec = sess.runner
	}
	snap, err := collectors.Collect(ctx, target, collectors.Options{Hostname: h.Name, Version: d.opts.Version})
	res := Result{Host: h, Snapshot: snap, Misses: t.misses.Load()}
	if err != nil {
		return fail(classify(err))
	}
	if n := t.fetchErrs.Load(); n > 0 {
		res.Err = &HostError{Class: ClassPartial, Err: fmt.Errorf("%d reads failed after the stream (the connection dropped?); see the snapshot's errors", n)}
	}
	return res
}

// stopped says why a host's context ended: its timeout, or the run's
// interrupt (with the signal, where one was the cause).
func stopped(ctx context.Context) *HostError {
	cause := context.Cause(ctx)
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &HostError{Class: ClassTimeout, Err: cause}
	}
	return &HostError{Class: ClassInterrupted, Err: fmt.Errorf("interrupted: %w", cause)}
}
