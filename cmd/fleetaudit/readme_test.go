package main

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const repoRoot = "../.."

// readmeSkipped are the README's commands that cannot run from a clone of
// the repository alone, each with why. Every other fleetaudit command the
// README shows runs in TestReadmeCommands.
var readmeSkipped = map[string]string{
	`bin/fleetaudit collect -o "$(hostname).json"`:                                                 "collects the live host (/) and needs a shell for $(hostname)",
	`bin/fleetaudit collect --root /mnt/image --hostname gpu-a-001`:                                "needs a mounted image at /mnt/image",
	`bin/fleetaudit collect --limits-domain trainer --sysctl net.ipv4.tcp_rmem`:                    "collects the live host (/)",
	`bin/fleetaudit collect --pods pods.json`:                                                      "collects the live host (/) and needs kubectl's pods.json",
	`bin/fleetaudit audit --inventory hosts.ini --fleets ./site-fleets --policies ./site-policies`: "names a site's inventory, profiles and policies, not files of the repository",
	`bin/fleetaudit gate --repo . --base origin/main`:                                              "needs a config repo with an origin/main ref (make gate-demo builds one; gate_test.go covers the gate)",
	`bin/fleetaudit gate --repo . --base origin/main --head HEAD --format markdown -o comment.md`:  "needs a config repo with an origin/main ref (make gate-demo builds one; gate_test.go covers the gate)",
	// remediate: the repo's own findings run; these need an audit first.
	`bin/fleetaudit audit --inventory examples/fleet/inventory.yaml --snapshots examples/fleet/snapshots --format json -o audit.json`: "writes audit.json into the working directory (remediate_test.go covers --findings with the example audit)",
	`bin/fleetaudit remediate --repo . --findings audit.json --dry-run --format json`:                                                 "needs a config repo with an audit of its hosts (remediate_test.go covers --findings)",
	// history: the audit --record before them runs; these read its store.
	`bin/fleetaudit history --store history.db`:                                             "needs runs recorded first (history_test.go covers history, drift and report over a recorded store)",
	`bin/fleetaudit drift --store history.db --host gpu-a-*`:                                "needs runs recorded first (history_test.go covers history, drift and report over a recorded store)",
	`bin/fleetaudit report --store history.db --format html --since 30d -o compliance.html`: "needs runs recorded first (history_test.go covers history, drift and report over a recorded store)",
	`bin/fleetaudit history prune --store history.db --older-than 180d --dry-run`:           "needs runs recorded first (prune_test.go covers prune over a recorded store)",
}

