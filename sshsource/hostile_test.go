package sshsource

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fleetaudit/fleetaudit/internal/sshdtest"
)

// lingerMark is in the command line of the process the linger attack
// leaves running.
const lingerMark = sshdtest.LingerMark

func startHostileSSHD(t *testing.T) *testSSHD {
	return &testSSHD{Server: sshdtest.StartHostile(t), timeout: sshdtest.Timeout(t)}
}

// hostileCase is one attack and what its host must get.
type hostileCase struct {
	attack string
	class  string
	want   string // in the error
}

var hostileCases = []hostileCase{
	{"flood-file", ClassLimit, "./etc/os-release: more than the 1048577 bytes"},
	{"nuls", ClassLimit, "more than 1 MiB before the stream started"},
	{"stderr", ClassLimit, "more than 1 MiB on standard error"},
	{"listing", ClassLimit, "more than 250000 entries"},
	{"many-files", ClassLimit, "more than 64 MiB on standard output"},
	{"headers", ClassRemoteFailed, "the contents of ./etc/profile.d/h20 end early"},
	{"hang", ClassTimeout, "host timeout"},
	{"close", ClassRemoteFailed, "ends early"},
	{"linger", ClassTimeout, "host timeout"},
}

// hostileRun is what the child collects: hosts (by name) from the sshd.
type hostileRun struct {
	Port       int
	User       string
	Key        string
	KnownHosts string
	Home       string
	Hosts      []Host
	Timeouts   []time.Duration
}

type hostileResult struct {
	Name  string
	Class string
	Err   string
	Took  time.Duration
}

const hostileChildEnv = "FLEETAUDIT_TEST_HOSTILE_RUN"

// TestHostileChild collects the hosts of hostileChildEnv with the default
// limits and prints the results; run by runHostile in a child process, so
// its peak memory is its own.
func TestHostileChild(t *testing.T) {
	raw := os.Getenv(hostileChildEnv)
	if raw == "" {
		t.Skip("runs only as a child of runHostile")
	}
	var run hostileRun
	if err := json.Unmarshal([]byte(raw), &run); err != nil {
		t.Fatal(err)
	}
	d := NewDialer(Options{KnownHosts: []string{run.KnownHosts}, IdentityFiles: []string{run.Key}, Home: run.Home, Version: "test", ConnectTimeout: time.Minute})
	defer d.Close()
	res := make([]hostileResult, len(run.Hosts))
	var wg sync.WaitGroup
	for i, h := range run.Hosts {
		wg.Go(func() {
			began := time.Now()
			r := d.CollectTimeout(context.Background(), h, run.Timeouts[i])
			res[i] = hostileResult{Name: h.Name, Took: time.Since(began)}
			if r.Err != nil {
				res[i].Class, res[i].Err = r.Err.Class, r.Err.Err.Error()
			}
		})
	}
	wg.Wait()
	data, _ := json.Marshal(res)
	fmt.Printf("\nHOSTILE-RESULT %s\n", data)
}

// runHostile collects hosts in a child process and returns the results
// and the child's peak RSS in bytes.
func runHostile(t *testing.T, run hostileRun) ([]hostileResult, int64) {
	t.Helper()
	raw, _ := json.Marshal(run)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHostileChild$", "-test.timeout=10m")
	cmd.Env = append(os.Environ(), hostileChildEnv+"="+string(raw))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v\n%s%s", err, out, stderr.String())
	}
	_, line, ok := strings.Cut(string(out), "\nHOSTILE-RESULT ")
	if !ok {
		t.Fatalf("child printed no result:\n%s%s", out, stderr.String())
	}
	line, _, _ = strings.Cut(line, "\n")
	var res []hostileResult
	if err := json.Unmarshal([]byte(line), &res); err != nil {
		t.Fatal(err)
	}
	return res, cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
}

