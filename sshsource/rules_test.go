package sshsource

import (
	"path"
	"regexp"
	"strings"
	"testing"

	"github.com/fleetaudit/fleetaudit/collectors"
)

// TestStreamCoversBootPaths: every path the boot collector declares is in
// the stream, whether or not a fixture root has it: its directories are
// listed, and it is read (a file) or listed (a directory).
func TestStreamCoversBootPaths(t *testing.T) {
	d := regexp.MustCompile(`^` + alternation(descend) + `$`)
	r := regexp.MustCompile(`^` + alternation(read) + `$`)
	for _, p := range collectors.BootPaths() {
		name := strings.TrimPrefix(p, "/")
		for dir := path.Dir(name); dir != "."; dir = path.Dir(dir) {
			if !d.MatchString("./" + dir) {
				t.Errorf("%s: its directory /%s is not listed", p, dir)
			}
		}
		if !d.MatchString("./"+name) && !r.MatchString("./"+name) {
			t.Errorf("%s is neither read nor listed", p)
		}
	}
}

// TestStreamCoversOFIPluginDirs: the directories where installers and the
// Ubuntu GPU AMIs put aws-ofi-nccl are listed in the first round trip.
func TestStreamCoversOFIPluginDirs(t *testing.T) {
	d := regexp.MustCompile(`^` + alternation(descend) + `$`)
	for _, dir := range []string{
		"opt/amazon/ofi-nccl/lib", "opt/amazon/ofi-nccl/lib64",
		"opt/amazon/ofi-nccl/lib/x86_64-linux-gnu", "opt/amazon/ofi-nccl/lib/aarch64-linux-gnu",
		"opt/aws-ofi-nccl/lib", "opt/aws-ofi-nccl/lib/x86_64-linux-gnu", "opt/aws-ofi-nccl/lib/aarch64-linux-gnu",
	} {
		if !d.MatchString("./" + dir) {
			t.Errorf("/%s is not listed", dir)
		}
	}
}
