package fleets

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetaudit/fleetaudit/internal/safeio"
	"github.com/fleetaudit/fleetaudit/internal/strictyaml"
)

func want(b bool) *Want { w := Want(b); return &w }

func TestMatchFacts(t *testing.T) {
	dir := writeDir(t, map[string]string{
		"10-rdma-gpu.yaml": "name: rdma-gpu\nincludes: [gpu-training]\nmatch: {facts: {gpus: true, rdma: true}}\n",
		"20-cpu.yaml":      "name: cpu\nincludes: [common]\nmatch: {facts: {gpus: false}, hostnames: ['cpu-*']}\n",
	})
	s := mustLoad(t, true, dir)
	tests := []struct {
		name string
		host HostFacts
		want string
	}{
		// The case: GPU hosts no name matches.
		{"gpu host of no known name", HostFacts{Name: "trn-01", GPUs: Present, RDMA: Absent}, "gpu-training"},
		{"every fact of a profile must hold", HostFacts{Name: "trn-01", GPUs: Present, RDMA: Present}, "rdma-gpu"},
		{"rdma alone is not a gpu host", HostFacts{Name: "stor-01", GPUs: Absent, RDMA: Present}, "cpu"},
		{"false wants the fact seen absent", HostFacts{Name: "db-01", GPUs: Absent}, "cpu"},
		{"unread snapshot meets no fact", HostFacts{Name: "db-01"}, ""},
		{"unknown gpus meets gpus: true in no profile", HostFacts{Name: "trn-01", RDMA: Present}, ""},
		// Names people gave are tried in every profile before any facts.
		{"a name beats facts", HostFacts{Name: "web-01", GPUs: Present, RDMA: Present}, "web-serving"},
		{"a group beats facts", HostFacts{Name: "trn-01", Groups: []string{"web"}, GPUs: Present}, "web-serving"},
		{"a hostname beats facts of an earlier profile", HostFacts{Name: "cpu-01", GPUs: Present, RDMA: Present}, "cpu"},
		{"gpu-* by name without facts", HostFacts{Name: "gpu-a-001"}, "gpu-training"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := s.Match(tt.host)
			if got != tt.want || ok != (tt.want != "") {
				t.Errorf("Match = %q, %v; want %q", got, ok, tt.want)
			}
		})
	}
	// Inventory still wins over facts.
	if got, err := s.FleetOf(HostFacts{Name: "trn-01", Fleet: "web-serving", GPUs: Present}); err != nil || got != "web-serving" {
		t.Errorf("FleetOf with an inventory fleet = %q, %v; want web-serving", got, err)
	}
	if diff := cmp.Diff([]string{"rdma-gpu", "cpu", "gpu-training", "web-serving"}, s.MatchOrder()); diff != "" {
		t.Errorf("MatchOrder (-want +got):\n%s", diff)
	}
}

func TestFactsKeysAreStrict(t *testing.T) {
	dir := writeDir(t, map[string]string{"a.yaml": "match:\n  facts:\n    gpu: true\n"})
	_, err := Load(false, dir)
	if !errors.Is(err, strictyaml.ErrUnknownKey) || !strings.Contains(err.Error(), `line 3: unknown key "gpu" in match.facts (known: gpus, rdma)`) {
		t.Errorf("Load = %v, want the unknown key gpu at line 3", err)
	}
}

// loadGuarded runs Load with a hang guard: a FIFO opened for reading
// without O_NONBLOCK blocks until a writer comes, which never happens here.
func loadGuarded(t *testing.T, paths ...string) (*Set, error) {
	t.Helper()
	type result struct {
		s   *Set
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := Load(true, paths...)
		done <- result{s, err}
	}()
	select {
	case r := <-done:
		return r.s, r.err
	case <-time.After(30 * time.Second):
		t.Fatal("Load blocked on a FIFO")
		return nil, nil
	}
}

func TestLoadPaths(t *testing.T) {
	t.Run("a file", func(t *testing.T) {
		dir := writeDir(t, map[string]string{"site.yml": "name: site\nincludes: [common]\nmatch: {hostnames: ['trn-*']}\n"})
		s, err := loadGuarded(t, filepath.Join(dir, "site.yml"))
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := s.Match(HostFacts{Name: "trn-01"}); got != "site" {
			t.Errorf("Match = %q, want site from the profile file", got)
		}
	})
	t.Run("a FIFO as the path", func(t *testing.T) {
		fifo := filepath.Join(t.TempDir(), "fleets.yaml")
		if err := syscall.Mkfifo(fifo, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := loadGuarded(t, fifo)
		if !errors.Is(err, safeio.ErrNotRegular) || !strings.Contains(err.Error(), fifo) {
			t.Errorf("Load = %v, want ErrNotRegular naming %s", err, fifo)
		}
	})
	t.Run("a FIFO in the directory", func(t *testing.T) {
		dir := writeDir(t, map[string]string{"a.yaml": "match: {groups: [a]}\n"})
		fifo := filepath.Join(dir, "b.yaml")
		if err := syscall.Mkfifo(fifo, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := loadGuarded(t, dir)
		if !errors.Is(err, safeio.ErrNotRegular) || !strings.Contains(err.Error(), "b.yaml") {
			t.Errorf("Load = %v, want ErrNotRegular naming b.yaml", err)
		}
	})
	t.Run("a symlink to a device", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero.yaml")); err != nil {
			t.Fatal(err)
		}
		if _, err := loadGuarded(t, dir); !errors.Is(err, safeio.ErrNotRegular) {
			t.Errorf("Load = %v, want ErrNotRegular", err)
		}
	})
	t.Run("too large", func(t *testing.T) {
		big := "name: big\nmatch: {groups: [a]}\n#" + strings.Repeat("x", maxProfileBytes) + "\n"
		dir := writeDir(t, map[string]string{"big.yaml": big})
		if _, err := loadGuarded(t, dir); !errors.Is(err, safeio.ErrTooLarge) {
			t.Errorf("Load = %v, want ErrTooLarge", err)
		}
	})
}

