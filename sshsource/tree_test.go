package sshsource

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetaudit/fleetaudit/collectors"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

// shFetcher runs the remote scripts with this machine's sh, as the host's
// login shell would after sshd: the same scripts, no network.
type shFetcher struct{}

func (shFetcher) output(ctx context.Context, script string) ([]byte, error) {
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, "sh", "-c", wrap(script, false))
	cmd.Stdout, cmd.Stderr = &out, &errb
	// As over SSH: standard input open while the command runs (its end
	// ends the command), in a process group of its own, not under sshd.
	if _, err := cmd.StdinPipe(); err != nil {
		return nil, err
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "SSH_CONNECTION=") })
	if err := cmd.Run(); err != nil && out.Len() == 0 {
		return nil, fmt.Errorf("%w: %s", err, errb.String())
	}
	return out.Bytes(), nil
}

func (shFetcher) stream(ctx context.Context, script string) (io.ReadCloser, error) {
	out, err := shFetcher{}.output(ctx, script)
	return io.NopCloser(bytes.NewReader(out)), err
}

var allowedMiss = regexp.MustCompile(`^read .*/lib[^/]*\.so[^/]*$`)

// fixtureHosts are every fixture root: one added later is streamed too.
var fixtureHosts = func() []string {
	entries, err := os.ReadDir(filepath.Join("..", "testdata", "hosts"))
	if err != nil {
		panic(err)
	}
	var hosts []string
	for _, e := range entries {
		if e.IsDir() {
			hosts = append(hosts, e.Name())
		}
	}
	return hosts
}()

func fixedNow() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }

func collectLocal(t testing.TB, root string) *snapshot.Snapshot {
	t.Helper()
	target, err := collectors.Local(root, collectors.LocalOptions{NoExec: true})
	if err != nil {
		t.Fatal(err)
	}
	// Over SSH a root is always a live host (a missing /proc file is an
	// error, never an image), so the local side is read as one too.
	target.Origin.Image = false
	snap, err := collectors.Collect(context.Background(), target, collectors.Options{Now: fixedNow, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// TestFixtureRootsNeedNoMiss streams each fixture root as a host would and
// collects it from the stream: the snapshot must be the one collected from
// the directory, and no name may have been fetched after the stream. A new
// collector that reads outside the stream's rules fails here, naming the
// count, until a rule in remote.go covers what it reads.
func TestFixtureRootsNeedNoMiss(t *testing.T) {
	for _, h := range fixtureHosts {
		t.Run(h, func(t *testing.T) {
			root, err := filepath.Abs(filepath.Join("..", "testdata", "hosts", h))
			if err != nil {
				t.Fatal(err)
			}
			want := collectLocal(t, root)
			ctx := context.Background()
			out, err := shFetcher{}.output(ctx, snapshotScript(root, collectors.DefaultMaxFileSize+1))
			if err != nil {
				t.Fatal(err)
			}
			tr := newTree(ctx, shFetcher{}, root, collectors.DefaultMaxFileSize+1)
			var misses []string
			tr.onMiss = func(what string) {
				// Allowed: a library read for its version banner (hundreds
				// of MB, streamed only when its name has no version).
				if !allowedMiss.MatchString(what) {
					misses = append(misses, what)
				}
			}
			if err := tr.load(out); err != nil {
				t.Fatal(err)
			}
			got, err := collectors.Collect(ctx, collectors.Target{Origin: snapshot.Origin{Kind: "local", Root: root}, Files: collectors.Chroot(tr)}, collectors.Options{Now: fixedNow, Version: "test"})
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(encode(t, want), encode(t, got)); d != "" {
				t.Errorf("snapshot from the stream differs from the local one (-local +stream):\n%s", d)
			}
			if len(misses) > 0 {
				t.Errorf("fetched after the stream (add a rule in remote.go): %q", misses)
			}
		})
	}
}

func encode(t testing.TB, s *snapshot.Snapshot) string {
	t.Helper()
	var b bytes.Buffer
	if err := snapshot.Encode(&b, s); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// What a login shell's rc file prints before the script is never read as
// the host's: the listing and a streamed read both start at the marker.
func TestRCNoiseIsSkipped(t *testing.T) {
	noisy := noisyFetcher{}
	root := fixture(t, "web-node")
	ctx := context.Background()
	out, err := noisy.output(ctx, snapshotScript(root, collectors.DefaultMaxFileSize+1))
	if err != nil {
		t.Fatal(err)
	}
	tr := newTree(ctx, noisy, root, collectors.DefaultMaxFileSize+1)
	if err := tr.load(out); err != nil {
		t.Fatal(err)
	}
	got, err := collectors.Collect(ctx, collectors.Target{Origin: snapshot.Origin{Kind: "local", Root: root}, Files: collectors.Chroot(tr)}, collectors.Options{Now: fixedNow, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(encode(t, collectLocal(t, root)), encode(t, got)); d != "" {
		t.Errorf("(-local +noisy):\n%s", d)
	}
	// A file read after the stream, through the noise.
	want, err := os.ReadFile(filepath.Join(root, "etc", "sysctl.conf"))
	if err != nil {
		t.Fatal(err)
	}
	// As if the stream had not carried it.
	tr.nodes["etc/sysctl.conf"].data, tr.nodes["etc/sysctl.conf"].inStream = nil, false
	f, err := tr.Open("etc/sysctl.conf")
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(f)
	if err != nil || !bytes.Equal(data, want) {
		t.Errorf("read through the noise: %q, %v; want %q", data, err, want)
	}
}

type noisyFetcher struct{}

const motd = "Welcome! fleetaudit-stream-star\x00 (rc noise)\n"

func (noisyFetcher) output(ctx context.Context, script string) ([]byte, error) {
	out, err := shFetcher{}.output(ctx, script)
	return append([]byte(motd), out...), err
}

func (noisyFetcher) stream(ctx context.Context, script string) (io.ReadCloser, error) {
	out, err := noisyFetcher{}.output(ctx, script)
	return io.NopCloser(bytes.NewReader(out)), err
}
