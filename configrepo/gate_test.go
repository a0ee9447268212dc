package configrepo

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetaudit/fleetaudit/fleets"
	"github.com/fleetaudit/fleetaudit/internal/gittest"
	"github.com/fleetaudit/fleetaudit/inventory"
	"github.com/fleetaudit/fleetaudit/policies"
)

// gitRepo is a real git repository in a temporary directory; package
// tests add their own helpers to it.
type gitRepo struct{ *gittest.Repo }

func newGitRepo(tb testing.TB) *gitRepo { return &gitRepo{gittest.New(tb)} }

const hugetlbCMA = "GRUB_CMDLINE_LINUX_DEFAULT=\"$GRUB_CMDLINE_LINUX_DEFAULT hugetlb_cma=6G\"\n"

// baseRepo is two fleets sharing a base layer; the GPU fleet's baseline has
// RDMA devices, so hugetlb_cma on it is critical.
func baseRepo(t *testing.T) *gitRepo {
	t.Helper()
	r := newGitRepo(t)
	baseline, err := os.ReadFile("../examples/config-repo/baselines/gpu-training.json")
	if err != nil {
		t.Fatal(err)
	}
	r.Write("baselines/gpu.json", string(baseline))
	r.Write(ManifestFile, `fleets:
  gpu-training: {layers: [base, gpu], baseline: baselines/gpu.json}
  web-serving: {layers: [base, web]}
`)
	r.Write("layers/base/etc/default/grub", "GRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\n")
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

func gate(t *testing.T, r *gitRepo, base, head string) *Result {
	t.Helper()
	res, err := Run(context.Background(), Options{Repo: r.Dir, Base: base, Head: head, Fleets: testFleets(t)})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func fleetResult(t *testing.T, res *Result, name string) FleetResult {
	t.Helper()
	for _, f := range res.Fleets {
		if f.Fleet == name {
			return f
		}
	}
	t.Fatalf("no fleet %s in %+v", name, res.Fleets)
	return FleetResult{}
}

func rules(fs []policies.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Rule)
	}
	return out
}

func TestSharedLayerChangeReachesOnlyTheFleetItHarms(t *testing.T) {
	r := baseRepo(t)
	base := r.Git("rev-parse", "HEAD")
	r.Write("layers/base/etc/default/grub.d/60-hugetlb.cfg", "# for the web servers\n"+hugetlbCMA)
	head := r.Commit("reserve CMA for hugepages")

	res := gate(t, r, base, head)
	gpu, web := fleetResult(t, res, "gpu-training"), fleetResult(t, res, "web-serving")
	if diff := cmp.Diff([]string{"hugetlb-cma-on-gpu"}, rules(gpu.Introduced)); diff != "" {
		t.Errorf("gpu-training introduced (-want +got):\n%s", diff)
	}
	f := gpu.Introduced[0]
	if f.Severity != "critical" || f.Fleet != "gpu-training" {
		t.Errorf("finding %s %s, want critical in gpu-training (RDMA devices in the baseline)", f.Severity, f.Fleet)
	}
	var cited []string
	for _, e := range f.Evidence {
		if e.Source != "" {
			cited = append(cited, e.Source)
		}
	}
	if !slices.Contains(cited, "layers/base/etc/default/grub.d/60-hugetlb.cfg:2") {
		t.Errorf("finding cites %v, want the base layer's file and line", cited)
	}
	if len(web.Introduced) != 0 {
		t.Errorf("web-serving introduced %v, want nothing", rules(web.Introduced))
	}
	for _, fr := range []FleetResult{gpu, web} {
		if fr.Status != "changed" || !slices.Equal(fr.Changed, []string{"layers/base/etc/default/grub.d/60-hugetlb.cfg"}) {
			t.Errorf("%s: status %s changed %v", fr.Fleet, fr.Status, fr.Changed)
		}
	}
	if got := res.Summary; got.Introduced != 1 || !slices.Equal(got.FleetsAffected, []string{"gpu-training", "web-serving"}) {
		t.Errorf("summary %+v", got)
	}
	if res.MaxIntroducedRank() != policies.SeverityRank("critical") {
		t.Errorf("max introduced rank %d", res.MaxIntroducedRank())
	}

	// A file of the same name in the GPU layer replaces the shared one.
	r.Write("layers/gpu/etc/default/grub.d/60-hugetlb.cfg", "# no CMA on RDMA nodes\n")
	fixed := r.Commit("keep hugetlb_cma off the training nodes")
	res = gate(t, r, head, fixed)
	gpu, web = fleetResult(t, res, "gpu-training"), fleetResult(t, res, "web-serving")
	if diff := cmp.Diff([]string{"hugetlb-cma-on-gpu"}, rules(gpu.Resolved)); diff != "" {
		t.Errorf("gpu-training resolved (-want +got):\n%s", diff)
	}
	if len(gpu.Introduced) != 0 || web.Status != "unchanged" || len(web.Changed) != 0 {
		t.Errorf("override: gpu introduced %v, web %s %v", rules(gpu.Introduced), web.Status, web.Changed)
	}
}

