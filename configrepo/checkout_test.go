package configrepo

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

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
				r.git("config", "filter.hide.smudge", "touch '"+marker+"'; sed s/hugetlb_cma=6G/quiet/")
				r.git("config", "filter.hide.clean", "cat")
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
				r.write(".git/info/attributes", "*.cfg export-ignore\n")
			},
		},
		{
			// A replace ref makes git show another blob in place of the
			// committed one; a clone on a host never gets it.
			name:    "replace ref",
			content: hugetlbCMA,
			setup: func(t *testing.T, r *gitRepo, marker string) {
				committed := r.git("rev-parse", "HEAD:"+cmaCfg)
				r.write("decoy", "# nothing to see\n")
				decoy := r.git("hash-object", "-w", "decoy")
				r.git("replace", committed, decoy)
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := baseRepo(t)
			base := r.git("rev-parse", "HEAD")
			// Stage the file before the attributes exist, so the commit
			// holds exactly tc.content (add would convert it otherwise).
			r.write(cmaCfg, tc.content)
			r.git("add", cmaCfg)
			if tc.attributes != "" {
				r.write(".gitattributes", tc.attributes)
				r.git("add", ".gitattributes")
			}
			r.git("commit", "-q", "-m", "reserve CMA for hugepages")
			head := r.git("rev-parse", "HEAD")
			marker := filepath.Join(t.TempDir(), "smudged")
			if tc.setup != nil {
				tc.setup(t, r, marker)
			}

			co, err := CheckoutRef(context.Background(), r.dir, head)
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
	base := r.git("rev-parse", "HEAD")
	r.write(cmaCfg, hugetlbCMA)
	head := r.commit("reserve CMA for hugepages")

	other := newGitRepo(t)
	other.write("README", "another repo\n")
	other.commit("other")
	t.Setenv("GIT_DIR", filepath.Join(other.dir, ".git"))
	t.Setenv("GIT_WORK_TREE", other.dir)
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

func fileNames(files fstest.MapFS) []string {
	var out []string
	for name := range files {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

var _ = strings.Contains
