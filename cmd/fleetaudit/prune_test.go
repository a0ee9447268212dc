package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestHistoryPrune(t *testing.T) {
	env, _ := recordedStore(t)
	runs := func() []any {
		t.Helper()
		r := runCLI(t, env, "history", "--format", "json")
		var h struct{ Runs []any }
		if err := json.Unmarshal([]byte(r.stdout), &h); err != nil {
			t.Fatalf("history json: %v\n%s", err, r.stdout)
		}
		return h.Runs
	}
	if r := runCLI(t, env, "history", "prune", "--older-than", "1d"); r.code != exitOK || !strings.Contains(r.stdout, "no run to remove") {
		t.Errorf("nothing a day old: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r := runCLI(t, env, "history", "prune", "--older-than", "0d", "--dry-run", "--format", "json")
	var dry struct {
		Runs   []int `json:"runs"`
		DryRun bool  `json:"dry_run"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &dry); err != nil || r.code != exitOK {
		t.Fatalf("dry run: exit %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	if len(dry.Runs) != 1 || dry.Runs[0] != 1 || !dry.DryRun {
		t.Errorf("dry run would remove %v (dry %v), want run 1: --keep defaults to the newest complete run", dry.Runs, dry.DryRun)
	}
	if n := len(runs()); n != 2 {
		t.Fatalf("a dry run left %d runs, want 2", n)
	}
	r = runCLI(t, env, "history", "prune", "--older-than", "0d")
	if r.code != exitOK || !strings.Contains(r.stdout, "removed run 1 ") {
		t.Errorf("prune: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if n := len(runs()); n != 1 {
		t.Errorf("%d runs after pruning, want 1", n)
	}
	// The kept run still answers a report.
	if r := runCLI(t, env, "report", "--format", "markdown"); r.code != exitOK {
		t.Errorf("report after pruning: exit %d\n%s", r.code, r.stderr)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"history", "prune"}, "--older-than is required"},
		{[]string{"history", "prune", "--older-than", "soon"}, `--older-than "soon"`},
		{[]string{"history", "prune", "--older-than", "1d", "--keep", "-1"}, "--keep -1"},
	} {
		if r := runCLI(t, env, tc.args...); r.code != exitError || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d, want 2 with %q\n%s", tc.args, r.code, tc.want, r.stderr)
		}
	}
}
