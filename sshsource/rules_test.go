package sshsource

import (
	"regexp"
	"testing"
)

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
