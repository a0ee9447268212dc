package fleetgen

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestUniqueDriftsWhatRulesRead: with Unique, every GPU host differs from
// every other in the sections many rules read (memlock limits, configured
// sysctls, the running kernel's boot parameters), and running sysctls,
// kernel, driver and NCCL versions take several values while one keeps a
// majority (what skew rules compare against).
func TestUniqueDriftsWhatRulesRead(t *testing.T) {
	dir := t.TempDir()
	if err := Generate(Options{N: 200, Dir: dir, Roots: "../../testdata/hosts", Seed: 1, Unique: true}); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "gpu-*.json"))
	if err != nil || len(files) < 150 {
		t.Fatalf("%d gpu snapshots (%v)", len(files), err)
	}
	seen := map[string]map[string]string{} // section -> its JSON -> host
	values := map[string]map[string]int{}  // fact -> value -> hosts
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		host := doc["host"].(string)
		for name, path := range map[string][]string{
			"boot.running":      {"boot", "running"},
			"sysctl.configured": {"sysctl", "configured"},
			"limits.effective":  {"limits", "effective"},
		} {
			v, _ := json.Marshal(lookup(doc, anys(path)...))
			if seen[name] == nil {
				seen[name] = map[string]string{}
			}
			if other, ok := seen[name][string(v)]; ok {
				t.Errorf("%s: %s equal to %s's: %s", host, name, other, v)
			}
			seen[name][string(v)] = host
		}
		params := lookup(doc, "boot", "running", "params").(map[string]any)
		cmdline := lookup(doc, "boot", "running", "cmdline").(string)
		for _, p := range []string{"root", "hugetlb_cma"} {
			if v, ok := params[p].(string); ok && !strings.Contains(" "+cmdline+" ", " "+p+"="+v+" ") {
				t.Errorf("%s: boot param %s=%s not on the command line %q", host, p, v, cmdline)
			}
		}
		for fact, path := range map[string][]any{
			"kernel":   {"kernel", "release"},
			"driver":   {"nvidia", "driver_version"},
			"nccl":     {"libraries", "nccl", 0, "version"},
			"max_map":  {"sysctl", "running", "vm.max_map_count"},
			"numa":     {"sysctl", "running", "kernel.numa_balancing"},
			"swappy":   {"sysctl", "running", "vm.swappiness"},
			"hugetlb":  {"boot", "running", "params", "hugetlb_cma"},
			"somaxcon": {"sysctl", "running", "net.core.somaxconn"},
		} {
			v, _ := lookup(doc, path...).(string)
			if values[fact] == nil {
				values[fact] = map[string]int{}
			}
			values[fact][v]++
		}
	}
	for fact, counts := range values {
		top := 0
		for _, n := range counts {
			top = max(top, n)
		}
		if len(counts) < 2 || top*2 < len(files) {
			t.Errorf("%s: values %v: want several, one held by most hosts", fact, counts)
		}
	}
}

func anys(path []string) []any {
	out := make([]any, len(path))
	for i, p := range path {
		out[i] = p
	}
	return out
}

// TestGenerateSameFilesAtAnyParallelism: the variation is drawn in host
// order and hosts share their templates' unvaried sections read only, so
// the files are the same byte for byte whatever the number of CPUs that
// encode and write them (run with -race, a change to a shared section while
// another host is encoded is caught too).
func TestGenerateSameFilesAtAnyParallelism(t *testing.T) {
	for _, unique := range []bool{false, true} {
		var dirs []string
		for _, procs := range []int{1, 4} {
			prev := runtime.GOMAXPROCS(procs)
			dir := t.TempDir()
			err := Generate(Options{N: 120, Dir: dir, Roots: "../../testdata/hosts", Seed: 7, Unique: unique})
			runtime.GOMAXPROCS(prev)
			if err != nil {
				t.Fatal(err)
			}
			dirs = append(dirs, dir)
		}
		files, err := filepath.Glob(filepath.Join(dirs[0], "*.json"))
		if err != nil || len(files) != 120 {
			t.Fatalf("unique=%v: %d files (%v)", unique, len(files), err)
		}
		for _, f := range files {
			a, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(dirs[1], filepath.Base(f)))
			if err != nil {
				t.Fatal(err)
			}
			if string(a) != string(b) {
				t.Fatalf("unique=%v: %s differs between 1 and 4 CPUs", unique, filepath.Base(f))
			}
		}
	}
}
