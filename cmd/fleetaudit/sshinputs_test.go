package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fleetaudit/fleetaudit/internal/sshdtest"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

const usageHint = "Run 'fleetaudit --help' for usage."

// runBounded runs the CLI with env, failing the test when it has not
// returned after limit: a blocked open(2) ignores every context.
func runBounded(t *testing.T, env map[string]string, limit time.Duration, args ...string) result {
	t.Helper()
	ch := make(chan result, 1)
	go func() {
		var out, errb bytes.Buffer
		code := run(context.Background(), args, streams{in: strings.NewReader(""), out: &out, err: &errb}, func(k string) string { return env[k] })
		ch <- result{code, out.String(), errb.String()}
	}()
	select {
	case r := <-ch:
		return r
	case <-time.After(limit):
		t.Fatalf("fleetaudit %s still running after %s", strings.Join(args, " "), limit)
		return result{}
	}
}

// closedPort is a loopback port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func writeInventory(t *testing.T, dir, body string) string {
	t.Helper()
	inv := filepath.Join(dir, "inventory.yaml")
	if err := os.WriteFile(inv, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return inv
}

// The files the SSH flags name (--known-hosts, --ssh-config, --identity)
// are read through safeio: a FIFO or a device fails the run at once with
// an error naming the file and what it is, not "unreachable" per host and
// not a usage hint. An inventory host's identity: FIFO fails that host,
// named in its auth error. Before, each FIFO blocked the run in open(2)
// (SIGTERM did nothing) and --known-hosts /dev/zero made every host
// "unreachable: known_hosts: bufio.Scanner: token too long".
func TestSSHInputFilesNeverBlock(t *testing.T) {
	s := sshdtest.Start(t)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": s.Dir}
	hostTimeout := min(sshdtest.Timeout(t), time.Minute)
	limit := hostTimeout + 30*time.Second
	inv := writeInventory(t, dir, fmt.Sprintf("hosts:\n  web-01: {address: 127.0.0.1, port: %d, user: %s}\n", s.Port, s.User))
	fifoInv := writeInventory(t, t.TempDir(), fmt.Sprintf("hosts:\n  web-01: {address: 127.0.0.1, port: %d, user: %s, identity: %s}\n", s.Port, s.User, fifo))
	for _, tc := range []struct {
		name  string
		inv   string
		flags []string
		want  []string
	}{
		{"known-hosts FIFO", inv, []string{"--known-hosts", fifo, "--identity", s.ClientKey, "--ssh-config", "none"}, []string{"known_hosts " + fifo + ": not a regular file (FIFO)"}},
		{"known-hosts device", inv, []string{"--known-hosts", "/dev/zero", "--identity", s.ClientKey, "--ssh-config", "none"}, []string{"known_hosts /dev/zero: not a regular file (character device)"}},
		{"ssh-config FIFO", inv, []string{"--known-hosts", s.KnownHosts, "--identity", s.ClientKey, "--ssh-config", fifo}, []string{"ssh_config " + fifo + ": not a regular file (FIFO)"}},
		{"identity FIFO", inv, []string{"--known-hosts", s.KnownHosts, "--identity", fifo, "--ssh-config", "none"}, []string{"identity file " + fifo + ": not a regular file (FIFO)"}},
		{"identity device", inv, []string{"--known-hosts", s.KnownHosts, "--identity", "/dev/zero", "--ssh-config", "none"}, []string{"identity file /dev/zero: not a regular file (character device)"}},
		{"inventory identity FIFO", fifoInv, []string{"--known-hosts", s.KnownHosts, "--ssh-config", "none"}, []string{"auth failed", "identity file " + fifo + ": not a regular file (FIFO)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			args := append([]string{"collect", "--inventory", tc.inv, "--out", out, "--host-timeout", hostTimeout.String(), "--connect-timeout", hostTimeout.String()}, tc.flags...)
			r := runBounded(t, env, limit, args...)
			if r.code != exitError {
				t.Errorf("exit %d, want %d", r.code, exitError)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
				}
			}
			if strings.Contains(r.stderr, "unreachable") || strings.Contains(r.stderr, usageHint) {
				t.Errorf("stderr says unreachable or gives the usage hint:\n%s", r.stderr)
			}
		})
	}
}

