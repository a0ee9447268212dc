package disttest

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/fleetaudit/fleetaudit/internal/gittest"
	"github.com/fleetaudit/fleetaudit/reports"
)

// actionMeta is the part of action.yml the tests read.
type actionMeta struct {
	Runs struct {
		Using string `yaml:"using"`
		Steps []struct {
			Name  string            `yaml:"name"`
			ID    string            `yaml:"id"`
			Run   string            `yaml:"run"`
			Shell string            `yaml:"shell"`
			Env   map[string]string `yaml:"env"`
		} `yaml:"steps"`
	} `yaml:"runs"`
}

func readAction(t *testing.T) actionMeta {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(moduleRoot(t), "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var m actionMeta
	if err := yaml.Unmarshal(data, &m); err != nil {
		t.Fatalf("action.yml: %v", err)
	}
	if m.Runs.Using != "composite" || len(m.Runs.Steps) == 0 {
		t.Fatalf("action.yml: runs.using %q with %d steps, want a composite action", m.Runs.Using, len(m.Runs.Steps))
	}
	return m
}

// TestActionlintIsClean lints the workflows as GitHub reads them: the
// dogfood workflow uses the action at ./, so actionlint checks action.yml's
// inputs and outputs against it; with shellcheck on PATH it also checks
// every workflow run: script.
func TestActionlintIsClean(t *testing.T) {
	actionlint := requireTool(t, "actionlint", "make tools")
	shellcheck := requireTool(t, "shellcheck", "apt-get install shellcheck")
	root := moduleRoot(t)
	cmd := exec.Command(actionlint, "-shellcheck", shellcheck,
		".github/workflows/gate-action.yml", "docs/examples/fleetaudit-gate.yml")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil || len(out) != 0 {
		t.Fatalf("actionlint: %v\n%s", err, out)
	}
}

// TestActionScriptsAreShellchecked: actionlint does not read a composite
// action's scripts, so each is checked here. No script interpolates an
// expression (${{ }}): inputs reach them through env, never as shell text.
func TestActionScriptsAreShellchecked(t *testing.T) {
	shellcheck := requireTool(t, "shellcheck", "apt-get install shellcheck")
	for _, step := range readAction(t).Runs.Steps {
		if step.Run == "" {
			continue
		}
		if strings.Contains(step.Run, "${{") {
			t.Errorf("step %q: run interpolates an expression; pass it through env", step.Name)
		}
		if step.Shell != "bash" {
			t.Errorf("step %q: shell %q, want bash", step.Name, step.Shell)
		}
		cmd := exec.Command(shellcheck, "--shell=bash", "-")
		cmd.Stdin = strings.NewReader(step.Run)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("step %q: shellcheck: %v\n%s", step.Name, err, out)
		}
	}
}

