package fleetrun

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/fleetaudit/fleetaudit/policies"
)

func TestHostMember(t *testing.T) {
	for _, tc := range []struct {
		in   string
		host string
		ok   bool
	}{
		{`{"a":{"host":"x"},"host":"h","b":[1,"]"]}`, "h", true},
		{`{"host":"h"}`, "h", true},
		{` { "b" : "\"host\"" , "host" : "h\u00e9" } `, "hé", true},
		// The first "host" is taken; whether there is another is settled
		// when the class's first file is decoded.
		{`{"host":"a","host":"b"}`, "a", true},
		{`{"ho\u0073t":"a","host":"b"}`, "", false},
		{`{"host":1}`, "", false},
		{`{"b":1}`, "", false},
		{`{"b":1,}`, "", false},
		{`[]`, "", false},
		{`{"host":"h\u00e9\n"}`, "h\u00e9\n", true},
		{`{"host":"h\x"}`, "", false},
		// What follows the first "host" is left to the decoder: it is the
		// same in every file of the class.
		{`{"host":"h"`, "h", true},
		{`{"host":"h"} x`, "h", true},
		{`{"host":"h","a":{"host":1}`, "h", true},
	} {
		host, start, end, ok := hostMember([]byte(tc.in))
		if ok != tc.ok || host != tc.host {
			t.Errorf("%s: %q %v, want %q %v", tc.in, host, ok, tc.host, tc.ok)
			continue
		}
		if ok && tc.in[start] != '"' || ok && tc.in[end-1] != '"' {
			t.Errorf("%s: span %d:%d is not the value", tc.in, start, end)
		}
	}
}

// boot-config-pending reads the boot params less the loader's: hosts that
// differ only in those (each host's own root=UUID=...) get one key and
// share its result; another param, or a value that is not a map, is a new key.
func TestRuleKeysLeaveOutKeysRulesNeverSee(t *testing.T) {
	e := newEngine(t, policies.Options{Fleets: gpuFleets()})
	fq, _ := e.Queries("gpu-training")
	i := slices.IndexFunc(fq.HostRules(), func(r *policies.Rule) bool { return r.ID == "boot-config-pending" })
	if i < 0 {
		t.Fatal("no boot-config-pending in gpu-training")
	}
	doc := func(running any) map[string]any {
		return map[string]any{
			"source": map[string]any{"kind": "local"},
			"boot": map[string]any{
				"running":    map[string]any{"present": true, "params": running},
				"configured": map[string]any{"loader": "grub", "present": true, "params": map[string]any{"quiet": ""}},
			},
		}
	}
	key := func(d map[string]any) string {
		var k ruleKeys
		b, ok := k.appendKey(nil, d, "gpu-training", fq.HostRules()[i], fq.Reads(i), nil)
		if !ok {
			t.Fatal("no key")
		}
		return string(b)
	}
	a := key(doc(map[string]any{"root": "UUID=a", "ro": "", "quiet": ""}))
	if b := key(doc(map[string]any{"root": "UUID=b", "BOOT_IMAGE": "/boot/vmlinuz", "quiet": ""})); b != a {
		t.Error("hosts that differ only in loader params have different keys")
	}
	if b := key(doc(map[string]any{"root": "UUID=a", "ro": "", "quiet": "", "iommu": "pt"})); b == a {
		t.Error("a host with another param has the same key")
	}
	if b := key(doc(map[string]any{"root": "UUID=a", "ro": "", "quiet": "1"})); b == a {
		t.Error("a host with another value has the same key")
	}
	if b, c := key(doc("quiet")), key(doc([]any{"quiet"})); b == a || b == c {
		t.Error("params that are not a map share a key")
	}
}

// Hosts that each have their own boot params meet boot-param-forbidden on a
// new input each time: once it has met enough, it is found constant in a
// fleet that forbids nothing and read from one result for the rest, with
// the oracle's findings.
func TestConstantRuleSharedAcrossHosts(t *testing.T) {
	var hosts []host
	for i := range 80 {
		hosts = append(hosts, host{Name: fmt.Sprintf("gpu-%d", i), Labels: map[string]string{"fleet": "gpu-training"}, HugetlbCMA: []string{"", "6G"}[i%2]})
	}
	dir := t.TempDir()
	var files []string
	for i, h := range hosts {
		doc := h.Snapshot()
		boot := doc["boot"].(map[string]any)
		params := maps.Clone(boot["running"].(map[string]any)["params"].(map[string]any))
		params["root"] = fmt.Sprintf("UUID=%d", i)
		boot["running"].(map[string]any)["params"] = params
		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(dir, h.Name+".json")
		if err := os.WriteFile(f, b, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	e := newEngine(t, policies.Options{Fleets: gpuFleets()})
	fq, _ := e.Queries("gpu-training")
	i := slices.IndexFunc(fq.HostRules(), func(r *policies.Rule) bool { return r.ID == "boot-param-forbidden" })
	if len(fq.Reads(i).Paths()) == 0 {
		t.Fatal("boot-param-forbidden reads nothing before the run")
	}
	rep, err := Run(context.Background(), e, SnapshotFiles(files), RunOptions{FleetOf: fleetByLabel, Workers: 2})
	if err != nil || len(rep.Failures) > 0 {
		t.Fatal(err, rep.Failures)
	}
	if len(fq.Reads(i).Paths()) != 0 {
		t.Error("boot-param-forbidden still reads the boot params after 80 new ones")
	}
	want, failed := oracle(t, e, files)
	if len(failed) > 0 {
		t.Fatal(failed)
	}
	sameFindings(t, "run", rep.Findings, want)
}
