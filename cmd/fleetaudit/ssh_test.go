package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetaudit/fleetaudit/internal/sshdtest"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

// collect --inventory --out over a real sshd: the good host's snapshot and
// the unreachable host's (saying why) are both written, the account lists
// the failure, and auditing the directory reports that host as unread.
func TestCollectInventoryOverSSH(t *testing.T) {
	s := sshdtest.Start(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().(*net.TCPAddr).Port
	l.Close()
	root, _ := filepath.Abs(gpuRoot)
	dir := t.TempDir()
	inv := filepath.Join(dir, "inventory.yaml")
	os.WriteFile(inv, []byte(fmt.Sprintf(`hosts:
  gpu-a-001: {fleet: gpu-training, address: 127.0.0.1, port: %d, user: %s, identity: %s, remote_root: %s}
  gpu-gone: {fleet: gpu-training, address: 127.0.0.1, port: %d, user: %s}
`, s.Port, s.User, s.ClientKey, root, closed, s.User)), 0o600)
	out := filepath.Join(dir, "snapshots")
	os.Mkdir(out, 0o755)
	env := map[string]string{"HOME": s.Dir}
	// Generous bounds (a loaded CI machine), not the defaults: behaviour
	// is asserted here, not speed.
	limit := sshdtest.Timeout(t).String()
	r := runCLI(t, env, "collect", "--inventory", inv, "--out", out, "--known-hosts", s.KnownHosts, "--ssh-config", "none", "--host-timeout", limit, "--connect-timeout", limit)
	if r.code == exitOK {
		t.Fatalf("exit 0 with a host not read; stderr:\n%s", r.stderr)
	}
	// One command on the host read: the stream.
	for _, want := range []string{"ssh: 2 hosts: 1 read, 0 read in part, 1 not read; 1 commands run (1.00 a host)", "gpu-gone", "unreachable"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	data, err := os.ReadFile(filepath.Join(out, "gpu-a-001.json"))
	if err != nil {
		t.Fatal(err)
	}
	snap, err := snapshot.DecodeBytes(data)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Host != "gpu-a-001" || snap.Source.Kind != "ssh" || snap.Source.Root != root || len(snap.Sources) == 0 {
		t.Errorf("gpu-a-001: host %q source %+v, %d facts", snap.Host, snap.Source, len(snap.Sources))
	}
	if _, err := os.Stat(filepath.Join(out, "gpu-gone.json")); err != nil {
		t.Errorf("the unreachable host has no snapshot saying why: %v", err)
	}
	a := runCLI(t, env, "audit", "--inventory", inv, "--snapshots", out, "--format", "json", "--fail-on", "none")
	if a.code != exitOK {
		t.Fatalf("audit exit %d:\n%s", a.code, a.stderr)
	}
	if !strings.Contains(a.stdout, `"unread": 1`) || !strings.Contains(a.stdout, `"audited": 1`) {
		t.Errorf("audit of the directory: want 1 audited, 1 unread:\n%s", a.stdout[strings.Index(a.stdout, `"summary"`):])
	}
}