// An inventory name is never a path: a host named to climb out of --out is
// refused when the inventory is read, before anything is written. Before,
// its snapshot was written to --out/../../escaped.json.
func TestCollectInventoryNameCannotEscapeOut(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "a", "b", "out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	escaped := filepath.Join(dir, "a", "escaped.json")
	inv := writeInventory(t, dir, fmt.Sprintf("hosts:\n  ../../escaped: {address: 127.0.0.1, port: %d}\n", closedPort(t)))
	r := runBounded(t, map[string]string{"HOME": dir}, time.Minute, "collect", "--inventory", inv, "--out", out,
		"--known-hosts", filepath.Join(dir, "known_hosts"), "--ssh-config", "none", "--retries", "0")
	if _, err := os.Stat(escaped); err == nil {
		t.Errorf("wrote %s, outside --out %s", escaped, out)
	}
	if r.code != exitError || !strings.Contains(r.stderr, `host name "../../escaped": not a safe file name`) {
		t.Errorf("exit %d, want 2 refusing the name; stderr:\n%s", r.code, r.stderr)
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Errorf("--out holds %d files, want none", len(entries))
	}
}

// collect --inventory collects hosts with a root: from their local trees
// (before, it skipped them: "no host has an address"), makes a missing
// --out (before: "not a directory"), and refuses a host with both root:
// and address:, pointing at remote_root:.
func TestCollectInventoryRootHostsIntoNewOut(t *testing.T) {
	dir := t.TempDir()
	gpu, _ := filepath.Abs(gpuRoot)
	web, _ := filepath.Abs("../../testdata/hosts/web-node")
	inv := writeInventory(t, dir, fmt.Sprintf("hosts:\n  gpu-a-001: {root: %s}\n  web-01: {root: %s}\n", gpu, web))
	out := filepath.Join(dir, "not", "yet", "out")
	r := runBounded(t, map[string]string{"HOME": dir}, time.Minute, "collect", "--inventory", inv, "--out", out)
	if r.code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	for host, root := range map[string]string{"gpu-a-001": gpu, "web-01": web} {
		data, err := os.ReadFile(filepath.Join(out, host+".json"))
		if err != nil {
			t.Fatal(err)
		}
		snap, err := snapshot.DecodeBytes(data)
		if err != nil {
			t.Fatal(err)
		}
		if snap.Host != host || snap.Source.Kind != "local" || snap.Source.Root != root || len(snap.Sources) == 0 {
			t.Errorf("%s: host %q, source %+v, %d facts", host, snap.Host, snap.Source, len(snap.Sources))
		}
	}

	both := writeInventory(t, t.TempDir(), fmt.Sprintf("hosts:\n  gpu-a-001: {root: %s, address: 127.0.0.1}\n", gpu))
	r = runBounded(t, map[string]string{"HOME": dir}, time.Minute, "collect", "--inventory", both, "--out", out)
	if r.code != exitError || !strings.Contains(r.stderr, "use remote_root: "+gpu) || strings.Contains(r.stderr, usageHint) {
		t.Errorf("root and address: exit %d, want 2 pointing at remote_root (no usage hint); stderr:\n%s", r.code, r.stderr)
	}

	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o600)
	r = runBounded(t, map[string]string{"HOME": dir}, time.Minute, "collect", "--inventory", inv, "--out", file)
	if r.code != exitError || !strings.Contains(r.stderr, "--out "+file+": not a directory (a regular file)") {
		t.Errorf("--out a file: exit %d; stderr:\n%s", r.code, r.stderr)
	}
}

