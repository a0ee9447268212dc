package fleetrun

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A host record gives back the HostRun it was made from, whatever the
// names: files named after the host in any directory or none, files that
// are not, long names, written by several workers at once.
func TestHostRecordsRoundTrip(t *testing.T) {
	shared := &template{unread: "", skipped: []string{"rule-a"}}
	unread := &template{unread: "no snapshot"}
	slow := &template{timedOut: []string{"rule-b"}}
	var runs []HostRun
	var tmpls []*template
	add := func(run HostRun, t *template) {
		if t != nil {
			run.Unread, run.Skipped, run.TimedOut = t.unread, t.skipped, t.timedOut
		}
		runs, tmpls = append(runs, run), append(tmpls, t)
	}
	for i := range 5000 {
		host := fmt.Sprintf("gpu-%05d", i)
		add(HostRun{Host: host, Fleet: []string{"gpu-training", "web", ""}[i%3], File: "/snaps/" + host + ".json"}, shared)
	}
	long := strings.Repeat("n", 300)
	add(HostRun{Host: "a", Fleet: "web", File: "a.json"}, unread)
	add(HostRun{Host: "b", Fleet: "web", File: "dirb.json"}, slow)
	add(HostRun{Host: "c", Fleet: "web", File: "/x/c.json.bak"}, nil)
	add(HostRun{Host: long, Fleet: "web", File: "/snaps/" + long + ".json"}, shared)
	add(HostRun{Host: "", Fleet: "", File: "/snaps/.json"}, nil)
	add(HostRun{Host: "d", Fleet: "web", File: "ssh://d:22"}, shared)
	add(HostRun{Host: "gpu-00001", Fleet: "gpu-training", File: "/other/gpu-00001.json"}, shared)

	a := newAudit(len(runs))
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() {
			for i := w; i < len(runs); i += 3 {
				a.hosts[i] = a.names.record(runs[i], tmpls[i])
			}
		})
	}
	wg.Wait()
	if len(a.hosts) != len(runs) {
		t.Fatalf("%d records, want %d", len(a.hosts), len(runs))
	}
	var got []HostRun
	for h := range a.Hosts() {
		got = append(got, h)
	}
	if diff := cmp.Diff(runs, got); diff != "" {
		t.Errorf("records (-made from +read back):\n%s", diff)
	}
	for i := range runs {
		if a.tmpl(int32(i)) != tmpls[i] {
			t.Fatalf("host %d: template %p, want %p", i, a.tmpl(int32(i)), tmpls[i])
		}
	}
	if len(a.names.tmpls) != 3 || len(a.names.fleets) != 3 || len(a.names.dirs) != 3 {
		t.Errorf("interned %d templates, %d fleets, %d directories; want 3 of each", len(a.names.tmpls), len(a.names.fleets), len(a.names.dirs))
	}

	// Appending another run's records keeps them, templates included.
	b := newAudit(2)
	other := &template{skipped: []string{"rule-c"}}
	b.hosts[0] = b.names.record(HostRun{Host: "late-1", Fleet: "web", File: "late-1.json"}, other)
	b.hosts[1] = b.names.record(HostRun{Host: "late-2", Fleet: "new", File: "inventory"}, shared)
	a.Append(b)
	want := append(runs, HostRun{Host: "late-1", Fleet: "web", File: "late-1.json", Skipped: []string{"rule-c"}},
		HostRun{Host: "late-2", Fleet: "new", File: "inventory", Skipped: []string{"rule-a"}})
	got = got[:0]
	for h := range a.Hosts() {
		got = append(got, h)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after Append (-want +got):\n%s", diff)
	}
	if a.tmpl(int32(len(runs))) != other || a.tmpl(int32(len(runs)+1)) != shared {
		t.Error("appended hosts lost their templates")
	}
}

func TestFileDir(t *testing.T) {
	for _, c := range []struct {
		file, host, dir string
		ok              bool
	}{
		{"/s/gpu-1.json", "gpu-1", "/s/", true},
		{"gpu-1.json", "gpu-1", "", true},
		{"/s/xgpu-1.json", "gpu-1", "", false},
		{"/s/gpu-1.json", "", "", false},
		{"/s/gpu-1.JSON", "gpu-1", "", false},
		{"/s/gpu-1", "gpu-1", "", false},
	} {
		dir, ok := fileDir(c.file, c.host)
		if dir != c.dir || ok != c.ok {
			t.Errorf("fileDir(%q, %q) = %q, %v; want %q, %v", c.file, c.host, dir, ok, c.dir, c.ok)
		}
	}
}