func TestRenamedFileKeepsItsFindingUnchanged(t *testing.T) {
	r := baseRepo(t)
	r.Write("layers/base/etc/default/grub.d/60-hugetlb.cfg", hugetlbCMA)
	base := r.Commit("cma")
	r.Git("mv", "layers/base/etc/default/grub.d/60-hugetlb.cfg", "layers/base/etc/default/grub.d/70-memory.cfg")
	head := r.Commit("rename")

	gpu := fleetResult(t, gate(t, r, base, head), "gpu-training")
	if len(gpu.Introduced)+len(gpu.Resolved) != 0 {
		t.Fatalf("rename introduced %v resolved %v", rules(gpu.Introduced), rules(gpu.Resolved))
	}
	i := slices.IndexFunc(gpu.Unchanged, func(f policies.Finding) bool { return f.Rule == "hugetlb-cma-on-gpu" })
	if i < 0 {
		t.Fatalf("unchanged %v lacks hugetlb-cma-on-gpu", rules(gpu.Unchanged))
	}
	if where := gpu.Unchanged[i].Evidence; !slices.ContainsFunc(where, func(e policies.Evidence) bool {
		return e.Source == "layers/base/etc/default/grub.d/70-memory.cfg:1"
	}) {
		t.Errorf("unchanged finding cites %+v, want head's file", where)
	}
}

