package sshsource

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	sshconfig "github.com/kevinburke/ssh_config"
)

// --jump and ProxyJump: the host is reached through a jump host (here the
// same sshd, forwarding to itself).
func TestSSHJump(t *testing.T) {
	s := startSSHD(t)
	opts := s.options()
	opts.Jump = fmt.Sprintf("%s@127.0.0.1:%d", s.User, s.Port)
	h := s.host("jumped", fixture(t, "web-node"))
	r := NewDialer(opts).Collect(context.Background(), h)
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	sameAsLocal(t, r.Snapshot, fixture(t, "web-node"), "jumped")
	// A jump host that is not there fails the host, naming it.
	opts.Jump = "127.0.0.1:1"
	r = NewDialer(opts).Collect(context.Background(), h)
	if r.Err == nil || r.Err.Class != ClassUnreachable || !strings.Contains(r.Err.Error(), "127.0.0.1:1") {
		t.Fatalf("err = %v, want unreachable naming the jump host", r.Err)
	}
}

// ~/.ssh/config gives HostName, Port, User and IdentityFile for an alias.
func TestSSHConfigValues(t *testing.T) {
	s := startSSHD(t)
	cfg, err := sshconfig.Decode(strings.NewReader(fmt.Sprintf("Host gpu-*\n  HostName 127.0.0.1\n  Port %d\n  User %s\n  IdentityFile %s\n", s.Port, s.User, s.ClientKey)))
	if err != nil {
		t.Fatal(err)
	}
	opts := s.options()
	opts.IdentityFiles, opts.Config = nil, cfg
	// known_hosts names the host as OpenSSH would: by the address dialled.
	d := NewDialer(opts)
	r := d.Collect(context.Background(), Host{Name: "gpu-a-001", Address: "gpu-a-001", Root: fixture(t, "web-node")})
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	sameAsLocal(t, r.Snapshot, fixture(t, "web-node"), "gpu-a-001")
}

// become reads the host through sudo -n.
func TestSSHBecome(t *testing.T) {
	s := startSSHD(t)
	if _, err := exec.LookPath("sudo"); err != nil {
		r := NewDialer(s.options()).Collect(context.Background(), Host{Name: "b", Address: "127.0.0.1", Port: s.Port, User: s.User, Root: fixture(t, "web-node"), Become: true})
		if r.Err == nil || r.Err.Class != ClassBecome {
			t.Fatalf("without sudo: err = %v, want %s", r.Err, ClassBecome)
		}
		return
	}
	h := s.host("become", fixture(t, "web-node"))
	h.Become = true
	r := NewDialer(s.options()).Collect(context.Background(), h)
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	sameAsLocal(t, r.Snapshot, fixture(t, "web-node"), "become")
}

// A connection reset before the handshake is tried again, up to Retries.
func TestSSHRetriesConnectionReset(t *testing.T) {
	s := startSSHD(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			if accepted.Add(1)%2 == 1 { // every other connection: reset
				c.(*net.TCPConn).SetLinger(0)
				c.Close()
				continue
			}
			go func() {
				defer c.Close()
				up, err := net.Dial("tcp", s.Addr)
				if err != nil {
					return
				}
				defer up.Close()
				go io.Copy(up, c)
				io.Copy(c, up)
			}()
		}
	}()
	port := l.Addr().(*net.TCPAddr).Port
	kh := filepath.Join(t.TempDir(), "known_hosts")
	line, _ := os.ReadFile(s.KnownHosts)
	os.WriteFile(kh, []byte(strings.Replace(string(line), fmt.Sprintf("[127.0.0.1]:%d", s.Port), fmt.Sprintf("[127.0.0.1]:%d", port), 1)), 0o600)
	opts := s.options()
	opts.KnownHosts = []string{kh}
	h := Host{Name: "flaky", Address: "127.0.0.1", Port: port, User: s.User, Root: fixture(t, "web-node")}
	opts.Retries = 0
	if r := NewDialer(opts).Collect(context.Background(), h); r.Err == nil || r.Err.Class != ClassUnreachable {
		t.Fatalf("no retries: err = %v, want %s", r.Err, ClassUnreachable)
	}
	opts.Retries = 2
	if r := NewDialer(opts).Collect(context.Background(), h); r.Err != nil {
		t.Fatalf("with retries: %v", r.Err)
	}
}
