//go:build linux

// The terminal tests open a Linux pty (TIOCSPTLCK); the code they test
// builds everywhere.

package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// runOnTerminal runs fleetaudit with stdout on a pseudo-terminal cols wide
// and returns what the terminal received.
func runOnTerminal(t *testing.T, cols int, env map[string]string, args ...string) result {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer master.Close()
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Skipf("ptsname: %v", err)
	}
	tty, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("open pts: %v", err)
	}
	if err := unix.IoctlSetWinsize(int(tty.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 50, Col: uint16(cols)}); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() {
		var b bytes.Buffer
		io.Copy(&b, master) // ends with EIO once the terminal side is closed
		got <- strings.ReplaceAll(b.String(), "\r\n", "\n")
	}()
	var errb bytes.Buffer
	code := run(context.Background(), args, streams{in: strings.NewReader(""), out: tty, err: &errb}, func(k string) string { return env[k] })
	tty.Close()
	return result{code, <-got, errb.String()}
}

// widest is the width of the widest table row or indented line: headings
// and the summary are not wrapped.
func widest(out string) int {
	w := 0
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, " ") {
			w = max(w, utf8.RuneCountInString(line))
		}
	}
	return w
}

// TestHumanOutputFollowsTheTerminal: the table used 80 columns whatever the
// terminal, ignored $COLUMNS, and coloured under NO_COLOR and TERM=dumb.
func TestHumanOutputFollowsTheTerminal(t *testing.T) {
	args := []string{"audit", "--inventory", exampleInventory, "--snapshots", exampleSnapshots, "--fail-on", "none"}
	const red = "\x1b[1;31mcritical"
	tests := []struct {
		name      string
		tty       int // terminal width; 0: not a terminal
		env       map[string]string
		wantWidth int
		wantColor bool
	}{
		{"terminal width", 132, nil, 132, true},
		{"terminal wins over COLUMNS", 70, map[string]string{"COLUMNS": "200"}, 70, true},
		{"NO_COLOR", 90, map[string]string{"NO_COLOR": "1"}, 90, false},
		{"TERM=dumb", 90, map[string]string{"TERM": "dumb"}, 90, false},
		{"COLUMNS when piped", 0, map[string]string{"COLUMNS": "60"}, 60, false},
		{"default when piped", 0, nil, defaultWidth, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r result
			if tt.tty > 0 {
				r = runOnTerminal(t, tt.tty, tt.env, args...)
			} else {
				r = runCLI(t, tt.env, args...)
			}
			if r.code != exitOK {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			plain := r.stdout
			for _, code := range []string{"\x1b[1;31m", "\x1b[31m", "\x1b[33m", "\x1b[36m", "\x1b[0m"} {
				plain = strings.ReplaceAll(plain, code, "")
			}
			if strings.Contains(plain, "\x1b") {
				t.Errorf("output has control sequences besides colour:\n%q", plain)
			}
			if got := strings.Contains(r.stdout, red); got != tt.wantColor {
				t.Errorf("colour = %v, want %v", got, tt.wantColor)
			}
			// Rows use the width they are given: not narrower by more than a
			// word, never wider.
			if w := widest(plain); w > tt.wantWidth || w < tt.wantWidth-20 {
				t.Errorf("widest line %d columns, want at most %d and close to it:\n%s", w, tt.wantWidth, plain)
			}
		})
	}
}

func TestPoliciesWrapAndEscape(t *testing.T) {
	dir := t.TempDir()
	rule := `package fleetaudit.rules.hostile

# METADATA
# title: "Title \e]0;pwn\a with a window title"
# description: "Clears the screen \e[2J and goes on for a long while so that the description has to wrap at the width of the terminal it is shown on"
# related_resources:
# - ref: https://example.com/a/reference/long/enough/to/be/wrapped/at/sixty/columns/without/losing/any/of/it
#   description: a reference
# custom:
#   id: hostile-metadata
#   severity: low
#   profiles: [gpu-training]
#   remediation: "Nothing \e[31m to do."
#   facts:
#   - sysctl.running.vm.swappiness
hostile_metadata contains f if {
	input.sysctl.running["vm.swappiness"] == "nope"
	f := {"msg": "never", "evidence": ["sysctl.running.vm.swappiness"]}
}
`
	if err := os.WriteFile(filepath.Join(dir, "hostile.rego"), []byte(rule), 0o644); err != nil {
		t.Fatal(err)
	}
	// list keeps rule ids whole (people copy them into explain), so it is
	// held to the default terminal width rather than 60 columns.
	widths := map[string]int{"explain": 60, "list": 80}
	for _, args := range [][]string{
		{"policies", "explain", "hostile-metadata", "--policies", dir},
		{"policies", "list", "--policies", dir},
	} {
		t.Run(args[1], func(t *testing.T) {
			width := widths[args[1]]
			r := runCLI(t, map[string]string{"COLUMNS": strconv.Itoa(width)}, args...)
			if r.code != exitOK {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			if strings.ContainsAny(r.stdout, "\x1b\x07") {
				t.Errorf("raw control characters from METADATA:\n%q", r.stdout)
			}
			if !strings.Contains(r.stdout, `\x1b]0;pwn\x07`) {
				t.Errorf("the title's escape is not shown escaped:\n%s", r.stdout)
			}
			if w := widestLine(r.stdout); w > width {
				t.Errorf("widest line %d columns, want at most %d:\n%s", w, width, r.stdout)
			}
			if args[1] == "list" {
				for _, id := range []string{"hostile-metadata", "acs-redirect-on-gpu-path", "persistence-mode-off"} {
					if !regexp.MustCompile(`(?m)^` + id + ` `).MatchString(r.stdout) {
						t.Errorf("rule id %s is not whole at the start of a line:\n%s", id, r.stdout)
					}
				}
			}
			if args[1] == "explain" && !strings.Contains(strings.Join(strings.Fields(r.stdout), ""), "https://example.com/a/reference/long/enough/to/be/wrapped/at/sixty/columns/without/losing/any/of/it") {
				t.Errorf("the reference is cut:\n%s", r.stdout)
			}
		})
	}
}

func widestLine(out string) int {
	w := 0
	for _, line := range strings.Split(out, "\n") {
		w = max(w, utf8.RuneCountInString(line))
	}
	return w
}

// TestErrorsAreEscaped: an error quotes the path or content it is about.
func TestErrorsAreEscaped(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "snap\x1b]0;pwn\x07.json")
	r := runCLI(t, nil, "audit", "--snapshots", bad)
	if r.code != exitError {
		t.Fatalf("exit %d, want %d\n%s", r.code, exitError, r.stderr)
	}
	if strings.ContainsAny(r.stderr, "\x1b\x07") || !strings.Contains(r.stderr, `snap\x1b]0;pwn\x07.json`) {
		t.Errorf("stderr does not show the name escaped:\n%q", r.stderr)
	}
}