func TestSymlinkInALayerIsRefused(t *testing.T) {
	r := baseRepo(t)
	base := r.Git("rev-parse", "HEAD")
	secret := filepath.Join(t.TempDir(), "secret.conf")
	if err := os.WriteFile(secret, []byte("kernel.numa_balancing = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(r.Dir, "layers/gpu/etc/sysctl.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(r.Dir, "layers/gpu/etc/sysctl.d/99-outside.conf")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../../../../../etc/passwd", filepath.Join(r.Dir, "layers/web/etc/sysctl.d/99-up.conf")); err != nil {
		t.Fatal(err)
	}
	head := r.Commit("symlinks")

	for _, h := range []string{head, WorkTree} {
		res := gate(t, r, base, h)
		if len(res.Errors) != 2 {
			t.Fatalf("head %q: errors %+v, want one per fleet", h, res.Errors)
		}
		for _, e := range res.Errors {
			if !strings.Contains(e.Error, "99-") || !strings.Contains(e.Error, "symlink") {
				t.Errorf("error %q does not name the symlink", e.Error)
			}
		}
		gpu := fleetResult(t, res, "gpu-training")
		if slices.Contains(rules(gpu.Introduced), "numa-balancing-enabled") {
			t.Error("the symlink's target was read")
		}
		if !slices.Contains(rules(gpu.Introduced), "collection-error") {
			t.Errorf("gpu introduced %v, want a collection-error for the refused file", rules(gpu.Introduced))
		}
	}
}

func TestMalformedLayerFileIsAFindingAndOtherFleetsStillGate(t *testing.T) {
	r := baseRepo(t)
	base := r.Git("rev-parse", "HEAD")
	r.Write("layers/gpu/etc/security/limits.d/95-broken.conf", "* soft memlock\n\x00\x01garbage\n")
	r.Write("layers/web/etc/sysctl.d/90-backlog.conf", "net.core.somaxconn = 128\n")
	head := r.Commit("broken limits, low backlog")

	res := gate(t, r, base, head)
	if len(res.Errors) != 0 {
		t.Fatalf("errors %+v: a malformed file is a finding, not a failure", res.Errors)
	}
	gpu, web := fleetResult(t, res, "gpu-training"), fleetResult(t, res, "web-serving")
	i := slices.IndexFunc(gpu.Introduced, func(f policies.Finding) bool { return f.Rule == "collection-error" })
	if i < 0 {
		t.Fatalf("gpu introduced %v, want collection-error", rules(gpu.Introduced))
	}
	if !strings.Contains(gpu.Introduced[i].Message, "layers/gpu/etc/security/limits.d/95-broken.conf") {
		t.Errorf("collection-error %q does not name the repo file", gpu.Introduced[i].Message)
	}
	if !slices.Contains(rules(web.Introduced), "somaxconn-low") {
		t.Errorf("web introduced %v, want somaxconn-low", rules(web.Introduced))
	}
}

func TestWorkTreeHeadAndNewConfigRepo(t *testing.T) {
	r := newGitRepo(t)
	r.Write("README", "not a config repo yet\n")
	base := r.Commit("init")
	r.Write(ManifestFile, "fleets:\n  web-serving: {layers: [web]}\n")
	r.Write("layers/web/etc/sysctl.d/60.conf", "net.core.somaxconn = 1024\n")
	r.Write(".gitignore", "layers/web/etc/sysctl.d/ignored.conf\n")
	r.Write("layers/web/etc/sysctl.d/ignored.conf", "net.ipv4.tcp_tw_recycle = 1\n")

	res := gate(t, r, base, WorkTree)
	web := fleetResult(t, res, "web-serving")
	if web.Status != "added" || !slices.Equal(rules(web.Introduced), []string{"somaxconn-low"}) {
		t.Errorf("web %s introduced %v, want added with somaxconn-low only (ignored files are not rendered)", web.Status, rules(web.Introduced))
	}
	if res.Head.Ref != "work tree" || res.Base.Commit != base {
		t.Errorf("refs %+v %+v", res.Base, res.Head)
	}
}

func TestBrokenManifestAtBaseIsGatedAgainstNothing(t *testing.T) {
	r := baseRepo(t)
	r.Write(ManifestFile, "fleets:\n  web-serving: {layer: [web]}\n")
	base := r.Commit("typo in the manifest")
	r.Write(ManifestFile, "fleets:\n  web-serving: {layers: [base, web]}\n")
	r.Write("layers/web/etc/sysctl.d/90-low.conf", "net.core.somaxconn = 128\n")
	head := r.Commit("fix it")
	res := gate(t, r, base, head)
	web := fleetResult(t, res, "web-serving")
	if web.Status != "added" || !slices.Contains(rules(web.Introduced), "somaxconn-low") || len(res.Errors) != 0 {
		t.Errorf("status %s introduced %v errors %v", web.Status, rules(web.Introduced), res.Errors)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], `unknown key "layer"`) {
		t.Errorf("warnings %q: the report must say the base was counted as empty", res.Warnings)
	}
	// A broken manifest at head is an error: there is nothing to gate.
	r.Write(ManifestFile, "fleets:\n  web-serving: {layer: [web]}\n")
	if _, err := Run(context.Background(), Options{Repo: r.Dir, Base: head, Fleets: testFleets(t)}); err == nil || !strings.Contains(err.Error(), `unknown key "layer"`) {
		t.Errorf("broken head manifest: %v", err)
	}
}

