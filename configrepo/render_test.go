package configrepo

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// hangGuard is how long a render may take before a test calls it hung. It
// is no timing assertion: the commands below would run 45 s if let be.
const hangGuard = 30 * time.Second

// renderRepo is a checkout whose render command is sh render.sh.
func renderRepo(t *testing.T, script string) (*Checkout, *Manifest) {
	t.Helper()
	m, err := ParseManifest([]byte("fleets:\n  web-serving: {layers: [base, web]}\nrender:\n  command: [sh, render.sh]\n"))
	if err != nil {
		t.Fatal(err)
	}
	co := &Checkout{Files: fstest.MapFS{"render.sh": {Data: []byte(script), Mode: 0o644}}, Refused: map[string]string{}}
	return co, m
}

// render runs Render in the background and fails the test if it hangs.
func render(t *testing.T, ctx context.Context, co *Checkout, m *Manifest, opts RenderOptions) (*Rendered, error) {
	t.Helper()
	type result struct {
		r   *Rendered
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := Render(ctx, co, m, "web-serving", opts)
		done <- result{r, err}
	}()
	select {
	case res := <-done:
		return res.r, res.err
	case <-time.After(hangGuard):
		t.Fatalf("the render did not return within %s", hangGuard)
		return nil, nil
	}
}

// pidsOf reads the process ids a render script appended to file.
func pidsOf(t *testing.T, file string) []int {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
	}
	if len(pids) == 0 {
		t.Fatalf("%s names no process", file)
	}
	return pids
}

// requireGone fails unless pid has exited. SIGKILL is delivered
// asynchronously, so it waits for the exit (a zombie, not yet reaped by
// init in a container, counts as gone), up to a hang guard.
func requireGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for {
		err := syscall.Kill(pid, 0)
		if errors.Is(err, syscall.ESRCH) {
			return
		}
		if stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
			if _, rest, ok := strings.Cut(string(stat), ") "); ok && strings.HasPrefix(rest, "Z") {
				return
			}
		}
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("process %d, started by the render command, outlived the render", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestRenderCommandBackgroundChildNeitherHangsNorOutlivesTheRender(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pids")
	co, m := renderRepo(t, `set -e
mkdir -p "$FLEETAUDIT_ROOT/etc/sysctl.d"
echo "net.core.somaxconn = 256" > "$FLEETAUDIT_ROOT/etc/sysctl.d/60.conf"
sleep 45 &
echo $! >> '`+pidFile+`'
echo rendered
`)
	r, err := render(t, context.Background(), co, m, RenderOptions{AllowCommand: true, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Digests["/etc/sysctl.d/60.conf"]; !ok {
		t.Errorf("rendered %v, want /etc/sysctl.d/60.conf", r.Digests)
	}
	for _, pid := range pidsOf(t, pidFile) {
		requireGone(t, pid)
	}
}

// TestRenderCommandChildThatLeftTheGroupDoesNotHang: a child in a session
// of its own is out of the group's reach; it must still not hold the gate
// by keeping the output pipe open.
func TestRenderCommandChildThatLeftTheGroupDoesNotHang(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	pidFile := filepath.Join(t.TempDir(), "pids")
	co, m := renderRepo(t, `setsid sh -c 'echo $$ >> "$0"; exec sleep 45' '`+pidFile+`' &
while [ ! -s '`+pidFile+`' ]; do sleep 0.01; done
echo rendered
`)
	_, err := render(t, context.Background(), co, m, RenderOptions{AllowCommand: true, WorkDir: t.TempDir()})
	for _, pid := range pidsOf(t, pidFile) {
		syscall.Kill(pid, syscall.SIGKILL) // beyond the render's reach, by design of setsid
	}
	if err != nil {
		t.Fatal(err)
	}
}

func TestRenderCommandIsStoppedWithItsChildren(t *testing.T) {
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		cancel  bool
		want    string
	}{
		{name: "timeout", timeout: 500 * time.Millisecond, want: "timed out after 500ms"},
		{name: "cancelled", cancel: true, want: context.Canceled.Error()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pidFile := filepath.Join(t.TempDir(), "pids")
			// The shell waits on its own sleep and leaves one in the
			// background: killing the shell alone would leave both.
			co, m := renderRepo(t, `sleep 45 &
echo $! >> '`+pidFile+`'
sleep 45 &
echo $! >> '`+pidFile+`'
wait
`)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancel {
				go func() {
					// Cancel once the command is running, as a SIGINT
					// to the gate would.
					for {
						if data, _ := os.ReadFile(pidFile); strings.Count(string(data), "\n") == 2 {
							cancel()
							return
						}
						time.Sleep(10 * time.Millisecond)
					}
				}()
			}
			_, err := render(t, ctx, co, m, RenderOptions{AllowCommand: true, WorkDir: t.TempDir(), CommandTimeout: tc.timeout})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			for _, pid := range pidsOf(t, pidFile) {
				requireGone(t, pid)
			}
		})
	}
}

// TestRenderCommandGetsAMinimalEnvironment: the render command is code from
// the change under review; the gate's secrets are not its business.
func TestRenderCommandGetsAMinimalEnvironment(t *testing.T) {
	const secret = "ghp_0123456789abcdefSECRET"
	t.Setenv("GITHUB_TOKEN", secret)
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	t.Setenv("GIT_DIR", "/elsewhere/.git")
	t.Setenv("HOME", t.TempDir())
	envFile := filepath.Join(t.TempDir(), "env")
	work := t.TempDir()
	co, m := renderRepo(t, `env > '`+envFile+`'
echo "GITHUB_TOKEN=${GITHUB_TOKEN-unset} AWS=${AWS_SECRET_ACCESS_KEY-unset}" >&2
exit 3
`)
	_, err := render(t, context.Background(), co, m, RenderOptions{AllowCommand: true, WorkDir: work})
	if err == nil {
		t.Fatal("the render command failed, Render did not")
	}
	if strings.Contains(err.Error(), secret) {
		t.Errorf("the error carries the secret: %v", err)
	}
	if !strings.Contains(err.Error(), "GITHUB_TOKEN=unset AWS=unset") {
		t.Errorf("error %q, want the command's output", err)
	}
	data, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		switch k {
		case "PWD", "OLDPWD", "SHLVL", "_": // the shell's own
			continue
		}
		got[k] = v
	}
	want := map[string]string{
		"PATH":              os.Getenv("PATH"),
		"HOME":              filepath.Join(work, "home"),
		"TMPDIR":            filepath.Join(work, "tmp"),
		"LANG":              "C",
		"LC_ALL":            "C",
		"FLEETAUDIT_FLEET":  "web-serving",
		"FLEETAUDIT_ROOT":   filepath.Join(work, "root"),
		"FLEETAUDIT_LAYERS": "base web",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("render command environment (-want +got):\n%s", diff)
	}
}

