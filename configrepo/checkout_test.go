package configrepo

import (
	"context"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"
)

const cmaCfg = "layers/base/etc/default/grub.d/60-hugetlb.cfg"

// TestGateReadsCommittedBlobsNotWhatAttributesMakeOfThem: the change under
// review carries its own .gitattributes (and the repo may have filter
// drivers configured); hosts get the committed bytes, so the gate must read
// those and nothing else. Each case plants hugetlb_cma=6G in the layer every
// fleet shares, disguised by one trick.
func TestGateReadsCommittedBlobsNotWhatAttributesMakeOfThem(t *testing.T) {
	for _, tc := range []struct {
		name       string
		attributes string
		content    string
		// setup runs after the commit: repo config the change cannot carry
		// but that a checkout on the gating machine might have.
		setup func(t *testing.T, r *gitRepo, marker string)
	}{
		{
			// git archive leaves the file out: "the change reaches no fleet".
			name:       "export-ignore",
			attributes: "*.cfg export-ignore\n",
			content:    hugetlbCMA,
		},
		{
			// git archive expands %n into a newline, so a reassignment
			// hidden in a comment overrides the hazard for the gate only.
			name:       "export-subst",
			attributes: "*.cfg export-subst\n",
			content:    hugetlbCMA + "# $Format:%n$GRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\n",
		},
		{
			name:       "filter driver",
			attributes: "*.cfg filter=hide\n",
			content:    hugetlbCMA,
			setup: func(t *testing.T, r *gitRepo, marker string) {
				r.Git("config", "filter.hide.smudge", "touch '"+marker+"'; sed s/hugetlb_cma=6G/quiet/")
				r.Git("config", "filter.hide.clean", "cat")
			},
		},
		{
			// A \r after the closing quote: the gate parses a value hosts
			// never see.
			name:       "eol=crlf",
			attributes: "*.cfg text eol=crlf\n",
			content:    hugetlbCMA,
		},
		{
			name:       "working-tree-encoding",
			attributes: "*.cfg working-tree-encoding=UTF-16\n",
			content:    hugetlbCMA,
		},
		{
			// Attributes of the gating machine's clone count no more than
			// the change's own.
			name:    "info/attributes",
			content: hugetlbCMA,
			setup: func(t *testing.T, r *gitRepo, marker string) {
				r.Write(".git/info/attributes", "*.cfg export-ignore\n")
			},
		},
		{
			// A replace ref makes git show another blob in place of the
			// committed one; a clone on a host never gets it.
			name:    "replace ref",
			content: hugetlbCMA,
			setup: func(t *testing.T, r *gitRepo, marker string) {
				committed := r.Git("rev-parse", "HEAD:"+cmaCfg)
				r.Write("decoy", "# nothing to see\n")
				decoy := r.Git("hash-object", "-w", "decoy")
				r.Git("replace", committed, decoy)
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := baseRepo(t)
			base := r.Git("rev-parse", "HEAD")
			// Stage the file before the attributes exist, so the commit
			// holds exactly tc.content (add would convert it otherwise).
			r.Write(cmaCfg, tc.content)
			r.Git("add", cmaCfg)
			if tc.attributes != "" {
				r.Write(".gitattributes", tc.attributes)
				r.Git("add", ".gitattributes")
			}
			r.Git("commit", "-q", "-m", "reserve CMA for hugepages")
			head := r.Git("rev-parse", "HEAD")
			marker := filepath.Join(t.TempDir(), "smudged")
			if tc.setup != nil {
				tc.setup(t, r, marker)
			}

			co, err := CheckoutRef(context.Background(), r.Dir, head)
			if err != nil {
				t.Fatal(err)
			}
			f, ok := co.Files[cmaCfg]
			if !ok {
				t.Fatalf("%s is not in the checkout (files %v)", cmaCfg, fileNames(co.Files))
			}
			if diff := cmp.Diff(tc.content, string(f.Data)); diff != "" {
				t.Errorf("%s is not the committed blob (-want +got):\n%s", cmaCfg, diff)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Error("the repo's smudge filter ran")
			}

			gpu := fleetResult(t, gate(t, r, base, head), "gpu-training")
			if !slices.Contains(rules(gpu.Introduced), "hugetlb-cma-on-gpu") {
				t.Errorf("gpu-training: status %s introduced %v, want hugetlb-cma-on-gpu", gpu.Status, rules(gpu.Introduced))
			}
			if !slices.Contains(gpu.Changed, cmaCfg) {
				t.Errorf("gpu-training: changed %v, want %s", gpu.Changed, cmaCfg)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Error("the repo's smudge filter ran")
			}
		})
	}
}