func TestConfigRepoInASubdirectory(t *testing.T) {
	r := newGitRepo(t)
	r.Write("ops/fleet/"+ManifestFile, "fleets:\n  web-serving: {layers: [web]}\n")
	r.Write("ops/fleet/layers/web/etc/sysctl.d/60.conf", "net.core.somaxconn = 8192\n")
	base := r.Commit("init")
	r.Write("ops/fleet/layers/web/etc/sysctl.d/60.conf", "net.core.somaxconn = 512\n")
	head := r.Commit("lower")
	res, err := Run(context.Background(), Options{Repo: filepath.Join(r.Dir, "ops/fleet"), Base: base, Head: head, Fleets: testFleets(t)})
	if err != nil {
		t.Fatal(err)
	}
	web := fleetResult(t, res, "web-serving")
	if !slices.Equal(rules(web.Introduced), []string{"somaxconn-low"}) || !slices.Equal(web.Changed, []string{"layers/web/etc/sysctl.d/60.conf"}) {
		t.Errorf("introduced %v changed %v", rules(web.Introduced), web.Changed)
	}
}

func TestRenderCommandRunsOnlyWhenAllowed(t *testing.T) {
	r := newGitRepo(t)
	r.Write(ManifestFile, "fleets:\n  web-serving: {}\nrender:\n  command: [sh, render.sh]\n")
	r.Write("render.sh", `set -e
test "$FLEETAUDIT_FLEET" = web-serving
mkdir -p "$FLEETAUDIT_ROOT/etc/sysctl.d"
echo "net.core.somaxconn = 256" > "$FLEETAUDIT_ROOT/etc/sysctl.d/60.conf"
# A link in the rendered root resolves inside it, never to this machine's /etc.
ln -s /etc/sysctl.d/60.conf "$FLEETAUDIT_ROOT/etc/sysctl.d/70-link.conf"
`)
	head := r.Commit("rendered by a script")
	res, err := Run(context.Background(), Options{Repo: r.Dir, Base: head, Head: head, Fleets: testFleets(t)})
	if err != nil || len(res.Errors) != 2 || !strings.Contains(res.Errors[0].Error, "--allow-render-command") {
		t.Fatalf("without permission: err %v, errors %+v", err, res.Errors)
	}
	res, err = Run(context.Background(), Options{Repo: r.Dir, Base: head, Head: head, Fleets: testFleets(t), AllowRenderCommand: true})
	if err != nil || len(res.Errors) != 0 {
		t.Fatalf("allowed: err %v errors %+v", err, res.Errors)
	}
	web := fleetResult(t, res, "web-serving")
	if !slices.Equal(rules(web.Unchanged), []string{"somaxconn-low"}) {
		t.Errorf("unchanged %v, want the rendered somaxconn-low", rules(web.Unchanged))
	}
}

