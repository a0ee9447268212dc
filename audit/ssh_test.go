package audit

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fleetaudit/fleetaudit/internal/sshdtest"
	"github.com/fleetaudit/fleetaudit/inventory"
	"github.com/fleetaudit/fleetaudit/sshsource"
	"github.com/fleetaudit/fleetaudit/transport"
)

// closedPort is a loopback port nothing listens on.
func closedPort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// An Ansible INI inventory read as Ansible would, every host over a real
// sshd (each seeing its own fixture root), one host unreachable: that one
// is a collection-error finding and nothing else; the others are audited.
func TestAnsibleInventoryOverSSH(t *testing.T) {
	s := sshdtest.Start(t)
	fixture := func(name string) string {
		p, err := filepath.Abs(filepath.Join("..", "testdata", "hosts", name))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	ini := fmt.Sprintf(`[gpu]
gpu-a-001 ansible_host=127.0.0.1 fleetaudit_remote_root=%s
gpu-a-002 ansible_host=127.0.0.1 fleetaudit_remote_root=%s
gpu-gone  ansible_host=127.0.0.1 ansible_port=%d

[web]
web-01 ansible_host=127.0.0.1 fleetaudit_remote_root=%s

[gpu:vars]
fleetaudit_fleet=gpu-training

[all:vars]
ansible_port=%d
ansible_user=%s
ansible_ssh_private_key_file=%s
`, fixture("gpu-node"), fixture("dropins"), closedPort(t), fixture("web-node"), s.Port, s.User, s.ClientKey)
	file := filepath.Join(t.TempDir(), "hosts.ini")
	if err := os.WriteFile(file, []byte(ini), 0o600); err != nil {
		t.Fatal(err)
	}
	inv, err := inventory.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	d := sshsource.NewDialer(sshsource.Options{KnownHosts: []string{s.KnownHosts}, Home: s.Dir, ConnectTimeout: sshdtest.Timeout(t)})
	defer d.Close()
	var done []string
	ssh := &sshsource.Transport{Dialer: d, Timeout: sshdtest.Timeout(t), Total: 4, Done: func(r sshsource.Result, p sshsource.Progress) {
		done = append(done, r.Host.Name)
	}}
	res, err := Run(context.Background(), Options{Fleets: loadFleets(t), Inventory: inv, Transports: transport.Set{transport.SSH: ssh}, Parallel: 4})
	if err != nil {
		t.Fatal(err)
	}
	if len(done) != 4 {
		t.Errorf("progress saw %v, want the 4 hosts", done)
	}
	if s := res.Summary; s.Hosts != 4 || s.Audited != 3 || s.Unread != 1 {
		t.Errorf("summary hosts %d audited %d unread %d, want 4, 3, 1", s.Hosts, s.Audited, s.Unread)
	}
	rules := map[string][]string{}
	for _, f := range res.Findings {
		rules[f.Host] = append(rules[f.Host], f.Rule)
		if f.Host == "gpu-gone" && !strings.Contains(f.Message, "unreachable") {
			t.Errorf("gpu-gone: %s", f.Message)
		}
	}
	if r := rules["gpu-gone"]; len(r) != 1 || r[0] != "collection-error" {
		t.Errorf("gpu-gone was not read, yet has findings %v", r)
	}
	if len(rules["gpu-a-001"]) == 0 {
		t.Error("gpu-a-001 (the gpu-node fixture, which has hazards) has no finding")
	}
}

// With --snapshots, an inventory host with an address and a snapshot is
// read from the snapshot, counted once, and nothing is collected.
func TestSnapshotWinsOverAddress(t *testing.T) {
	file := filepath.Join(t.TempDir(), "hosts.ini")
	os.WriteFile(file, []byte("gpu-a-001 ansible_host=192.0.2.1\nweb-01 ansible_host=192.0.2.2\n"), 0o600)
	inv, err := inventory.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), Options{Fleets: loadFleets(t), Inventory: inv,
		Snapshots: []string{"../examples/fleet/snapshots/gpu-a-001.json"}})
	if err != nil {
		t.Fatal(err)
	}
	// gpu-a-001 once, from its snapshot; web-01 has no snapshot and, with
	// --snapshots, is not collected: a blind spot, reported.
	if s := res.Summary; s.Hosts != 2 || s.Audited != 1 || s.Unread != 1 {
		t.Errorf("summary hosts %d audited %d unread %d, want 2, 1, 1", s.Hosts, s.Audited, s.Unread)
	}
	for _, e := range res.Errors {
		if e.Host == "gpu-a-001" {
			t.Errorf("gpu-a-001 has an error: %s", e.Error)
		}
	}
}

