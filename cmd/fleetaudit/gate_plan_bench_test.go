package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/fleetaudit/fleetaudit/collectors"
	"github.com/fleetaudit/fleetaudit/fleets"
	"github.com/fleetaudit/fleetaudit/snapshot"
	"github.com/fleetaudit/fleetaudit/store"
)

// planStore records a store of hosts hosts in configs distinct
// configurations (driver branch and a running sysctl vary; one in five is
// a web server), collected an hour ago, as audit --record writes it.
func planStore(tb testing.TB, hosts, configs int) string {
	tb.Helper()
	ctx := context.Background()
	at := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	docs := map[string]map[string]any{}
	for _, root := range []string{"gpu-node", "web-node"} {
		target := collectors.Target{Origin: snapshot.Origin{Kind: "local", Root: "/"}, Files: collectors.Dir(filepath.Join("../../testdata/hosts", root))}
		s, err := collectors.Collect(ctx, target, collectors.Options{Hostname: "x", Now: func() time.Time { return at }})
		if err != nil {
			tb.Fatal(err)
		}
		b, err := json.Marshal(s)
		if err != nil {
			tb.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			tb.Fatal(err)
		}
		docs[root] = doc
	}
	drivers := []string{"535.104.05", "535.183.01", "550.54.15", "550.90.07"}
	dir := tb.TempDir()
	snaps := filepath.Join(dir, "snapshots")
	if err := os.Mkdir(snaps, 0o755); err != nil {
		tb.Fatal(err)
	}
	encoded := make([][2][]byte, configs)
	for c := range configs {
		var doc map[string]any
		root, prefix := "gpu-node", "gpu"
		if c%5 == 4 {
			root, prefix = "web-node", "web"
		}
		b, _ := json.Marshal(docs[root])
		json.Unmarshal(b, &doc)
		doc["host"] = "\x00"
		doc["nvidia"].(map[string]any)["driver_version"] = drivers[c%len(drivers)]
		doc["sysctl"].(map[string]any)["running"].(map[string]any)["vm.swappiness"] = fmt.Sprint(c)
		b, err := json.Marshal(doc)
		if err != nil {
			tb.Fatal(err)
		}
		i := bytes.Index(b, []byte(`"\u0000"`))
		encoded[c] = [2][]byte{append([]byte(prefix+"\n"), b[:i]...), b[i+len(`"\u0000"`):]}
	}
	for i := range hosts {
		e := encoded[i%configs]
		prefix, head, _ := bytes.Cut(e[0], []byte("\n"))
		name := fmt.Sprintf("%s-%05d", prefix, i)
		body := append(append(append([]byte{}, head...), `"`+name+`"`...), e[1]...)
		if err := os.WriteFile(filepath.Join(snaps, name+".json"), body, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	set, err := fleets.Load(true)
	if err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(dir, "store.db")
	s, err := store.Open(ctx, path, store.Options{Create: true, Version: "bench", Wait: time.Minute})
	if err != nil {
		tb.Fatal(err)
	}
	defer s.Close()
	rec, err := store.Begin(ctx, s, store.RunMeta{StartedAt: at, Version: "bench", Writer: "bench"})
	if err != nil {
		tb.Fatal(err)
	}
	res, err := audit.Run(ctx, audit.Options{Fleets: set, Snapshots: []string{snaps}, Version: "bench", Loaded: rec.Loaded})
	if err != nil {
		tb.Fatal(err)
	}
	if err := rec.Finish(ctx, res, nil); err != nil {
		tb.Fatal(err)
	}
	os.RemoveAll(snaps)
	return path
}

// BenchmarkGatePlanStore is `gate --store` on a 10,000-host store of 20
// distinct configurations, for a change of two files (hugetlb_cma planted
// in the shared base layer, vm.max_map_count lowered in the GPU layer) to
// examples/config-repo: the whole command, checkouts, renders, reading
// every host's snapshot and both evaluations included.
func BenchmarkGatePlanStore(b *testing.B) {
	path := planStore(b, 10000, 20)
	dir, base := exampleRepo(b)
	plantHugetlbCMA(b, dir)
	conf := filepath.Join(dir, "layers/gpu/etc/sysctl.d/60-gpu.conf")
	data, err := os.ReadFile(conf)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(conf, bytes.Replace(data, []byte("vm.max_map_count = 1048576"), []byte("vm.max_map_count = 65530"), 1), 0o644); err != nil {
		b.Fatal(err)
	}
	args := []string{"gate", "--repo", dir, "--base", base, "--store=" + path, "--fail-on", "none", "--format", "json"}
	// CPU time besides wall time: on a shared machine the wall clock
	// counts the neighbours' work too.
	cpu0 := cpuTime()
	n := 0
	defer func() { b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(max(n, 1)), "cpu-s/op") }()
	for b.Loop() {
		n++
		var out, errb bytes.Buffer
		code := run(context.Background(), args, streams{in: strings.NewReader(""), out: &out, err: &errb}, func(string) string { return "" })
		if code != exitOK {
			b.Fatalf("exit %d\n%s", code, errb.String())
		}
		var res struct {
			Plan struct {
				Summary struct {
					Planned      int `json:"planned"`
					NewlyFailing int `json:"newly_failing"`
				} `json:"summary"`
			} `json:"plan"`
		}
		if err := json.NewDecoder(&out).Decode(&res); err != nil {
			b.Fatal(err)
		}
		if res.Plan.Summary.Planned != 10000 || res.Plan.Summary.NewlyFailing != 8000 {
			b.Fatalf("plan summary %+v, want 10000 planned and the 8000 GPU hosts newly failing", res.Plan.Summary)
		}
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