func TestGateErrors(t *testing.T) {
	r := baseRepo(t)
	for name, opts := range map[string]Options{
		"no base":     {Repo: r.Dir},
		"unknown ref": {Repo: r.Dir, Base: "no-such-branch"},
		"option ref":  {Repo: r.Dir, Base: "--output=/tmp/x"},
		"not a repo":  {Repo: t.TempDir(), Base: "HEAD"},
	} {
		opts.Fleets = testFleets(t)
		if _, err := Run(context.Background(), opts); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	r.Write(ManifestFile, "fleets:\n  gpu-training: {layers: [../../etc]}\n")
	_, err := Run(context.Background(), Options{Repo: r.Dir, Base: "HEAD", Fleets: testFleets(t)})
	if err == nil || !strings.Contains(err.Error(), `layer "../../etc"`) {
		t.Errorf("escaping layer: %v", err)
	}
	r.Write(ManifestFile, "fleets:\n  gpu-lab: {layers: [base]}\n")
	res, err := Run(context.Background(), Options{Repo: r.Dir, Base: "HEAD", Fleets: testFleets(t)})
	if err != nil || len(res.Errors) != 1 || !strings.Contains(res.Errors[0].Error, `no fleet profile "gpu-lab"`) {
		t.Errorf("unknown profile: %v %+v", err, res.Errors)
	}
}

func TestFleetThatCannotRenderComparesNothing(t *testing.T) {
	r := baseRepo(t)
	r.Write("layers/base/etc/default/grub.d/60-hugetlb.cfg", hugetlbCMA)
	base := r.Commit("cma")
	r.Write(ManifestFile, `fleets:
  gpu-training: {layers: [base, gpu-v2], baseline: baselines/gpu.json}
  web-serving: {layers: [base, web]}
`)
	head := r.Commit("a layer that does not exist")
	res := gate(t, r, base, head)
	gpu := fleetResult(t, res, "gpu-training")
	if gpu.Status != "error" || len(gpu.Resolved)+len(gpu.Introduced)+len(gpu.Unchanged) != 0 {
		t.Errorf("gpu-training: status %s, resolved %v, introduced %v", gpu.Status, rules(gpu.Resolved), rules(gpu.Introduced))
	}
	if len(res.Errors) != 1 || !strings.Contains(res.Errors[0].Error, "layers/gpu-v2: no such directory") {
		t.Errorf("errors %+v", res.Errors)
	}
	if web := fleetResult(t, res, "web-serving"); web.Status != "unchanged" {
		t.Errorf("web-serving: %s", web.Status)
	}
}

const shmJob = `apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pretrain, namespace: research}
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 4
      template:
        spec:
          containers:
          - name: pytorch
            image: train:1
            resources: {limits: {nvidia.com/gpu: 8, memory: 1600Gi}}
            volumeMounts: [{name: dshm, mountPath: /dev/shm}]
          volumes:
          - {name: dshm, emptyDir: {medium: Memory}}
`

func TestManifestsAreAuditedWithThePodRules(t *testing.T) {
	r := baseRepo(t)
	base := r.Git("rev-parse", "HEAD")
	r.Write("k8s/gpu-training/pretrain.yaml", shmJob)
	head := r.Commit("pretrain job")

	gpu := fleetResult(t, gate(t, r, base, head), "gpu-training")
	i := slices.IndexFunc(gpu.Introduced, func(f policies.Finding) bool { return f.Rule == "pod-shm-unbounded" })
	if i < 0 {
		t.Fatalf("introduced %v, want pod-shm-unbounded", rules(gpu.Introduced))
	}
	if src := gpu.Introduced[i].Evidence[0].Source; !strings.HasPrefix(src, "k8s/gpu-training/pretrain.yaml:") {
		t.Errorf("pod finding cites %q, want the manifest in the repo", src)
	}
	if !slices.Equal(gpu.Changed, []string{"k8s/gpu-training/pretrain.yaml"}) {
		t.Errorf("changed %v", gpu.Changed)
	}

	// A manifest read before it shifts the pod's index; the finding is the same.
	r.Write("k8s/gpu-training/00-inference.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: probe}\nspec:\n  containers: [{name: c, image: busybox}]\n")
	later := r.Commit("another manifest first")
	gpu = fleetResult(t, gate(t, r, head, later), "gpu-training")
	if len(gpu.Introduced) != 0 || len(gpu.Resolved) != 0 || !slices.Contains(rules(gpu.Unchanged), "pod-shm-unbounded") {
		t.Errorf("introduced %v resolved %v unchanged %v", rules(gpu.Introduced), rules(gpu.Resolved), rules(gpu.Unchanged))
	}
}

func TestJobRulesCompareTheRolesOfAManifest(t *testing.T) {
	r := baseRepo(t)
	job := strings.ReplaceAll(shmJob, "emptyDir: {medium: Memory}", "emptyDir: {medium: Memory, sizeLimit: 64Gi}")
	job = strings.Replace(job, "    Worker:", `    Master:
      replicas: 1
      template:
        spec:
          containers:
          - name: pytorch
            image: train:1
            resources: {limits: {nvidia.com/gpu: 8, memory: 1600Gi}}
            volumeMounts: [{name: dshm, mountPath: /dev/shm}]
          volumes:
          - {name: dshm, emptyDir: {medium: Memory, sizeLimit: 64Gi}}
    Worker:`, 1)
	r.Write("k8s/gpu-training/pretrain.yaml", job)
	base := r.Commit("pretrain job")
	r.Write("k8s/gpu-training/pretrain.yaml", strings.Replace(job, "image: train:1", "image: train:2", 1))
	head := r.Commit("new master image only")

	gpu := fleetResult(t, gate(t, r, base, head), "gpu-training")
	if got := rules(gpu.Introduced); !slices.Contains(got, "job-image-skew") {
		t.Errorf("introduced %v, want job-image-skew for a master on another image than its workers", got)
	}
}

func TestBlastRadiusCountsHostsByFleetAndLabels(t *testing.T) {
	m, err := ParseManifest([]byte(`fleets:
  gpu-training: {layers: [base, gpu]}
  h100-lab: {layers: [base, gpu], profile: gpu-training, labels: {pool: lab}}
  web-serving: {layers: [base, web]}
`))
	if err != nil {
		t.Fatal(err)
	}
	inv, err := inventory.Parse("hosts.ini", []byte(`[gpu]
gpu-a-[01:10]
[gpu:vars]
fleetaudit_fleet=gpu-training
[lab]
lab-[1:3] fleetaudit_labels='{"pool": "lab"}'
[web]
web-[01:04]
`))
	if err != nil {
		t.Fatal(err)
	}
	got := hostCounts(testFleets(t), inv, m)
	// Labels pick the lab fleet's hosts although it shares gpu-training's
	// profile; the web hosts match web-serving's profile by name.
	want := map[string]int{"gpu-training": 10, "h100-lab": 3, "web-serving": 4}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("host counts (-want +got):\n%s", diff)
	}
}

