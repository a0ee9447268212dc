package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

// An Ansible inventory's ansible_connection picks how each host is read,
// in collect --inventory and audit --inventory alike: a WinRM host is
// reported for itself, naming its connection type, never tried over SSH
// (its port is closed: SSH would report it unreachable); a local one is
// read on this machine (here through fleetaudit_remote_root).
func TestInventoryConnectionTypes(t *testing.T) {
	dir := t.TempDir()
	web, _ := filepath.Abs("../../testdata/hosts/web-node")
	inv := filepath.Join(dir, "hosts.yml")
	yml := fmt.Sprintf(`all:
  children:
    windows:
      hosts:
        win-01: {ansible_host: 127.0.0.1, ansible_port: 9}
      vars: {ansible_connection: winrm}
    self:
      hosts:
        self: {ansible_connection: local, fleetaudit_remote_root: %s}
`, web)
	if err := os.WriteFile(inv, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	const why = "ansible_connection winrm: fleetaudit reads no host over it (it reads local, paramiko, smart, ssh)"

	out := filepath.Join(dir, "out")
	r := runBounded(t, map[string]string{"HOME": dir}, time.Minute, "collect", "--inventory", inv, "--out", out, "--no-exec")
	if r.code != exitError || !strings.Contains(r.stderr, "not read: win-01: 127.0.0.1: "+why) || strings.Contains(r.stderr, "ssh:") {
		t.Errorf("collect: exit %d, want %d naming win-01's connection, no SSH account; stderr:\n%s", r.code, exitError, r.stderr)
	}
	for host, check := range map[string]func(*snapshot.Snapshot) bool{
		"self": func(s *snapshot.Snapshot) bool {
			return s.Source.Kind == "local" && s.Source.Root == web && len(s.Sources) > 0
		},
		"win-01": func(s *snapshot.Snapshot) bool { return len(s.Errors) == 1 && s.Errors[0].Reason == why },
	} {
		data, err := os.ReadFile(filepath.Join(out, host+".json"))
		if err != nil {
			t.Fatal(err)
		}
		snap, err := snapshot.DecodeBytes(data)
		if err != nil {
			t.Fatal(err)
		}
		if !check(snap) {
			t.Errorf("%s: source %+v, errors %v", host, snap.Source, snap.Errors)
		}
	}

	r = runBounded(t, map[string]string{"HOME": dir}, time.Minute, "audit", "--inventory", inv, "--no-exec", "--format", "json")
	var res struct {
		Errors  []struct{ Host, Error string }
		Summary struct{ Hosts, Audited, Unread int }
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("audit: exit %d: %v; stderr:\n%s", r.code, err, r.stderr)
	}
	if s := res.Summary; s.Hosts != 2 || s.Audited != 1 || s.Unread != 1 {
		t.Errorf("audit: hosts %d audited %d unread %d, want 2, 1, 1", s.Hosts, s.Audited, s.Unread)
	}
	if len(res.Errors) != 1 || res.Errors[0].Host != "win-01" || !strings.Contains(res.Errors[0].Error, why) {
		t.Errorf("audit errors %+v, want win-01's connection type", res.Errors)
	}
}