// library stands for the compiled built-in policies.
var library = Known{
	RuleIDs: []string{"hugetlb-cma-on-gpu", "memlock-too-low", "nccl-version-skew", "nccl-net-plugin-missing", "numa-balancing-enabled", "unknown-fleet"},
	Tags:    []string{"all", "gpu-training", "web-serving"},
	Params: []string{"baseline", "efa_devices_by_instance_type", "forbidden_boot_param_values", "forbidden_boot_params",
		"job_user", "max_map_count_min", "memlock_min_kb", "nccl_min_stack_safe", "nofile_min", "somaxconn_min"},
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name    string
		profile string
		known   Known
		want    []string // one line per error; nil: valid
	}{
		{"valid", "name: ok\nincludes: [gpu-training]\nrules:\n  include: [nccl-*, tag:web-serving, ok-*x]\n  exclude: [numa-balancing-enabled, 'tag:gpu-*']\n  severity: {unknown-fleet: high}\nparams: {memlock_min_kb: 1}\n",
			Known{RuleIDs: append(library.RuleIDs, "ok-x"), Tags: library.Tags, Params: library.Params}, nil},
		{"unknown param", "name: p\nincludes: [gpu-training]\nparams:\n  nofile_min: 1\n  memlock_min_kib: unlimited\n", library,
			[]string{`p.yaml:5: invalid fleet profile: params: no rule reads "memlock_min_kib" (did you mean "memlock_min_kb"?)`}},
		{"unknown param, nothing close", "params: {team_slack: '#ml'}\n", library,
			[]string{`p.yaml:1: invalid fleet profile: params: no rule reads "team_slack"`}},
		{"params not known", "params: {team_slack: '#ml'}\n", Known{RuleIDs: library.RuleIDs}, nil},
		{"unknown include and exclude ids", "rules:\n  include:\n  - tag:all\n  - hugetlb-cma-on-gpus\n  exclude: [nccl-versoin-*]\n", library,
			[]string{
				`p.yaml:4: invalid fleet profile: rules.include: "hugetlb-cma-on-gpus" matches no rule id (did you mean "hugetlb-cma-on-gpu"?)`,
				`p.yaml:5: invalid fleet profile: rules.exclude: "nccl-versoin-*" matches no rule id`,
			}},
		{"collection-error cannot be excluded", "rules:\n  include: [tag:all]\n  exclude:\n  - unknown-fleet\n  - collection-error\n", library,
			[]string{`p.yaml:5: invalid fleet profile: rules.exclude: collection-error cannot be excluded: a host or file that could not be read is always reported`}},
		{"unknown tag", "rules: {include: ['tag:gpu-trainig']}\n", library,
			[]string{`p.yaml:1: invalid fleet profile: rules.include: "tag:gpu-trainig" matches no rule tag (did you mean "tag:gpu-training"?)`}},
		{"a profile name is a tag", "rules: {include: ['tag:p']}\n", library, nil},
		{"unknown severity id", "rules:\n  severity:\n    memlock-to-low: low\n", library,
			[]string{`p.yaml:3: invalid fleet profile: rules.severity: no rule has id "memlock-to-low" (did you mean "memlock-too-low"?)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeDir(t, map[string]string{"p.yaml": tt.profile})
			s := mustLoad(t, true, dir)
			err := s.Check(tt.known)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Check = %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidProfile) {
				t.Fatalf("Check = %v, want ErrInvalidProfile", err)
			}
			got := strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), "")
			if diff := cmp.Diff(tt.want, strings.Split(got, "\n")); diff != "" {
				t.Errorf("Check (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckBuiltins(t *testing.T) {
	if err := mustLoad(t, true).Check(library); err != nil {
		t.Errorf("built-in profiles: %v", err)
	}
	// A built-in's lines are known too.
	err := mustLoad(t, true).Check(Known{Params: []string{"nofile_min"}})
	if err == nil || !strings.Contains(err.Error(), `builtin/common.yaml:10: invalid fleet profile: params: no rule reads "max_map_count_min"`) {
		t.Errorf("Check = %v, want builtin/common.yaml:10 for max_map_count_min", err)
	}
}
