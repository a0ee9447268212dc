package audit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fleetaudit/fleetaudit/internal/sshdtest"
	"github.com/fleetaudit/fleetaudit/inventory"
	"github.com/fleetaudit/fleetaudit/snapshot"
	"github.com/fleetaudit/fleetaudit/sshsource"
	"github.com/fleetaudit/fleetaudit/transport"
)

// connectionInventory is an Ansible YAML inventory of three hosts, each
// reached its own way: gpu-a-001 over the real sshd, win-01 over WinRM
// (which fleetaudit does not speak; its port is closed, so SSH would fail
// too, but as unreachable), and self, this machine (ansible_connection
// local) seen through the web-node fixture as its root.
func connectionInventory(t *testing.T, s *sshdtest.Server) *inventory.Inventory {
	t.Helper()
	fixture := func(name string) string {
		p, err := filepath.Abs(filepath.Join("..", "testdata", "hosts", name))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	yml := fmt.Sprintf(`all:
  vars:
    ansible_user: %s
    ansible_ssh_private_key_file: %s
  children:
    gpu:
      hosts:
        gpu-a-001: {ansible_host: 127.0.0.1, ansible_port: %d, fleetaudit_remote_root: %s}
      vars:
        fleetaudit_fleet: gpu-training
    windows:
      hosts:
        win-01: {ansible_host: 127.0.0.1, ansible_port: %d}
      vars:
        ansible_connection: winrm
    self:
      hosts:
        self: {ansible_connection: local, fleetaudit_remote_root: %s}
`, s.User, s.ClientKey, s.Port, fixture("gpu-node"), closedPort(t), fixture("web-node"))
	file := filepath.Join(t.TempDir(), "hosts.yml")
	if err := os.WriteFile(file, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	inv, err := inventory.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

// ansible_connection picks the transport: a WinRM host is reported for
// that host, naming its connection type, never read over SSH; a local one
// is read on this machine; the SSH host is audited as before.
func TestAnsibleConnectionPicksTheTransport(t *testing.T) {
	s := sshdtest.Start(t)
	inv := connectionInventory(t, s)
	d := sshsource.NewDialer(sshsource.Options{KnownHosts: []string{s.KnownHosts}, Home: s.Dir, ConnectTimeout: sshdtest.Timeout(t)})
	defer d.Close()
	var overSSH []string
	ssh := &sshsource.Transport{Dialer: d, Timeout: sshdtest.Timeout(t), Done: func(r sshsource.Result, _ sshsource.Progress) {
		overSSH = append(overSSH, r.Host.Name)
	}}
	res, err := Run(context.Background(), Options{Fleets: loadFleets(t), Inventory: inv, Transports: transport.Set{transport.SSH: ssh}, NoExec: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(overSSH, []string{"gpu-a-001"}) {
		t.Errorf("hosts read over SSH: %v, want only gpu-a-001", overSSH)
	}
	if s := res.Summary; s.Hosts != 3 || s.Audited != 2 || s.Unread != 1 {
		t.Errorf("summary hosts %d audited %d unread %d, want 3, 2, 1", s.Hosts, s.Audited, s.Unread)
	}
	rules := map[string][]string{}
	for _, f := range res.Findings {
		rules[f.Host] = append(rules[f.Host], f.Rule)
		if f.Host == "win-01" && !strings.Contains(f.Message, "ansible_connection winrm") {
			t.Errorf("win-01: %s, want it to name its connection type", f.Message)
		}
	}
	if r := rules["win-01"]; len(r) != 1 || r[0] != "collection-error" {
		t.Errorf("win-01 was not read, yet has findings %v", r)
	}
	for _, e := range res.Errors {
		if e.Host != "win-01" {
			t.Errorf("%s: %s", e.Host, e.Error)
		}
	}
	for _, host := range []string{"gpu-a-001", "self"} {
		if len(rules[host]) == 0 || slices.Contains(rules[host], "collection-error") {
			t.Errorf("%s: findings %v, want the fixture's, read in full", host, rules[host])
		}
	}
}

// collect --inventory reads hosts through the same code: Collect gives each
// host the snapshot audit would have read.
func TestCollectReadsEachHostThroughItsTransport(t *testing.T) {
	s := sshdtest.Start(t)
	inv := connectionInventory(t, s)
	d := sshsource.NewDialer(sshsource.Options{KnownHosts: []string{s.KnownHosts}, Home: s.Dir, ConnectTimeout: sshdtest.Timeout(t)})
	defer d.Close()
	ssh := &sshsource.Transport{Dialer: d, Timeout: sshdtest.Timeout(t)}
	if got := CollectHosts(inv); len(got) != 3 {
		t.Errorf("CollectHosts: %d hosts, want all 3", len(got))
	}
	snaps := map[string]*snapshot.Snapshot{}
	err := Collect(context.Background(), Options{Inventory: inv, Transports: transport.Set{transport.SSH: ssh}, NoExec: true, Parallel: 3, Version: "test"},
		func(h inventory.Host, snap *snapshot.Snapshot) { snaps[h.Name] = snap })
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) != 3 {
		t.Fatalf("collected %d hosts, want 3", len(snaps))
	}
	if src := snaps["gpu-a-001"].Source; src.Kind != "ssh" || len(snaps["gpu-a-001"].Errors) != 0 {
		t.Errorf("gpu-a-001: source %+v, errors %v", src, snaps["gpu-a-001"].Errors)
	}
	self := snaps["self"]
	if self.Source.Kind != "local" || !strings.HasSuffix(self.Source.Root, "web-node") || len(self.Errors) != 0 {
		t.Errorf("self: source %+v, errors %v, want the web-node tree read here", self.Source, self.Errors)
	}
	win := snaps["win-01"]
	if len(win.Errors) != 1 || win.Errors[0].Collector != snapshot.CollectorSource || !strings.Contains(win.Errors[0].Reason, "ansible_connection winrm") {
		t.Errorf("win-01: errors %v, want one source error naming winrm", win.Errors)
	}
}