// TestRenderCommandOutputInErrorsIsBoundedAndEscaped: a failed render's
// output ends up in the gate's report; it must neither grow without bound
// nor carry terminal escapes.
func TestRenderCommandOutputInErrorsIsBoundedAndEscaped(t *testing.T) {
	co, m := renderRepo(t, `printf '\033]0;pwned\007\033[2J'
head -c 1000000 /dev/zero | tr '\0' x
printf '\n%s\n' "$(head -c 5000 /dev/zero | tr '\0' y)"
printf 'last \033[31mred\033[0m line\n'
exit 1
`)
	_, err := render(t, context.Background(), co, m, RenderOptions{AllowCommand: true, WorkDir: t.TempDir()})
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	if len(msg) > 4096 {
		t.Errorf("error is %d bytes, want it bounded", len(msg))
	}
	if i := strings.IndexFunc(msg, func(r rune) bool { return r < 0x20 && r != '\n' || r == 0x7f }); i >= 0 {
		t.Errorf("error carries control character %q: %.300q", msg[i], msg[max(0, i-100):])
	}
	if !strings.Contains(msg, `last \x1b[31mred\x1b[0m line`) {
		t.Errorf("error ends %q, want the last line with its escapes shown", msg[max(0, len(msg)-300):])
	}
}

func TestEscapeControlAndTruncate(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain\ttab", "plain\ttab"},
		{"\x1b]0;title\x07", `\x1b]0;title\a`},
		{"bidi \u202eevil", `bidi \u202eevil`},
		{"bad \xff byte", `bad \xff byte`},
		{"ünïcode", "ünïcode"},
	} {
		if got := escapeControl(tc.in); got != tc.want {
			t.Errorf("escapeControl(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := truncate("aéb", 2); got != "a..." {
		t.Errorf("truncate cut inside a rune: %q", got)
	}
	var tail tailBuffer
	tail.max = 4
	for _, s := range []string{"ab", "cd", "ef", "ghijkl", "m"} {
		tail.Write([]byte(s))
	}
	if got := string(tail.Bytes()); got != "jklm" {
		t.Errorf("tail %q, want jklm", got)
	}
}
