package collectors

import "testing"

// NCCL_TOPO_FILE is checked against the root: absent is a fact with the
// line that named it; present, relative or unset is not reported.
func TestNCCLTopoFileMissing(t *testing.T) {
	for _, tc := range []struct {
		name    string
		files   map[string]string
		missing bool
		source  string
	}{
		{"missing", map[string]string{"etc/nccl.conf": "NCCL_DEBUG=WARN\nNCCL_TOPO_FILE=/etc/nccl/topo.xml\n"}, true, "/etc/nccl.conf:2"},
		{"present", map[string]string{"etc/nccl.conf": "NCCL_TOPO_FILE=/etc/nccl/topo.xml\n", "etc/nccl/topo.xml": "<system/>"}, false, ""},
		{"env wins", map[string]string{"etc/nccl.conf": "NCCL_TOPO_FILE=/etc/nccl/topo.xml\n", "etc/nccl/topo.xml": "<system/>", "etc/profile.d/nccl.sh": "export NCCL_TOPO_FILE=/opt/topo/vm.xml\n"}, true, "/etc/profile.d/nccl.sh:1"},
		{"relative", map[string]string{"etc/nccl.conf": "NCCL_TOPO_FILE=topo.xml\n"}, false, ""},
		{"unset", map[string]string{"etc/nccl.conf": "NCCL_DEBUG=WARN\n"}, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := versionsTestCollection(Dir(versionsHostTree(t, tc.files)))
			collectNCCLConfig(c)
			if got := c.snap.NCCLConfig.TopoFileMissing; got != tc.missing {
				t.Errorf("topo_file_missing = %v, want %v", got, tc.missing)
			}
			src, ok := c.snap.Sources["nccl_config.topo_file_missing"]
			if tc.source == "" && ok || tc.source != "" && src.String() != tc.source {
				t.Errorf("source %q (%v), want %q", src.String(), ok, tc.source)
			}
			if len(c.snap.Errors) != 0 {
				t.Errorf("errors: %v", c.snap.Errors)
			}
		})
	}
}
