package remediate

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetaudit/fleetaudit/configrepo"
	"github.com/fleetaudit/fleetaudit/fleets"
	"github.com/fleetaudit/fleetaudit/internal/gittest"
	"github.com/fleetaudit/fleetaudit/policies"
)

// gitRepo is a real git repository in a temporary directory; package
// tests add their own helpers to it.
type gitRepo struct{ *gittest.Repo }

func newGitRepo(tb testing.TB) *gitRepo { return &gitRepo{gittest.New(tb)} }

const (
	cma6G      = "GRUB_CMDLINE_LINUX_DEFAULT=\"$GRUB_CMDLINE_LINUX_DEFAULT hugetlb_cma=6G\"\n"
	twoFleets  = "fleets:\n  gpu-training: {layers: [base, gpu], baseline: baselines/gpu.json}\n  web-serving: {layers: [base, web]}\n"
	ruleCMA    = "hugetlb-cma-on-gpu"
	fixCMAPath = "layers/gpu/etc/default/grub.d/99-fleetaudit.cfg"
	fixCMALine = "GRUB_CMDLINE_LINUX_DEFAULT=\"$GRUB_CMDLINE_LINUX_DEFAULT hugetlb_cma=0\""
)

// cmaRepo is the hugetlb_cma incident: two fleets share a base layer, and
// hugetlb_cma=6G sits in it. The GPU fleet's baseline has RDMA devices.
func cmaRepo(t *testing.T, manifest string) *gitRepo {
	t.Helper()
	r := newGitRepo(t)
	baseline, err := os.ReadFile("../examples/config-repo/baselines/gpu-training.json")
	if err != nil {
		t.Fatal(err)
	}
	r.Write("baselines/gpu.json", string(baseline))
	r.Write(configrepo.ManifestFile, manifest)
	r.Write("layers/base/etc/default/grub", "GRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\n")
	r.Write("layers/base/etc/default/grub.d/60-cma.cfg", cma6G)
	r.Write("layers/base/etc/sysctl.d/10-base.conf", "kernel.panic = 10\n")
	r.Write("layers/gpu/etc/security/limits.d/90-rdma.conf", "* soft memlock unlimited\n* hard memlock unlimited\n")
	r.Write("layers/gpu/etc/systemd/logind.conf.d/90-nccl.conf", "[Login]\nRemoveIPC=no\n")
	r.Write("layers/web/etc/sysctl.d/60-net.conf", "net.core.somaxconn = 8192\n")
	r.Commit("base")
	return r
}