// A plan host the runner could not evaluate leaves the gate incomplete,
// as a fleet side not gated in full does; hosts left out for being stale,
// unread or matched by no fleet do not.
func TestIncompleteCountsHostsThatCouldNotBePlanned(t *testing.T) {
	quiet := &Result{Plan: &Plan{NotPlanned: []NotPlanned{
		{Host: "gpu-1", Reason: "stale"}, {Host: "gpu-2", Reason: "unread"}, {Host: "db-1", Reason: "no-fleet"}, {Host: "gpu-3", Reason: "duplicate"},
	}}}
	if err := quiet.Incomplete(); err != nil {
		t.Errorf("stale, unread, unmatched and duplicate hosts: %v", err)
	}
	failed := &Result{Plan: &Plan{NotPlanned: []NotPlanned{
		{Host: "gpu-1", Reason: "stale"}, {Host: "gpu-4", Reason: "error", Detail: "rule mtu-skew ran past 10s"}, {Host: "gpu-5", Reason: "error"},
	}}}
	if err := failed.Incomplete(); err == nil || err.Error() != "2 hosts could not be planned (see the report)" {
		t.Errorf("hosts that could not be evaluated: %v", err)
	}
	both := &Result{Errors: []FleetError{{}}, Plan: failed.Plan}
	if err := both.Incomplete(); err == nil || err.Error() != "1 fleet side could not be gated in full; 2 hosts could not be planned (see the report)" {
		t.Errorf("a fleet side and hosts: %v", err)
	}
	if err := (&Result{}).Incomplete(); err != nil {
		t.Errorf("a complete gate: %v", err)
	}
}