// A host whose login shell hangs (a .bashrc that never returns) runs into
// the host timeout through the transport registry: it is one
// collection-error finding saying it timed out, and the good host beside
// it is audited in full, without waiting on the slow one's shell.
func TestSlowLoginShellTimesOutAlone(t *testing.T) {
	good := sshdtest.Start(t)
	slow := sshdtest.StartWith(t, sshdtest.Config{LoginRC: "sleep 300"})
	if !slow.CountsExecs {
		t.Skip("the user's login shell is not bash: it runs no LoginRC")
	}
	root, err := filepath.Abs(filepath.Join("..", "testdata", "hosts", "gpu-node"))
	if err != nil {
		t.Fatal(err)
	}
	ini := fmt.Sprintf(`good ansible_host=127.0.0.1 ansible_port=%d ansible_user=%s ansible_ssh_private_key_file=%s fleetaudit_remote_root=%s
slow ansible_host=127.0.0.1 ansible_port=%d ansible_user=%s ansible_ssh_private_key_file=%s fleetaudit_remote_root=%s
`, good.Port, good.User, good.ClientKey, root, slow.Port, slow.User, slow.ClientKey, root)
	file := filepath.Join(t.TempDir(), "hosts.ini")
	if err := os.WriteFile(file, []byte(ini), 0o600); err != nil {
		t.Fatal(err)
	}
	inv, err := inventory.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	d := sshsource.NewDialer(sshsource.Options{KnownHosts: []string{good.KnownHosts, slow.KnownHosts}, Home: good.Dir, ConnectTimeout: sshdtest.Timeout(t)})
	defer d.Close()
	// Long enough for the good host on a loaded machine, far below the
	// slow one's sleep.
	timeout := min(sshdtest.Timeout(t), 20*time.Second)
	classes := map[string]string{}
	ssh := &sshsource.Transport{Dialer: d, Timeout: timeout, Total: 2, Done: func(r sshsource.Result, _ sshsource.Progress) {
		if r.Err != nil {
			classes[r.Host.Name] = r.Err.Class
		}
	}}
	start := time.Now()
	res, err := Run(context.Background(), Options{Fleets: loadFleets(t), Inventory: inv, Transports: transport.Set{transport.SSH: ssh}, Parallel: 2})
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 2*timeout+10*time.Second {
		t.Errorf("the run took %s: longer than the host timeout %s allows", took, timeout)
	}
	if c := classes["slow"]; c != sshsource.ClassTimeout {
		t.Errorf("slow: class %q, want %q", c, sshsource.ClassTimeout)
	}
	if c, ok := classes["good"]; ok {
		t.Errorf("good: %s", c)
	}
	if s := res.Summary; s.Hosts != 2 || s.Audited != 1 || s.Unread != 1 {
		t.Errorf("summary hosts %d audited %d unread %d, want 2, 1, 1", s.Hosts, s.Audited, s.Unread)
	}
	rules := map[string][]string{}
	for _, f := range res.Findings {
		rules[f.Host] = append(rules[f.Host], f.Rule)
		if f.Host == "slow" && !strings.Contains(f.Message, "host timeout") {
			t.Errorf("slow: %s, want it to name the host timeout", f.Message)
		}
	}
	if r := rules["slow"]; len(r) != 1 || r[0] != "collection-error" {
		t.Errorf("slow was not read, yet has findings %v", r)
	}
	if r := rules["good"]; len(r) == 0 || slices.Contains(r, "collection-error") {
		t.Errorf("good: findings %v, want the gpu-node fixture's, read in full", r)
	}
}
