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
