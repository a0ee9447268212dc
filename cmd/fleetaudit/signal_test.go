package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fleetaudit/fleetaudit/internal/sshdtest"
)

const signalArgs = "FLEETAUDIT_TEST_SIGNAL_ARGS"

// TestSignalChild runs main's code path (signals included) with the
// arguments of signalArgs; run by TestSIGTERMEndsSSHRun in a child process.
func TestSignalChild(t *testing.T) {
	raw := os.Getenv(signalArgs)
	if raw == "" {
		t.Skip("runs only as a child of TestSIGTERMEndsSSHRun")
	}
	var args []string
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		t.Fatal(err)
	}
	os.Exit(runMain(args))
}

// TestSIGTERMEndsSSHRun: collect --inventory over SSH with a host that
// hangs and one whose stream is a flood of header-like lines, SIGTERM once
// the good host is written: the run ends at once (generous bound), says it
// was interrupted and what it kept, and writes no snapshot for the hosts it
// stopped.
func TestSIGTERMEndsSSHRun(t *testing.T) {
	s := sshdtest.StartHostile(t)
	root, _ := filepath.Abs(gpuRoot)
	dir := t.TempDir()
	inv := filepath.Join(dir, "inventory.yaml")
	host := func(name, root string) string {
		return fmt.Sprintf("  %s: {fleet: gpu-training, address: 127.0.0.1, port: %d, user: %s, identity: %s, remote_root: %s}\n", name, s.Port, s.User, s.ClientKey, root)
	}
	os.WriteFile(inv, []byte("hosts:\n"+host("good", root)+host("hang", "/attack-hang")+host("headers", "/attack-headers")), 0o600)
	out := filepath.Join(dir, "snapshots")
	os.Mkdir(out, 0o755)
	args, _ := json.Marshal([]string{"collect", "--inventory", inv, "--out", out, "--known-hosts", s.KnownHosts, "--ssh-config", "none", "--host-timeout", "10m"})
	cmd := exec.Command(os.Args[0], "-test.run=^TestSignalChild$")
	cmd.Env = append(os.Environ(), signalArgs+"="+string(args), "HOME="+s.Dir)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// The good host and the header flood are done (the latter failed),
	// the hanging host is in flight.
	for deadline := time.Now().Add(sshdtest.Timeout(t)); ; time.Sleep(50 * time.Millisecond) {
		_, err1 := os.Stat(filepath.Join(out, "good.json"))
		_, err2 := os.Stat(filepath.Join(out, "headers.json"))
		if err1 == nil && err2 == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the good and the headers host were not written:\n%s", stderr.String())
		}
	}
	time.Sleep(200 * time.Millisecond)
	terminate(t, cmd, done, &stderr)
	for _, want := range []string{"interrupted (terminated signal received)", "2 of 3 hosts were written to " + out, "interrupted: 1 hosts stopped or not started"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	if _, err := os.Stat(filepath.Join(out, "hang.json")); err == nil {
		t.Errorf("the interrupted host got a snapshot")
	}
}

// TestSIGTERMEndsSSHAudit: audit over SSH with a host that hangs, SIGTERM
// while it is in flight: the run ends at once, saying no report was
// written, and none is.
func TestSIGTERMEndsSSHAudit(t *testing.T) {
	s := sshdtest.StartHostile(t)
	root, _ := filepath.Abs(gpuRoot)
	dir := t.TempDir()
	inv := filepath.Join(dir, "inventory.yaml")
	host := func(name, root string) string {
		return fmt.Sprintf("  %s: {fleet: gpu-training, address: 127.0.0.1, port: %d, user: %s, identity: %s, remote_root: %s}\n", name, s.Port, s.User, s.ClientKey, root)
	}
	os.WriteFile(inv, []byte("hosts:\n"+host("good", root)+host("hang", "/attack-hang")), 0o600)
	report := filepath.Join(dir, "report.json")
	args, _ := json.Marshal([]string{"audit", "--inventory", inv, "--known-hosts", s.KnownHosts, "--ssh-config", "none", "--host-timeout", "10m", "--format", "json", "-o", report})
	cmd := exec.Command(os.Args[0], "-test.run=^TestSignalChild$")
	cmd.Env = append(os.Environ(), signalArgs+"="+string(args), "HOME="+s.Dir)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// The hanging host never ends: any moment after the start is in flight.
	time.Sleep(1500 * time.Millisecond)
	terminate(t, cmd, done, &stderr)
	if want := "interrupted (terminated signal received): the audit stopped before its report: no report was written"; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
	}
	if _, err := os.Stat(report); err == nil {
		t.Error("a report was written")
	}
}

// terminate sends cmd SIGTERM and waits for it to end with exitError, failing
// t when it is still running 10s later (a bound against a hang, not a speed).
func terminate(t *testing.T, cmd *exec.Cmd, done <-chan error, stderr *bytes.Buffer) {
	t.Helper()
	sent := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("still running 10s after SIGTERM:\n%s", stderr.String())
	}
	t.Logf("ended %s after SIGTERM; stderr:\n%s", time.Since(sent).Round(time.Millisecond), stderr.String())
	if code := cmd.ProcessState.ExitCode(); code != exitError {
		t.Errorf("exit %d, want %d", code, exitError)
	}
}