// TestGateIgnoresTheCallersGitEnvironment: GIT_DIR and friends in the
// gate's environment (a CI job, a hook) must not make it read another repo,
// nor GIT_CONFIG_* change how it reads.
func TestGateIgnoresTheCallersGitEnvironment(t *testing.T) {
	r := baseRepo(t)
	base := r.Git("rev-parse", "HEAD")
	r.Write(cmaCfg, hugetlbCMA)
	head := r.Commit("reserve CMA for hugepages")

	other := newGitRepo(t)
	other.Write("README", "another repo\n")
	other.Commit("other")
	t.Setenv("GIT_DIR", filepath.Join(other.Dir, ".git"))
	t.Setenv("GIT_WORK_TREE", other.Dir)
	t.Setenv("GIT_CONFIG_COUNT", "1")
	t.Setenv("GIT_CONFIG_KEY_0", "core.useReplaceRefs")
	t.Setenv("GIT_CONFIG_VALUE_0", "true")
	t.Setenv("GIT_NAMESPACE", "elsewhere")

	for _, h := range []string{head, WorkTree} {
		gpu := fleetResult(t, gate(t, r, base, h), "gpu-training")
		if !slices.Contains(rules(gpu.Introduced), "hugetlb-cma-on-gpu") {
			t.Errorf("head %q: introduced %v, want hugetlb-cma-on-gpu", h, rules(gpu.Introduced))
		}
	}
}

// rawEntry is one entry of a tree object written byte for byte: git's own
// commands never write such names, a hostile repo can.
type rawEntry struct {
	mode, name, oid string
}

// rawTree writes a tree object with entries as given (git hash-object
// --literally skips the checks git applies to trees it builds).
func (r *gitRepo) rawTree(entries ...rawEntry) string {
	r.T.Helper()
	var buf []byte
	for _, e := range entries {
		oid, err := hex.DecodeString(e.oid)
		if err != nil {
			r.T.Fatal(err)
		}
		buf = append(buf, e.mode+" "+e.name+"\x00"...)
		buf = append(buf, oid...)
	}
	f := filepath.Join(r.T.TempDir(), "tree")
	if err := os.WriteFile(f, buf, 0o644); err != nil {
		r.T.Fatal(err)
	}
	return r.Git("hash-object", "-t", "tree", "--literally", "-w", f)
}

func (r *gitRepo) blob(content string) string {
	r.T.Helper()
	f := filepath.Join(r.T.TempDir(), "blob")
	if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
		r.T.Fatal(err)
	}
	return r.Git("hash-object", "-w", f)
}

func (r *gitRepo) commitTree(tree string) string {
	r.T.Helper()
	return r.Git("commit-tree", "-m", "crafted", tree)
}