func testFleets(t *testing.T) *fleets.Set {
	t.Helper()
	set, err := fleets.Load(true)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func plan(t *testing.T, r *gitRepo, opts Options) *Plan {
	t.Helper()
	opts.Repo, opts.Fleets = r.Dir, testFleets(t)
	p, err := MakePlan(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func onlyGroup(t *testing.T, p *Plan) *Group {
	t.Helper()
	if len(p.Groups) != 1 {
		var names []string
		for _, g := range p.Groups {
			names = append(names, g.Rule+"/"+g.Fleet)
		}
		t.Fatalf("want one group, got %v (skipped %+v)", names, p.Skipped)
	}
	return p.Groups[0]
}

func proposal(t *testing.T, g *Group) *Proposal {
	t.Helper()
	if g.Proposal == nil {
		t.Fatalf("%s/%s refused: %s", g.Rule, g.Fleet, g.Refused)
	}
	return g.Proposal
}

// applyAndGate applies the proposal's diff to the repo's work tree with
// real git and gates base -> work tree.
func applyAndGate(t *testing.T, r *gitRepo, prop *Proposal) *configrepo.Result {
	t.Helper()
	patch := filepath.Join(t.TempDir(), "fix.patch")
	if err := os.WriteFile(patch, []byte(prop.Diff), 0o644); err != nil {
		t.Fatal(err)
	}
	r.Git("apply", "--check", patch)
	r.Git("apply", patch)
	for _, fc := range prop.Files {
		if got := r.Read(fc.Path); got != string(fc.Content) {
			t.Errorf("%s after git apply:\n%s\nwant:\n%s", fc.Path, got, fc.Content)
		}
	}
	res, err := configrepo.Run(context.Background(), configrepo.Options{Repo: r.Dir, Base: "HEAD", Head: configrepo.WorkTree, Fleets: testFleets(t)})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func rulesOf(fs []policies.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Rule)
	}
	return out
}

func fleetResult(t *testing.T, res *configrepo.Result, name string) configrepo.FleetResult {
	t.Helper()
	for _, f := range res.Fleets {
		if f.Fleet == name {
			return f
		}
	}
	t.Fatalf("fleet %s not in the result", name)
	return configrepo.FleetResult{}
}

// The incident: hugetlb_cma=6G in the shared base. The override goes to
// the GPU fleet's own layer, resolves the finding there and leaves the web
// fleet as it was; the diff applies with git apply and, applied, the gate
// agrees.
func TestPlanSharedBaseOverrideGoesToGPULayer(t *testing.T) {
	r := cmaRepo(t, twoFleets)
	p := plan(t, r, Options{Rule: ruleCMA})
	g := onlyGroup(t, p)
	prop := proposal(t, g)
	if g.Fleet != "gpu-training" || g.Placement.Layer != "gpu" || g.Placement.NewLayer {
		t.Fatalf("placement: %+v", g.Placement)
	}
	if diff := cmp.Diff([]string{fixCMAPath}, g.Placement.Paths()); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	if got := string(prop.Files[0].Content); !strings.HasSuffix(got, "\n"+fixCMALine+"\n") || !strings.HasPrefix(got, "# Written by fleetaudit") {
		t.Errorf("drop-in:\n%s", got)
	}
	if prop.Branch != "fleetaudit/fix/hugetlb-cma-on-gpu/gpu-training" || prop.BaseCommit != r.Git("rev-parse", "HEAD") {
		t.Errorf("branch %s base %s", prop.Branch, prop.BaseCommit)
	}
	if !strings.HasPrefix(prop.Diff, "diff --git a/"+fixCMAPath+" b/"+fixCMAPath+"\nnew file mode 100644\n") {
		t.Errorf("diff:\n%s", prop.Diff)
	}
	for _, want := range []string{"resolved in gpu-training: hugetlb-cma-on-gpu", "fleet web-serving: unchanged", "introduced in any fleet: nothing"} {
		if !slices.ContainsFunc(g.Proof, func(l string) bool { return strings.HasPrefix(l, want) }) {
			t.Errorf("proof lacks %q:\n%s", want, strings.Join(g.Proof, "\n"))
		}
		if !strings.Contains(prop.Body, want) {
			t.Errorf("body lacks %q", want)
		}
	}
	res := applyAndGate(t, r, prop)
	if got := rulesOf(fleetResult(t, res, "gpu-training").Resolved); !slices.Contains(got, ruleCMA) {
		t.Errorf("applied: gpu-training resolved %v", got)
	}
	if web := fleetResult(t, res, "web-serving"); web.Status != "unchanged" || len(web.Introduced)+len(web.Resolved) > 0 {
		t.Errorf("applied: web-serving %+v", web)
	}
	if res.Summary.Introduced != 0 {
		t.Errorf("applied: introduced %d", res.Summary.Introduced)
	}
	// The user's work tree was not written by the plan: only git apply
	// above put the file there.
	if out := r.Git("status", "--porcelain", "-uall"); out != "?? "+fixCMAPath {
		t.Errorf("status after apply: %q", out)
	}
}

// A fleet whose only layer is shared gets a layer of its own, appended to
// its stack in fleetaudit.yaml with the file's comments and layout kept.
func TestPlanNewLayerEditsManifest(t *testing.T) {
	for _, tc := range []struct {
		name, manifest, want string
		diff                 []string
	}{{
		name: "block",
		manifest: `# Fleets of the lab.
fleets:
  gpu-training:
    # GPU nodes: base only, for now.
    layers:
      - base   # shared
    baseline: baselines/gpu.json
  web-serving:
    layers:
      - base
`,
		want: `# Fleets of the lab.
fleets:
  gpu-training:
    # GPU nodes: base only, for now.
    layers:
      - base   # shared
      - gpu-training
    baseline: baselines/gpu.json
  web-serving:
    layers:
      - base
`,
		diff: []string{"+      - gpu-training\n"},
	}, {
		name: "flow",
		manifest: `fleets:
  gpu-training: {layers: [base], baseline: baselines/gpu.json}  # gpu
  web-serving: {layers: ["base"]}
`,
		want: `fleets:
  gpu-training: {layers: [base, gpu-training], baseline: baselines/gpu.json}  # gpu
  web-serving: {layers: ["base"]}
`,
		diff: []string{
			"-  gpu-training: {layers: [base], baseline: baselines/gpu.json}  # gpu\n",
			"+  gpu-training: {layers: [base, gpu-training], baseline: baselines/gpu.json}  # gpu\n",
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r := cmaRepo(t, tc.manifest)
			g := onlyGroup(t, plan(t, r, Options{Rule: ruleCMA}))
			prop := proposal(t, g)
			if g.Placement.Layer != "gpu-training" || !g.Placement.NewLayer {
				t.Fatalf("placement: %+v", g.Placement)
			}
			wantFiles := []string{configrepo.ManifestFile, "layers/gpu-training/etc/default/grub.d/99-fleetaudit.cfg"}
			if diff := cmp.Diff(wantFiles, g.Placement.Paths()); diff != "" {
				t.Errorf("files (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, string(g.Placement.Files[configrepo.ManifestFile])); diff != "" {
				t.Errorf("%s (-want +got):\n%s", configrepo.ManifestFile, diff)
			}
			// The manifest's diff is the one changed line.
			_, section, _ := strings.Cut(prop.Diff, "diff --git a/fleetaudit.yaml b/fleetaudit.yaml\n")
			section, _, _ = strings.Cut(section, "diff --git ")
			var changed []string
			for l := range strings.Lines(section) {
				if (l[0] == '-' || l[0] == '+') && !strings.HasPrefix(l, "---") && !strings.HasPrefix(l, "+++") {
					changed = append(changed, l)
				}
			}
			if diff := cmp.Diff(tc.diff, changed); diff != "" {
				t.Errorf("fleetaudit.yaml diff (-want +got):\n%s\n%s", diff, prop.Diff)
			}
			res := applyAndGate(t, r, prop)
			if got := rulesOf(fleetResult(t, res, "gpu-training").Resolved); !slices.Contains(got, ruleCMA) {
				t.Errorf("applied: gpu-training resolved %v", got)
			}
			if diff := cmp.Diff(tc.want, r.Read(configrepo.ManifestFile)); diff != "" {
				t.Errorf("applied %s (-want +got):\n%s", configrepo.ManifestFile, diff)
			}
		})
	}
}

// An existing fleetaudit drop-in is edited: the key replaced where it
// stands, other keys and comments kept, no second file.
func TestPlanEditsExistingDropin(t *testing.T) {
	r := cmaRepo(t, twoFleets)
	existing := "# Written by fleetaudit remediate: overrides for this layer's fleets.\n# pinned jobs\nvm.swappiness = 10\nkernel.numa_balancing = 1\nvm.max_map_count = 1048576\n"
	r.Write("layers/gpu/etc/sysctl.d/99-fleetaudit.conf", existing)
	r.Commit("numa balancing on")
	g := onlyGroup(t, plan(t, r, Options{Rule: "numa-balancing-enabled"}))
	prop := proposal(t, g)
	want := strings.Replace(existing, "kernel.numa_balancing = 1", "kernel.numa_balancing = 0", 1)
	if diff := cmp.Diff([]string{"layers/gpu/etc/sysctl.d/99-fleetaudit.conf"}, g.Placement.Paths()); diff != "" {
		t.Fatalf("files (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, string(prop.Files[0].Content)); diff != "" {
		t.Errorf("drop-in (-want +got):\n%s", diff)
	}
	var changed []string
	for l := range strings.Lines(prop.Diff) {
		if (l[0] == '-' || l[0] == '+') && !strings.HasPrefix(l, "---") && !strings.HasPrefix(l, "+++") {
			changed = append(changed, l)
		}
	}
	if diff := cmp.Diff([]string{"-kernel.numa_balancing = 1\n", "+kernel.numa_balancing = 0\n"}, changed); diff != "" {
		t.Errorf("diff is more than one line changed:\n%s", prop.Diff)
	}
	applyAndGate(t, r, prop)
}

// Refused cases: the reason is specific, nothing is proposed.
func TestPlanRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(r *gitRepo)
		opts  Options
		want  string
	}{{
		// The GPU fleet's last layer is shared with web-serving, which
		// also stacks gpu: a layer of its own cannot take the fleet's
		// name, which another fleet already uses.
		name: "only shared layers, name taken",
		setup: func(r *gitRepo) {
			r.Write(configrepo.ManifestFile, "fleets:\n  gpu-training: {layers: [base], baseline: baselines/gpu.json}\n  web-serving: {layers: [base, gpu-training]}\n")
			r.Write("layers/gpu-training/etc/hostname", "web\n")
		},
		opts: Options{Rule: ruleCMA},
		want: "the layer name gpu-training for its own layer is already used by fleet web-serving",
	}, {
		name: "remove a boot param",
		setup: func(r *gitRepo) {
			r.Write("layers/base/etc/default/grub.d/70-fast.cfg", "GRUB_CMDLINE_LINUX_DEFAULT=\"$GRUB_CMDLINE_LINUX_DEFAULT mitigations=off\"\n")
		},
		opts: Options{Rule: "mitigations-off"},
		want: "removing boot parameter mitigations: the kernel takes the last occurrence",
	}, {
		name: "render command",
		setup: func(r *gitRepo) {
			r.Write(configrepo.ManifestFile, twoFleets+"render: {command: [./render.sh]}\n")
		},
		opts: Options{Rule: ruleCMA},
		want: "",
	}, {
		// A shared layer later in the stack has a drop-in that sorts after
		// fleetaudit's: the override is placed where it does not win, and
		// the gate says so.
		name: "placed where it does not win",
		setup: func(r *gitRepo) {
			r.Write(configrepo.ManifestFile, "fleets:\n  gpu-training: {layers: [gpu, base], baseline: baselines/gpu.json}\n  web-serving: {layers: [base, web]}\n")
			r.Git("mv", "layers/base/etc/default/grub.d/60-cma.cfg", "layers/base/etc/default/grub.d/99-zz-cma.cfg")
		},
		opts: Options{Rule: ruleCMA},
		want: "the gate does not prove the fix: hugetlb-cma-on-gpu stays in fleet gpu-training",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r := cmaRepo(t, twoFleets)
			tc.setup(r)
			r.Commit(tc.name)
			opts := tc.opts
			opts.Repo, opts.Fleets = r.Dir, testFleets(t)
			p, err := MakePlan(context.Background(), opts)
			if tc.want == "" {
				// A render command is code from the repo: the gate will not
				// run it, and nothing is proposed.
				if err == nil || !strings.Contains(err.Error(), "render command") {
					t.Fatalf("want the render command refused, got %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			g := onlyGroup(t, p)
			if g.Proposal != nil || !strings.Contains(g.Refused, tc.want) {
				t.Errorf("refused = %q, want it to contain %q (proposal %v)", g.Refused, tc.want, g.Proposal != nil)
			}
			if out := r.Git("status", "--porcelain", "-uall"); out != "" {
				t.Errorf("work tree changed: %q", out)
			}
		})
	}
}

// Findings seen on live hosts are grouped by (rule, repo fleet), one
// proposal per group listing its hosts; findings without a fix or whose
// fleet is not in the repo are skipped with the reason.
func TestPlanFromAuditFindings(t *testing.T) {
	r := cmaRepo(t, twoFleets)
	cma := map[string]any{"kind": "boot-param", "set": map[string]any{"hugetlb_cma": "0"}}
	audit := []policies.Finding{
		{Rule: ruleCMA, Fleet: "gpu-training", Host: "gpu-a-002", Severity: "critical", Message: "hugetlb_cma=6G", Fix: cma},
		{Rule: ruleCMA, Fleet: "gpu-training", Host: "gpu-a-001", Severity: "critical", Message: "hugetlb_cma=6G", Fix: cma},
		{Rule: ruleCMA, Fleet: "gpu-training", Host: "gpu-a-001", Severity: "critical", Message: "again", Fix: cma},
		{Rule: "peermem-teardown-race", Fleet: "gpu-training", Host: "gpu-a-001", Severity: "high"},
		{Rule: ruleCMA, Fleet: "inference", Host: "inf-01", Severity: "critical", Fix: cma},
		{Rule: "numa-balancing-enabled", Fleet: "gpu-training", Host: "gpu-a-003", Severity: "medium",
			Fix: map[string]any{"kind": "sysctl", "set": map[string]any{"kernel.numa_balancing": "0"}}},
	}
	p := plan(t, r, Options{Audit: audit})
	var got []string
	for _, g := range p.Groups {
		got = append(got, g.Rule+"/"+g.Fleet+" "+strings.Join(g.Hosts, ","))
	}
	if diff := cmp.Diff([]string{"hugetlb-cma-on-gpu/gpu-training gpu-a-001,gpu-a-002", "numa-balancing-enabled/gpu-training gpu-a-003"}, got); diff != "" {
		t.Errorf("groups (-want +got):\n%s", diff)
	}
	prop := proposal(t, p.Groups[0])
	if diff := cmp.Diff([]string{"gpu-a-001", "gpu-a-002"}, prop.Hosts); diff != "" {
		t.Errorf("hosts (-want +got):\n%s", diff)
	}
	if !strings.Contains(prop.Body, "**Affected hosts** (2, from the audit): gpu-a-001, gpu-a-002") {
		t.Errorf("body:\n%s", prop.Body)
	}
	// The repo at base does not show numa balancing for gpu-training: the
	// hosts drifted from the repo, and no repo change is proven to help.
	if g := p.Groups[1]; g.Proposal != nil || !strings.Contains(g.Refused, "the repo at HEAD does not show numa-balancing-enabled for fleet gpu-training") {
		t.Errorf("numa group: refused %q", g.Refused)
	}
	want := []Skipped{
		{Rule: ruleCMA, Fleet: "inference", Hosts: []string{"inf-01"}, Reason: "fleet inference is not in the repo's fleetaudit.yaml (fleets: gpu-training, web-serving)"},
		{Rule: "peermem-teardown-race", Fleet: "gpu-training", Hosts: []string{"gpu-a-001"}, Reason: "no fix: the rule attaches no config change (its remediation is for people)"},
	}
	if diff := cmp.Diff(want, p.Skipped); diff != "" {
		t.Errorf("skipped (-want +got):\n%s", diff)
	}
}

func TestParseAudit(t *testing.T) {
	data, err := os.ReadFile("../cmd/fleetaudit/testdata/audit-example.json")
	if err != nil {
		t.Fatal(err)
	}
	fs, err := ParseAudit(data)
	if err != nil || len(fs) == 0 || fs[0].Fix == nil {
		t.Fatalf("ParseAudit: %d findings, %v", len(fs), err)
	}
	for _, bad := range []string{`{"schema": "fleetaudit.gate/v1"}`, `[]`, `{`} {
		if _, err := ParseAudit([]byte(bad)); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}

// Each kind's drop-in is read by the collectors with the precedence the
// placement counts on: the gate proves it, and the diff applies.
func TestPlanDropinKindsWin(t *testing.T) {
	for _, tc := range []struct {
		name, rule string
		setup      func(r *gitRepo)
		file, want string
	}{{
		name: "limits",
		rule: "memlock-too-low",
		setup: func(r *gitRepo) {
			r.Write("layers/gpu/etc/security/limits.d/90-rdma.conf", "*    soft    memlock    64\n*    hard    memlock    64\n")
		},
		file: "layers/gpu/etc/security/limits.d/99-fleetaudit.conf",
		want: "*    -    memlock    unlimited\n",
	}, {
		name: "logind",
		rule: "removeipc-enabled",
		setup: func(r *gitRepo) {
			r.Write("layers/gpu/etc/systemd/logind.conf.d/90-nccl.conf", "[Login]\nRemoveIPC=yes\n")
		},
		file: "layers/gpu/etc/systemd/logind.conf.d/99-fleetaudit.conf",
		want: "[Login]\nRemoveIPC=no\n",
	}, {
		name: "nccl-env",
		rule: "nccl-debug-env",
		setup: func(r *gitRepo) {
			r.Write("layers/gpu/etc/nccl.conf", "NCCL_IB_DISABLE=1\n")
		},
		file: "layers/gpu/etc/profile.d/99-fleetaudit.sh",
		want: "export NCCL_IB_DISABLE=0\n",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r := cmaRepo(t, twoFleets)
			tc.setup(r)
			r.Commit(tc.name)
			g := onlyGroup(t, plan(t, r, Options{Rule: tc.rule}))
			prop := proposal(t, g)
			if diff := cmp.Diff([]string{tc.file}, g.Placement.Paths()); diff != "" {
				t.Fatalf("files (-want +got):\n%s", diff)
			}
			if got := string(prop.Files[0].Content); !strings.HasPrefix(got, "# Written by fleetaudit") || !strings.HasSuffix(got, tc.want) {
				t.Errorf("%s:\n%s", tc.file, got)
			}
			res := applyAndGate(t, r, prop)
			if got := rulesOf(fleetResult(t, res, "gpu-training").Resolved); !slices.Contains(got, tc.rule) {
				t.Errorf("applied: gpu-training resolved %v", got)
			}
		})
	}
}
