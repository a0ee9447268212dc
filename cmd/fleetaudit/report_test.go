package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// --group-by lays out the table and Markdown; asked for with a format that
// ignores it, it is a usage error rather than silently dropped.
func TestReportGroupByWithAFormatThatIgnoresIt(t *testing.T) {
	for _, format := range []string{"json", "sarif", "junit", "prometheus", "html"} {
		r := runCLI(t, nil, "audit", "--snapshots", exampleSnapshots, "--format", format, "--group-by", "rule", "--fail-on", "none")
		want := "--group-by rule: --format " + format + " ignores it; it lays out markdown or table only"
		if r.code != exitError || !strings.Contains(r.stderr, want) {
			t.Errorf("--format %s --group-by rule: exit %d, want 2 with %q:\n%s", format, r.code, want, r.stderr)
		}
	}
	for _, format := range []string{"table", "markdown"} {
		if r := runCLI(t, nil, "audit", "--snapshots", exampleSnapshots, "--format", format, "--group-by", "rule", "--fail-on", "none"); r.code != exitOK {
			t.Errorf("--format %s --group-by rule: exit %d\n%s", format, r.code, r.stderr)
		}
	}
}

// twoNights records the example fleet twice without an inventory: web-04
// joins on the second night, web-03 leaves, and the GPU hosts turn NUMA
// balancing off.
func twoNights(t *testing.T) map[string]string {
	t.Helper()
	env := map[string]string{"XDG_DATA_HOME": t.TempDir(), "HOME": t.TempDir()}
	for night, numa := range []string{"1", "0"} {
		dir := nightlyFleet(t, numa)
		gone := []string{"web-04.json", "web-03.json"}[night]
		if err := os.Remove(filepath.Join(dir, gone)); err != nil {
			t.Fatal(err)
		}
		r := runCLI(t, env, "audit", "--record", "--snapshots", dir, "--format", "json", "-o", filepath.Join(t.TempDir(), "out.json"))
		if r.code != exitFindings {
			t.Fatalf("audit --record: exit %d\n%s", r.code, r.stderr)
		}
	}
	return env
}

// The report says what changed since the previous run: new and resolved
// findings, facts changed with the file that set them, hosts added and
// gone; and per open finding how long it has been open.
func TestReportSaysWhatChanged(t *testing.T) {
	env := twoNights(t)
	r := runCLI(t, env, "report", "--format", "markdown")
	if r.code != exitOK {
		t.Fatalf("report: exit %d\n%s", r.code, r.stderr)
	}
	md := r.stdout
	for _, want := range []string{
		"#### Changed since run 1 (",
		"4 new findings, 8 resolved, 8 facts changed on 8 hosts, 1 host added, 1 gone.",
		"**New findings**",
		"| medium | `thp-always`<br>Transparent hugepages always on a web server | web-serving | 1: web-04 |",
		"**Resolved findings**",
		"| low | `numa-balancing-enabled`<br>Automatic NUMA balancing on a training host | gpu-training | 8: gpu-a-[001-008] |",
		"| `sysctl.running.kernel.numa_balancing` | 1 → 0 | `/proc/sys/kernel/numa_balancing` | 8: gpu-a-[001-008] |",
		"**Hosts added:**\n\n- web-serving: web-04\n",
		"**Hosts gone:**\n\n- web-serving: web-03\n",
		// web-03's findings left with it: not resolved, not known.
		"4 findings of the previous run could not be looked for again",
		// Open in both runs, recorded within a minute.
		"<br>_open since run 1 (",
		"| web-04 | `thp-always` | ",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the Markdown report lacks %q:\n%s", want, md)
		}
	}
	if !strings.Contains(md[strings.Index(md, "| web-04 | `thp-always` | "):], "<br>_new_") {
		t.Errorf("web-04's finding is not new:\n%s", md)
	}

	out := filepath.Join(t.TempDir(), "report.html")
	if r := runCLI(t, env, "report", "--format", "html", "-o", out); r.code != exitOK {
		t.Fatalf("report html: exit %d\n%s", r.code, r.stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	html := string(data)
	for _, want := range []string{
		`<section id="changes">`,
		`<tr class="change-resolved" data-rule="numa-balancing-enabled" data-fleet="gpu-training" data-hosts="8">`,
		`<tr class="change-new" data-rule="thp-always" data-fleet="web-serving" data-hosts="1">`,
		`<tr class="change-fact" data-fact="sysctl.running.kernel.numa_balancing" data-hosts="8">`,
		`<li class="mono change-added">web-serving: web-04</li>`,
		`<li class="mono change-gone">web-serving: web-03</li>`,
		`<div class="open-for">open since run 1 (`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("the HTML report lacks %s", want)
		}
	}

	// Both runs were recorded within a minute: the trend chart still
	// labels them apart.
	labels := regexp.MustCompile(`<text x="[0-9.]+" y="[0-9.]+" text-anchor="middle">([^<]*)</text>`).FindAllStringSubmatch(html, -1)
	if len(labels) != 2 || labels[0][1] == labels[1][1] {
		t.Errorf("trend chart x labels %q, want two distinct", labels)
	}

	// The first run has nothing to compare with.
	r = runCLI(t, env, "report", "--format", "markdown", "--run", "1")
	if r.code != exitOK || strings.Contains(r.stdout, "Changed since") || strings.Contains(r.stdout, "_open") {
		t.Errorf("report of the first run: exit %d\n%s", r.code, r.stdout)
	}
}

// Pod controls count only the hosts whose pods were read: one host
// collected with the pods of a manifest, seven without any pod source.
func TestReportPodControlsCountHostsWithPods(t *testing.T) {
	dir := t.TempDir()
	r := runCLI(t, nil, "collect", "--root", gpuRoot, "--pods", shmManifest, "-o", filepath.Join(dir, "gpu-a-001.json"))
	if r.code != exitOK {
		t.Fatalf("collect: exit %d\n%s", r.code, r.stderr)
	}
	for i := 2; i <= 8; i++ {
		name := "gpu-a-00" + string(rune('0'+i)) + ".json"
		data, err := os.ReadFile(filepath.Join(exampleSnapshots, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "report.html")
	r = runCLI(t, nil, "audit", "--snapshots", dir, "--format", "html", "--fail-on", "none", "-o", out)
	if r.code != exitOK {
		t.Fatalf("audit: exit %d\n%s", r.code, r.stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	html := string(data)
	for _, want := range []string{
		// The Deployment's /dev/shm is unbounded: the one host with pods fails.
		`<tr class="control" data-rule="pod-shm-unbounded" data-failing="1" data-checked="1">`,
		// Its pods are otherwise clean: checked on that host alone.
		`<tr class="control" data-rule="pod-shm-missing" data-failing="0" data-checked="1">`,
		// A host rule that also reads pods' environments still judges every host.
		`data-rule="efa-nccl-env" data-failing="0" data-checked="8">`,
		`of 8 hosts read`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("the report lacks %s", want)
		}
	}
}