func TestCraftedTreePathsNeverLeaveTheCheckout(t *testing.T) {
	r := newGitRepo(t)
	conf := r.blob("kernel.numa_balancing = 1\n")
	gitDir := r.rawTree(rawEntry{"100644", "config", r.blob("[core]\n\tfsmonitor = touch /tmp/pwned\n")})
	commit := r.commitTree(r.rawTree(
		rawEntry{"100644", "..", conf},
		rawEntry{"100644", "/abs.conf", conf},
		rawEntry{"100644", "a/../../up.conf", conf},
		rawEntry{"100644", "sub/./dot.conf", conf},
		rawEntry{"100644", "sub//empty.conf", conf},
		rawEntry{"100644", "back\\slash.conf", conf},
		rawEntry{"40000", ".GIT", gitDir},
		rawEntry{"160000", "module", conf}, // a gitlink: no blob to read
		rawEntry{"100644", "ok.conf", conf},
		rawEntry{"100755", "render.sh", r.blob("#!/bin/sh\n")},
	))
	co, err := CheckoutRef(context.Background(), r.Dir, commit)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"ok.conf", "render.sh"}, fileNames(co.Files)); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	if co.Files["render.sh"].Mode != 0o755 || co.Files["ok.conf"].Mode != 0o644 {
		t.Errorf("modes %v %v, want 0755 for a 100755 blob and 0644", co.Files["render.sh"].Mode, co.Files["ok.conf"].Mode)
	}
	var refused []string
	for p := range co.Refused {
		refused = append(refused, p)
	}
	slices.Sort(refused)
	want := []string{"..", "/abs.conf", ".GIT/config", "a/../../up.conf", "back\\slash.conf", "module", "sub//empty.conf", "sub/./dot.conf"}
	slices.Sort(want)
	if diff := cmp.Diff(want, refused); diff != "" {
		t.Errorf("refused (-want +got):\n%s", diff)
	}
	if why := co.Refused["module"]; !strings.Contains(why, "submodule") {
		t.Errorf("gitlink refused as %q, want it called a submodule", why)
	}

	// Written out for a render command, nothing lands outside its directory.
	top := t.TempDir()
	if err := co.Materialize(filepath.Join(top, "work", "tree")); err != nil {
		t.Fatal(err)
	}
	var written []string
	filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(top, p)
			written = append(written, filepath.ToSlash(rel))
		}
		return err
	})
	if diff := cmp.Diff([]string{"work/tree/ok.conf", "work/tree/render.sh"}, written); diff != "" {
		t.Errorf("written (-want +got):\n%s", diff)
	}
}