// codeBlockCommands returns the fleetaudit command lines inside the fenced
// code blocks of a Markdown file, comments and continuations resolved.
func codeBlockCommands(t *testing.T, file string) []string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cmds []string
	inBlock, pending := false, ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inBlock, pending = !inBlock, ""
			continue
		}
		if !inBlock {
			continue
		}
		line = pending + strings.TrimSpace(line)
		if rest, ok := strings.CutSuffix(line, `\`); ok {
			pending = rest + " "
			continue
		}
		pending = ""
		words := shellWords(line)
		if len(words) > 0 && (words[0] == "bin/fleetaudit" || words[0] == "fleetaudit") {
			cmds = append(cmds, strings.Join(quoteWords(words), " "))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cmds
}

// shellWords splits a command line as sh would for the plain words the
// README uses: blanks separate, quotes group, '#' at a word start begins a
// comment.
func shellWords(line string) []string {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	for _, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '"' || r == '\'':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case r == '#' && !inWord:
			return words
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// quoteWords writes words back as the README writes them, for the skip list.
func quoteWords(words []string) []string {
	out := make([]string, len(words))
	for i, w := range words {
		if strings.ContainsAny(w, " $") {
			w = `"` + w + `"`
		}
		out[i] = w
	}
	return out
}

// repoArgs makes the repository paths of a README command absolute; the
// command then runs in an empty directory, where its outputs land.
func repoArgs(t *testing.T, words []string) []string {
	t.Helper()
	abs, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	args := make([]string, 0, len(words))
	for _, w := range words {
		for _, top := range []string{"examples/", "testdata/"} {
			if strings.HasPrefix(w, top) {
				w = filepath.Join(abs, w)
			}
		}
		args = append(args, w)
	}
	return args
}

// TestReadmeCommands runs every fleetaudit command of the README that needs
// only files of the repository, as a user in a fresh clone would; none may
// end in a usage or runtime error (exit 2). Commands that need a live host
// or site files are listed in readmeSkipped with why; a new README command
// must be runnable or listed there.
func TestReadmeCommands(t *testing.T) {
	cmds := codeBlockCommands(t, filepath.Join(repoRoot, "README.md"))
	if len(cmds) == 0 {
		t.Fatal("no fleetaudit command in the README's code blocks")
	}
	seen := map[string]bool{}
	ran := 0
	for _, cmd := range cmds {
		seen[cmd] = true
		if why, ok := readmeSkipped[cmd]; ok {
			t.Run(cmd, func(t *testing.T) { t.Skip(why) })
			continue
		}
		words := shellWords(cmd)
		args := repoArgs(t, words[1:])
		for _, a := range args {
			if strings.Contains(a, "$") {
				t.Errorf("%s: needs a shell; make it runnable or list it in readmeSkipped", cmd)
			}
		}
		ran++
		t.Run(cmd, func(t *testing.T) {
			t.Chdir(t.TempDir())
			r := runCLI(t, nil, args...)
			if r.code != exitOK && r.code != exitFindings {
				t.Errorf("exit %d, want 0 or 1\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
			}
			out := "" // the -o file, which must hold the output instead
			for i, a := range args[:len(args)-1] {
				if a == "-o" {
					out = args[i+1]
				}
			}
			if out == "" && r.stdout == "" {
				t.Errorf("printed nothing; stderr:\n%s", r.stderr)
			}
			if out != "" {
				if fi, err := os.Stat(out); err != nil || fi.Size() == 0 {
					t.Errorf("-o %s: nothing written (%v); stderr:\n%s", out, err, r.stderr)
				}
			}
		})
	}
	if ran == 0 {
		t.Error("every README command is skipped: nothing proves the README")
	}
	for cmd := range readmeSkipped {
		if !seen[cmd] {
			t.Errorf("readmeSkipped lists %q, which the README no longer shows", cmd)
		}
	}
}

// makeRecipe returns the fleetaudit command of a Makefile target's recipe,
// with the Makefile's := and ?= variables expanded.
func makeRecipe(t *testing.T, target string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	assign := regexp.MustCompile(`^([A-Z_]+)\s*[:?]?=\s*(.*)$`)
	var recipe []string
	in := false
	for _, line := range strings.Split(string(data), "\n") {
		if m := assign.FindStringSubmatch(line); m != nil {
			vars[m[1]] = strings.TrimSpace(m[2])
		}
		switch {
		case strings.HasPrefix(line, target+":"):
			in = true
		case in && strings.HasPrefix(line, "\t"):
			recipe = append(recipe, strings.TrimSpace(line))
		case in:
			in = false
		}
	}
	ref := regexp.MustCompile(`\$\(([A-Z_]+)\)`)
	for _, line := range recipe {
		line = ref.ReplaceAllStringFunc(line, func(m string) string { return vars[m[2:len(m)-1]] })
		if words := shellWords(line); len(words) > 0 && words[0] == "bin/fleetaudit" {
			return words
		}
	}
	t.Fatalf("Makefile target %s runs no bin/fleetaudit command (recipe %q)", target, recipe)
	return nil
}

// make demo, the README's first line, exits 0 and shows the incident.
func TestMakeDemoCommand(t *testing.T) {
	words := makeRecipe(t, "demo")
	args := repoArgs(t, words[1:])
	t.Chdir(t.TempDir())
	r := runCLI(t, nil, args...)
	if r.code != exitOK {
		t.Fatalf("%s: exit %d, want 0 (make demo would fail)\nstderr:\n%s", strings.Join(words, " "), r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "hugetlb-cma-on-gpu") {
		t.Errorf("the demo does not show the hugetlb_cma incident:\n%s", r.stdout)
	}
}

func TestShellWords(t *testing.T) {
	for line, want := range map[string][]string{
		`bin/fleetaudit collect -o "$(hostname).json"   # this host`: {"bin/fleetaudit", "collect", "-o", "$(hostname).json"},
		`fleetaudit audit --fail-on none`:                            {"fleetaudit", "audit", "--fail-on", "none"},
		`a 'b c' d#e`:                                                {"a", "b c", "d#e"},
		`# only a comment`:                                           nil,
	} {
		got := shellWords(line)
		if strings.Join(got, "|") != strings.Join(want, "|") || len(got) != len(want) {
			t.Errorf("shellWords(%q) = %q, want %q", line, got, want)
		}
	}
}

// The README's config file examples (yaml code blocks) load: every key is
// one the config file accepts.
func TestReadmeConfigExamples(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(data), -1)
	if len(blocks) == 0 {
		t.Fatal("the README shows no config file")
	}
	for _, b := range blocks {
		// A block that opens by naming another file (a workflow, a
		// .pre-commit-config.yaml) is not a fleetaudit config.
		if first, _, _ := strings.Cut(b[1], "\n"); strings.HasPrefix(first, "# .github/") || first == "# .pre-commit-config.yaml" {
			continue
		}
		cfg := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(cfg, []byte(b[1]), 0o644); err != nil {
			t.Fatal(err)
		}
		if r := runCLI(t, nil, "--config", cfg, "policies", "list"); r.code != exitOK {
			t.Errorf("config\n%s\nexit %d: %s", b[1], r.code, r.stderr)
		}
	}
}
