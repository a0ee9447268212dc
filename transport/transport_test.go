package transport

import (
	"context"
	"strings"
	"testing"

	"github.com/fleetaudit/fleetaudit/inventory"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

func TestFor(t *testing.T) {
	for _, c := range []struct {
		host inventory.Host
		want string
		err  string
	}{
		{host: inventory.Host{Address: "10.0.0.1"}, want: SSH},
		{host: inventory.Host{}, want: ""},
		{host: inventory.Host{Address: "10.0.0.1", Connection: "smart"}, want: SSH},
		{host: inventory.Host{Address: "10.0.0.1", Connection: "paramiko"}, want: SSH},
		{host: inventory.Host{Connection: "ssh"}, want: ""}, // nothing to connect to
		{host: inventory.Host{Connection: "local"}, want: Local},
		// A root is read instead of the host, whatever reaches the host.
		{host: inventory.Host{Root: "/srv/roots/w", Connection: "winrm"}, want: Local},
		{host: inventory.Host{Address: "10.0.0.1", Connection: "winrm"}, err: "ansible_connection winrm: "},
		{host: inventory.Host{Connection: "psrp"}, err: "ansible_connection psrp: "},
		{host: inventory.Host{Address: "c1", Connection: "community.docker.docker"}, err: "ansible_connection community.docker.docker: "},
	} {
		got, err := For(c.host)
		if c.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), c.err) {
				t.Errorf("For(%+v) = %q, %v; want an error starting %q", c.host, got, err, c.err)
			}
			continue
		}
		if got != c.want || err != nil {
			t.Errorf("For(%+v) = %q, %v; want %q", c.host, got, err, c.want)
		}
	}
}

type fake struct{ read []string }

func (f *fake) Collect(_ context.Context, h inventory.Host) *snapshot.Snapshot {
	f.read = append(f.read, h.Name)
	return snapshot.New(h.Name)
}

// A host goes to its own transport only; one whose transport the run did
// not set up, or whose connection none reads, gets a snapshot saying why.
func TestSetCollect(t *testing.T) {
	local := &fake{}
	set := Set{Local: local}
	ctx := context.Background()
	set.Collect(ctx, inventory.Host{Name: "self", Connection: "local"}, "v")
	if len(local.read) != 1 {
		t.Errorf("local read %v", local.read)
	}
	for _, c := range []struct {
		host       inventory.Host
		path, want string
	}{
		{inventory.Host{Name: "web-01", Address: "10.0.0.7"}, "10.0.0.7", "not collected: SSH collection is not set up for this run"},
		{inventory.Host{Name: "win-01", Connection: "winrm"}, "win-01", "ansible_connection winrm: fleetaudit reads no host over it (it reads local, paramiko, smart, ssh)"},
	} {
		s := set.Collect(ctx, c.host, "v")
		if s.Host != c.host.Name || len(s.Errors) != 1 || s.Errors[0].Collector != snapshot.CollectorSource || s.Errors[0].Path != c.path || s.Errors[0].Reason != c.want {
			t.Errorf("%s: host %q, errors %+v", c.host.Name, s.Host, s.Errors)
		}
	}
	if len(local.read) != 1 {
		t.Errorf("the local transport read %v, want only self", local.read)
	}
}