func TestCraftedTreesThatCannotBeCheckedOutAreErrors(t *testing.T) {
	r := newGitRepo(t)
	conf := r.blob("net.core.somaxconn = 128\n")
	for name, tc := range map[string]struct {
		entries []rawEntry
		want    string
	}{
		"duplicate path": {
			entries: []rawEntry{{"100644", "a.conf", conf}, {"100644", "a.conf", r.blob("other\n")}},
			want:    "listed twice",
		},
		"file and directory": {
			entries: []rawEntry{{"100644", "x", conf}, {"40000", "x", r.rawTree(rawEntry{"100644", "y", conf})}},
			want:    "is a file and the directory of x/y",
		},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := CheckoutRef(context.Background(), r.Dir, r.commitTree(r.rawTree(tc.entries...)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestCheckoutCaps: a repo too large to hold is an error, not an exhausted
// machine. A blob at several paths counts at each: a render command's
// checkout writes every copy.
func TestCheckoutCaps(t *testing.T) {
	r := newGitRepo(t)
	r.Write("a.conf", "0123456789\n")
	r.Write("b.conf", "0123456789\n")
	r.Write("c.conf", "0123456789\n")
	head := r.Commit("three copies of one blob")
	for _, tc := range []struct {
		name string
		lim  limits
		want string // "" for no error
	}{
		{"fits", limits{files: 3, bytes: 33}, ""},
		{"too many files", limits{files: 2, bytes: 1 << 20}, "more than 2 files"},
		{"too many bytes", limits{files: 10, bytes: 32}, "exceed 32 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for side, checkout := range map[string]func() (*Checkout, error){
				"ref":       func() (*Checkout, error) { return checkoutRef(context.Background(), r.Dir, head, tc.lim) },
				"work tree": func() (*Checkout, error) { return checkoutWorkTree(context.Background(), r.Dir, tc.lim) },
			} {
				co, err := checkout()
				if tc.want == "" {
					if err != nil || len(co.Files) != 3 {
						t.Errorf("%s: err %v files %v", side, err, co)
					}
					continue
				}
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s: error %v, want %q", side, err, tc.want)
				}
			}
		})
	}
}

// TestWorkTreeUnderASymlinkedDirectoryIsRefused: a tracked file whose
// directory became a symlink in the work tree would be read from wherever
// the link points.
func TestWorkTreeUnderASymlinkedDirectoryIsRefused(t *testing.T) {
	r := baseRepo(t)
	r.Write("layers/gpu/etc/sysctl.d/50-numa.conf", "kernel.numa_balancing = 0\n")
	base := r.Commit("numa balancing off")
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "50-numa.conf"), []byte("kernel.numa_balancing = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(r.Dir, "layers/gpu/etc/sysctl.d")
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, dir); err != nil {
		t.Fatal(err)
	}
	co, err := CheckoutWorkTree(context.Background(), r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if f, ok := co.Files["layers/gpu/etc/sysctl.d/50-numa.conf"]; ok {
		t.Fatalf("read %q through the symlinked directory", f.Data)
	}
	why := co.Refused["layers/gpu/etc/sysctl.d/50-numa.conf"]
	if !strings.Contains(why, "symlink") {
		t.Errorf("refused as %q, want the symlinked directory named", why)
	}
	gpu := fleetResult(t, gate(t, r, base, WorkTree), "gpu-training")
	if slices.Contains(rules(gpu.Introduced), "numa-balancing-enabled") {
		t.Error("the gate read the file outside the repo")
	}
}

// TestWorkTreeFIFOIsRefusedWithoutBlocking: the gate never waits on a FIFO
// in the work tree (a tracked file replaced by one: git lists only files
// and symlinks it does not track).
func TestWorkTreeFIFOIsRefusedWithoutBlocking(t *testing.T) {
	r := baseRepo(t)
	fifo := filepath.Join(r.Dir, "layers/web/etc/sysctl.d/60-net.conf")
	if err := os.Remove(fifo); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan *Checkout, 1)
	go func() {
		co, err := CheckoutWorkTree(context.Background(), r.Dir)
		if err != nil {
			t.Error(err)
		}
		done <- co
	}()
	select {
	case co := <-done:
		if co != nil && !strings.Contains(co.Refused["layers/web/etc/sysctl.d/60-net.conf"], "FIFO") {
			t.Errorf("refused %v, want the FIFO named", co.Refused)
		}
	case <-time.After(time.Minute): // a hang guard, not a timing assertion
		t.Fatal("reading the work tree hangs on a FIFO")
	}
}

// TestManyRefusedFilesAreCountedNotAllListed: the error of a fleet with
// refused files stays readable (and bounded) however many there are.
func TestManyRefusedFilesAreCountedNotAllListed(t *testing.T) {
	r := baseRepo(t)
	base := r.Git("rev-parse", "HEAD")
	dir := filepath.Join(r.Dir, "layers/web/etc/sysctl.d")
	for i := range 15 {
		if err := os.Symlink("/etc/hostname", filepath.Join(dir, fmt.Sprintf("%02d-link.conf", i))); err != nil {
			t.Fatal(err)
		}
	}
	head := r.Commit("fifteen symlinks")
	res := gate(t, r, base, head)
	if len(res.Errors) != 1 {
		t.Fatalf("errors %+v, want one for web-serving", res.Errors)
	}
	msg := res.Errors[0].Error
	if !strings.Contains(msg, "00-link.conf") || !strings.Contains(msg, "; and 5 more") || strings.Contains(msg, "14-link.conf") {
		t.Errorf("error %q, want the first ten refused files and a count of the rest", msg)
	}
}

func fileNames(files fstest.MapFS) []string {
	var out []string
	for name := range files {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}
