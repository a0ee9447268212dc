package sshsource

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"

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
	// the first), commands the stream did not run included; NotFetched
	// counts those refused past Options.MaxFetches, each a collection
	// error in the snapshot.
	Misses, NotFetched int64
	// Sessions is how many commands the host ran: the stream, then each
	// miss.
	Sessions int64
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
	var cmds [][]string
	if root == "/" && !d.opts.NoExec {
		cmds = collectors.Commands()
	}
	t := newTree(ctx, sess, root, capBytes)
	t.cmds = cmds
	if d.opts.MaxFetches != 0 {
		t.maxFetches = int64(max(d.opts.MaxFetches, 0))
	}
	stderr, exit, err := sess.load(ctx, wrap(snapshotScript(root, capBytes, cmds...), h.Become), t)
	if err != nil && !errors.Is(err, errStream) {
		r := fail(classify(err))
		r.Sessions = 1
		return r
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
		r := fail(&HostError{Class: class, Err: errors.New(msg)})
		r.Sessions = 1
		return r
	}
	target := collectors.Target{Origin: origin, Files: collectors.Chroot(t)}
	if cmds != nil {
		target.Exec = ranRunner(t.ran, t, sess.runner)
	}
	snap, err := collectors.Collect(ctx, target, collectors.Options{Hostname: h.Name, Version: d.opts.Version})
	res := Result{Host: h, Snapshot: snap, Misses: t.misses.Load(), NotFetched: t.refused.Load()}
	res.Sessions = 1 + res.Misses
	if err != nil {
		r := fail(classify(err))
		r.Misses, r.NotFetched, r.Sessions = res.Misses, res.NotFetched, res.Sessions
		return r
	}
	var partial []string
	if n := t.fetchErrs.Load(); n > 0 {
		partial = append(partial, fmt.Sprintf("%d reads failed after the stream (the connection dropped?)", n))
	}
	if res.NotFetched > 0 {
		partial = append(partial, fmt.Sprintf("%d names outside the stream not collected (at most %d fetches per host)", res.NotFetched, t.maxFetches))
	}
	if len(partial) > 0 {
		res.Err = &HostError{Class: ClassPartial, Err: fmt.Errorf("%s; see the snapshot's errors", strings.Join(partial, ", "))}
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

// ranRunner answers a command from the stream's trailer, as session.runner
// would have; one the stream did not run is a fetch from t's budget.
func ranRunner(ran map[string]execResult, t *tree, run collectors.Runner) collectors.Runner {
	return func(ctx context.Context, name string, args ...string) ([]byte, error) {
		r, ok := ran[commandKey(name, args)]
		if !ok {
			if err := t.spend("exec " + name); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			return run(ctx, name, args...)
		}
		switch r.status {
		case 0:
			return r.out, nil
		case 127:
			return nil, &exec.Error{Name: name, Err: exec.ErrNotFound}
		case 124:
			return nil, fmt.Errorf("%s: timed out after %s", name, execTimeout)
		}
		if msg := firstLine(r.out); msg != "" {
			return nil, fmt.Errorf("%s: exit status %d: %s", name, r.status, msg)
		}
		return nil, fmt.Errorf("%s: exit status %d", name, r.status)
	}
}