// A full disk under --out is one error, and the run stops: every other
// host would fail the same way. Before, each host printed its own
// "no space left on device" and the run went on. Needs root to mount a
// small tmpfs; skipped otherwise.
func TestCollectInventoryDiskFullStops(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	os.Mkdir(out, 0o755)
	if msg, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", out).CombinedOutput(); err != nil {
		t.Skipf("mount tmpfs: %v: %s", err, msg)
	}
	t.Cleanup(func() { exec.Command("umount", out).Run() })
	// Fill it: the first snapshot cannot be written.
	f, err := os.Create(filepath.Join(out, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := f.Write(make([]byte, 4096)); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	f.Close()
	port := closedPort(t)
	var body strings.Builder
	body.WriteString("hosts:\n")
	for i := range 6 {
		fmt.Fprintf(&body, "  web-%02d: {address: 127.0.0.1, port: %d}\n", i, port)
	}
	inv := writeInventory(t, dir, body.String())
	r := runBounded(t, map[string]string{"HOME": dir}, 2*time.Minute, "collect", "--inventory", inv, "--out", out,
		"--known-hosts", filepath.Join(dir, "known_hosts"), "--ssh-config", "none", "--retries", "0", "--parallel", "1")
	if r.code != exitError {
		t.Errorf("exit %d, want 2", r.code)
	}
	if n := strings.Count(r.stderr, "no space left on device"); n != 1 {
		t.Errorf("%d errors saying the disk is full, want 1; stderr:\n%s", n, r.stderr)
	}
	if !strings.Contains(r.stderr, "stopped with 0 of 6 hosts written") || strings.Contains(r.stderr, usageHint) {
		t.Errorf("stderr does not say the run stopped, or gives the usage hint:\n%s", r.stderr)
	}
}

// The usage hint follows flag and argument errors only; an input file that
// cannot be used is not a usage error. Before, every exit-2 error
// of an input file ended with the hint.
func TestUsageHintOnlyForUsageErrors(t *testing.T) {
	dir := t.TempDir()
	broken := writeInventory(t, dir, "hosts:\n  a: {rooot: x}\n")
	env := map[string]string{"HOME": dir}
	for _, tc := range []struct {
		args []string
		hint bool
	}{
		{[]string{"audit", "--inventory", broken, "--fail-on", "none"}, false},
		{[]string{"collect", "--inventory", broken, "--out", dir}, false},
		{[]string{"audit", "--fail-on", "nope"}, true},
		{[]string{"collect", "--no-such-flag"}, true},
		{[]string{"collect", "--inventory", broken}, true},
	} {
		r := runBounded(t, env, time.Minute, tc.args...)
		if r.code != exitError {
			t.Errorf("%v: exit %d, want 2; stderr:\n%s", tc.args, r.code, r.stderr)
		}
		if got := strings.Contains(r.stderr, usageHint); got != tc.hint {
			t.Errorf("%v: usage hint %v, want %v; stderr:\n%s", tc.args, got, tc.hint, r.stderr)
		}
	}
}

// collect --out DIR writes this host as DIR/HOST.json, the DaemonSet's
// NODE.json, through the same file name rule as inventory hosts: a
// --hostname or a tree's /etc/hostname that is not one file name is
// refused, and nothing is written outside DIR.
func TestCollectOutNamesTheFileByHost(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "a", "snapshots")
	r := runBounded(t, nil, time.Minute, "collect", "--root", gpuRoot, "--hostname", "node-1", "--out", out)
	if r.code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	if data, err := os.ReadFile(filepath.Join(out, "node-1.json")); err != nil {
		t.Error(err)
	} else if snap, err := snapshot.DecodeBytes(data); err != nil || snap.Host != "node-1" {
		t.Errorf("node-1.json: %v, %+v", err, snap)
	}

	r = runBounded(t, nil, time.Minute, "collect", "--root", gpuRoot, "--hostname", "../escaped", "--out", out)
	if r.code != exitError || !strings.Contains(r.stderr, `--hostname: host name "../escaped": not a safe file name`) {
		t.Errorf("--hostname ../escaped: exit %d; stderr:\n%s", r.code, r.stderr)
	}
	hostile := t.TempDir()
	os.MkdirAll(filepath.Join(hostile, "etc"), 0o755)
	os.WriteFile(filepath.Join(hostile, "etc", "hostname"), []byte("../escaped\n"), 0o644)
	r = runBounded(t, nil, time.Minute, "collect", "--root", hostile, "--out", out)
	if r.code != exitError || !strings.Contains(r.stderr, `host name "../escaped": not a safe file name`) {
		t.Errorf("/etc/hostname ../escaped: exit %d; stderr:\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "a", "escaped.json")); err == nil {
		t.Errorf("a snapshot was written outside --out")
	}
	r = runBounded(t, nil, time.Minute, "collect", "--root", gpuRoot, "--out", out, "-o", filepath.Join(dir, "x.json"))
	if r.code != exitError || !strings.Contains(r.stderr, "choose one") {
		t.Errorf("-o with --out: exit %d; stderr:\n%s", r.code, r.stderr)
	}
}