// TestHostileHosts: a real sshd whose ForceCommand plays each attack. With
// the default limits, every attacking host fails within its timeout with an
// error naming the limit, the good hosts of the same run are collected, the
// client's memory stays bounded, and no remote process outlives its host's
// timeout.
func TestHostileHosts(t *testing.T) {
	s := startHostileSSHD(t)
	t.Cleanup(func() { killLingering(t) })
	const attackTimeout = 4 * time.Second
	run := hostileRun{Port: s.Port, User: s.User, Key: s.ClientKey, KnownHosts: s.KnownHosts, Home: s.Dir}
	for _, c := range hostileCases {
		run.Hosts = append(run.Hosts, s.host(c.attack, "/attack-"+c.attack))
		// A host that hangs gets a short timeout; one that floods a
		// generous one, so on a loaded machine it still fails by its
		// limit, not by its time.
		timeout := s.timeout
		if c.class == ClassTimeout {
			timeout = attackTimeout
		}
		run.Timeouts = append(run.Timeouts, timeout)
	}
	cases := hostileCases
	if _, err := exec.LookPath("sudo"); err == nil {
		// Through sudo the script runs as another user than sshd's
		// session: still ended.
		h := s.host("linger-become", "/attack-linger")
		h.Become = true
		run.Hosts = append(run.Hosts, h)
		run.Timeouts = append(run.Timeouts, attackTimeout)
		cases = append(cases[:len(cases):len(cases)], hostileCase{"linger-become", ClassTimeout, "host timeout"})
	}
	for _, h := range []string{"gpu-node", "web-node"} {
		run.Hosts = append(run.Hosts, s.host("good-"+h, fixture(t, h)))
		run.Timeouts = append(run.Timeouts, s.timeout)
	}
	res, rss := runHostile(t, run)
	t.Logf("client peak RSS: %d MiB", rss>>20)
	for i, c := range cases {
		r := res[i]
		t.Logf("%-12s %-14s %6.2fs %s", c.attack, r.Class, r.Took.Seconds(), r.Err)
		if r.Class != c.class || !strings.Contains(r.Err, c.want) {
			t.Errorf("%s: %s: %s, want %s naming %q", c.attack, r.Class, r.Err, c.class, c.want)
		}
		// Generous: a loaded machine.
		if r.Took > run.Timeouts[i]+10*time.Second {
			t.Errorf("%s: took %s, past its %s timeout", c.attack, r.Took, run.Timeouts[i])
		}
	}
	for _, r := range res[len(cases):] {
		if r.Err != "" {
			t.Errorf("%s, in the same run: %s: %s", r.Name, r.Class, r.Err)
		}
	}
	// The 64 MiB stream cap holds what a host may keep in memory; the rest
	// is the test binary and buffers.
	if rss > 300<<20 && !raceEnabled {
		t.Errorf("client peak RSS %d MiB, want under 300 MiB", rss>>20)
	}
	// The linger host's script was still running when its time ran out:
	// closing the session ends it, though sshd passes no signal to a forced
	// command.
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := lingering()
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("remote processes outlived their host's timeout: %v", left)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// lingering lists the processes the linger attack started that still run.
func lingering() map[int]string {
	left := map[int]string{}
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range dirs {
		data, err := os.ReadFile(f)
		if err != nil || !bytes.Contains(data, []byte(lingerMark)) {
			continue
		}
		var pid int
		fmt.Sscanf(f, "/proc/%d/cmdline", &pid)
		if pid != os.Getpid() {
			left[pid] = string(bytes.ReplaceAll(data, []byte{0}, []byte{' '}))
		}
	}
	return left
}

func killLingering(t *testing.T) {
	for pid := range lingering() {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			t.Log(err)
		}
	}
}

// TestHostileMeasure runs each attack alone in a child process, with a 5s
// host timeout, and logs the client's peak RSS and the host's time: a
// measurement for the record, run by hand (FLEETAUDIT_HOSTILE_MEASURE=1,
// -v), never asserted.
func TestHostileMeasure(t *testing.T) {
	if os.Getenv("FLEETAUDIT_HOSTILE_MEASURE") == "" {
		t.Skip("set FLEETAUDIT_HOSTILE_MEASURE=1 to measure each attack")
	}
	s := startHostileSSHD(t)
	t.Cleanup(func() { killLingering(t) })
	only := os.Getenv("FLEETAUDIT_HOSTILE_ONLY") // one attack, by name
	for _, c := range hostileCases {
		if only != "" && c.attack != only {
			continue
		}
		run := hostileRun{Port: s.Port, User: s.User, Key: s.ClientKey, KnownHosts: s.KnownHosts, Home: s.Dir,
			Hosts: []Host{s.host(c.attack, "/attack-"+c.attack)}, Timeouts: []time.Duration{5 * time.Second}}
		res, rss := runHostile(t, run)
		time.Sleep(time.Second)
		t.Logf("%-12s peak RSS %5d MiB, %6.2fs, %s: %s; remote processes left after: %d", c.attack, rss>>20, res[0].Took.Seconds(), res[0].Class, res[0].Err, len(lingering()))
		killLingering(t)
	}
}

// TestKilledClientEndsRemote: a client killed while its host's script runs
// (no close, no signal: the connection is just gone) leaves nothing
// running on the host.
func TestKilledClientEndsRemote(t *testing.T) {
	s := startHostileSSHD(t)
	t.Cleanup(func() { killLingering(t) })
	run := hostileRun{Port: s.Port, User: s.User, Key: s.ClientKey, KnownHosts: s.KnownHosts, Home: s.Dir,
		Hosts: []Host{s.host("linger", "/attack-linger")}, Timeouts: []time.Duration{time.Hour}}
	raw, _ := json.Marshal(run)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHostileChild$")
	cmd.Env = append(os.Environ(), hostileChildEnv+"="+string(raw))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	for deadline := time.Now().Add(s.timeout); len(lingering()) == 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the host's script never started")
		}
	}
	cmd.Process.Kill()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		left := lingering()
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("remote processes outlived the client: %v", left)
		}
	}
}