// TestActionGateStepStopsTheIncident runs the action's own scripts, as the
// runner would, with a real fleetaudit and git on a scratch config repo
// whose last commit plants the incident: the job summary holds the report,
// the outputs name the files, and the last step fails the job.
func TestActionGateStepStopsTheIncident(t *testing.T) {
	if testing.Short() {
		t.Skip("builds fleetaudit")
	}
	gittest.Require(t)
	root := moduleRoot(t)
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "fleetaudit"), "./cmd/fleetaudit")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	repo := gittest.New(t)
	copyTree(t, filepath.Join(root, "examples", "config-repo"), repo.Dir)
	base := repo.Commit("fleet configuration")
	repo.Write("layers/base/etc/default/grub.d/60-hugetlb.cfg",
		"GRUB_CMDLINE_LINUX_DEFAULT=\"$GRUB_CMDLINE_LINUX_DEFAULT hugetlb_cma=6G\"\n")
	repo.Commit("hugetlb_cma for the web servers")

	runner := t.TempDir()
	files := map[string]string{"GITHUB_OUTPUT": "output", "GITHUB_STEP_SUMMARY": "summary"}
	env := append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "RUNNER_TEMP="+runner)
	for k, f := range files {
		files[k] = filepath.Join(runner, f)
		env = append(env, k+"="+files[k])
	}
	sarif := "false"
	if slices.Contains(reports.GateFormats(), "sarif") {
		sarif = "true"
	}
	inputs := map[string]string{
		"BASE": base, "HEAD_REF": "HEAD", "REPO": repo.Dir, "FAIL_ON": "high", "FORMAT": "json", "ARGS": "", "SARIF": sarif,
		"STORE": "", "SNAPSHOTS": "", "MAX_AGE": "48h",
	}
	steps := readAction(t).Runs.Steps
	runStep := func(name string, values map[string]string) (int, string) {
		t.Helper()
		for _, s := range steps {
			if s.Name != name {
				continue
			}
			stepEnv := slices.Clone(env)
			for k := range s.Env {
				v, ok := values[k]
				if !ok {
					t.Fatalf("step %q: env %s has no value in the test", name, k)
				}
				stepEnv = append(stepEnv, k+"="+v)
			}
			cmd := exec.Command("bash", "-e", "-c", s.Run)
			cmd.Env = stepEnv
			out, err := cmd.CombinedOutput()
			if ee, ok := err.(*exec.ExitError); ok {
				return ee.ExitCode(), string(out)
			} else if err != nil {
				t.Fatal(err)
			}
			return 0, string(out)
		}
		t.Fatalf("action.yml has no step %q", name)
		return 0, ""
	}

	if code, out := runStep("Gate the change", inputs); code != 0 {
		t.Fatalf("gate step: exit %d\n%s", code, out)
	}
	outputs := map[string]string{}
	data, _ := os.ReadFile(files["GITHUB_OUTPUT"])
	for line := range strings.Lines(string(data)) {
		k, v, _ := strings.Cut(strings.TrimSpace(line), "=")
		outputs[k] = v
	}
	if outputs["exit-code"] != "1" {
		t.Errorf("exit-code output %q, want 1", outputs["exit-code"])
	}
	summary, _ := os.ReadFile(files["GITHUB_STEP_SUMMARY"])
	if !strings.Contains(string(summary), "hugetlb-cma-on-gpu") || !strings.Contains(string(summary), "60-hugetlb.cfg") {
		t.Errorf("job summary lacks the finding:\n%s", summary)
	}
	report, err := os.ReadFile(outputs["report"])
	if err != nil || !strings.HasPrefix(strings.TrimSpace(string(report)), "{") || !strings.Contains(string(report), "hugetlb-cma-on-gpu") {
		t.Errorf("report output %q: %v\n%.300s", outputs["report"], err, report)
	}
	if sarif == "true" {
		if data, err := os.ReadFile(outputs["sarif"]); err != nil || !strings.Contains(string(data), `"2.1.0"`) {
			t.Errorf("sarif output %q: %v", outputs["sarif"], err)
		}
	}

	code, out := runStep("Fail on what the change introduces", map[string]string{"STATUS": outputs["exit-code"], "FAIL_ON": "high"})
	if code != 1 || !strings.Contains(out, "::error::") {
		t.Errorf("last step with the incident: exit %d\n%s", code, out)
	}
	if code, out := runStep("Fail on what the change introduces", map[string]string{"STATUS": "0", "FAIL_ON": "high"}); code != 0 {
		t.Errorf("last step on a clean change: exit %d\n%s", code, out)
	}
	// A push that creates a branch has no base: a clear error, not a gate
	// of everything.
	inputs["BASE"] = "0000000000000000000000000000000000000000"
	if code, out := runStep("Gate the change", inputs); code != 2 || !strings.Contains(out, "no base commit") {
		t.Errorf("all-zero base: exit %d\n%s", code, out)
	}
}

// TestActionGatePlansPerHost runs the action's gate step with the
// snapshots input: the job summary holds the per-host plan, naming the
// hosts the incident newly fails.
func TestActionGatePlansPerHost(t *testing.T) {
	if testing.Short() {
		t.Skip("builds fleetaudit")
	}
	gittest.Require(t)
	root := moduleRoot(t)
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "fleetaudit"), "./cmd/fleetaudit")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	snaps := t.TempDir()
	gen := exec.Command("go", "run", "examples/config-repo/fleet/generate.go", snaps)
	gen.Dir = root
	if out, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("generating the example fleet: %v\n%s", err, out)
	}
	repo := gittest.New(t)
	copyTree(t, filepath.Join(root, "examples", "config-repo"), repo.Dir)
	os.RemoveAll(filepath.Join(repo.Dir, "fleet"))
	base := repo.Commit("fleet configuration")
	repo.Write("layers/base/etc/default/grub.d/60-hugetlb.cfg",
		"GRUB_CMDLINE_LINUX_DEFAULT=\"$GRUB_CMDLINE_LINUX_DEFAULT hugetlb_cma=6G\"\n")
	repo.Commit("hugetlb_cma for the web servers")

	runner := t.TempDir()
	env := append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "RUNNER_TEMP="+runner,
		"GITHUB_OUTPUT="+filepath.Join(runner, "output"), "GITHUB_STEP_SUMMARY="+filepath.Join(runner, "summary"))
	values := map[string]string{
		"BASE": base, "HEAD_REF": "HEAD", "REPO": repo.Dir, "FAIL_ON": "high", "FORMAT": "markdown", "ARGS": "", "SARIF": "false",
		"STORE": "", "SNAPSHOTS": snaps, "MAX_AGE": "48h",
	}
	for _, s := range readAction(t).Runs.Steps {
		if s.Name != "Gate the change" {
			continue
		}
		stepEnv := slices.Clone(env)
		for k := range s.Env {
			v, ok := values[k]
			if !ok {
				t.Fatalf("env %s has no value in the test", k)
			}
			stepEnv = append(stepEnv, k+"="+v)
		}
		cmd := exec.Command("bash", "-e", "-c", s.Run)
		cmd.Env = stepEnv
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("gate step: %v\n%s", err, out)
		}
	}
	summary, _ := os.ReadFile(filepath.Join(runner, "summary"))
	for _, want := range []string{"fleetaudit gate plan: 8 hosts newly fail", "`gpu-a-[001-004]`, `gpu-l-001` (5 hosts) | critical", "web-[01-02]"} {
		if !strings.Contains(string(summary), want) {
			t.Errorf("job summary lacks %q:\n%.3000s", want, summary)
		}
	}
}
