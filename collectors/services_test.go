package collectors

import (
	"errors"
	"testing"

	"github.com/fleetaudit/fleetaudit/internal/debroot"
	"github.com/fleetaudit/fleetaudit/snapshot"
	"github.com/google/go-cmp/cmp"
)

func TestParseRlimitKB(t *testing.T) {
	for value, want := range map[string][2]string{
		"infinity":     {"unlimited", "unlimited"},
		"64M":          {"65536", "65536"},
		"8388608":      {"8192", "8192"},
		"64K:infinity": {"64", "unlimited"},
		"1G:2G":        {"1048576", "2097152"},
		"1.5G":         {"1572864", "1572864"},
		" 8M":          {"8192", "8192"},
		// parse_size's sums, smaller suffix after larger (systemd
		// test-parse-util.c), and an empty hard half (rlimit_parse).
		"3.5G3B":            {"3670016", "3670016"},
		" 4 M 11.5K":        {"4107", "4107"},
		"8M:":               {"8192", "8192"},
		"1023":              {"0", "0"},
		"infinity:infinity": {"unlimited", "unlimited"},
	} {
		soft, hard, err := parseRlimitKB(value)
		if err != nil || soft != want[0] || hard != want[1] {
			t.Errorf("parseRlimitKB(%q) = %q, %q, %v; want %v", value, soft, hard, err, want)
		}
	}
	// "512KB": after K only a smaller suffix may follow a number, and "B"
	// has none; a blank before ":" ends the number with nothing after it;
	// soft above hard is refused (-EILSEQ).
	for _, value := range []string{"512KB", "8M :16M", "2G:1G", "3B3.5G", "12P12P", "", "unlimited", "-1", "8Q", "8 M B", "1:2:3", "99999999999999999999", "16E", "0x10", ":"} {
		if _, _, err := parseRlimitKB(value); !errors.Is(err, ErrParse) {
			t.Errorf("parseRlimitKB(%q): error %v, want ErrParse", value, err)
		}
	}
}

func TestParseUnitSetting(t *testing.T) {
	unit := "# comment\n[Unit]\nLimitMEMLOCK=1M\n[Service]\nType=notify\n; LimitMEMLOCK=2M\nLimitMEMLOCK=\\\n  infinity\nLimitMEMLOCK=\nlimitmemlock=5M\nbroken line\n[Install\nLimitMEMLOCK=9M\n"
	got, errs, stopped := parseUnitSetting([]byte(unit), "Service", "LimitMEMLOCK")
	if !stopped {
		t.Error("[Install without ']': systemd stops reading the file, not reported")
	}
	want := []unitAssignment{{Line: 7, Value: "infinity"}, {Line: 9, Value: ""}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("assignments (-want +got):\n%s", diff)
	}
	var lines []int
	for _, err := range errs {
		var le *confLineError
		if !errors.As(err, &le) {
			t.Fatalf("error %v is not a line error", err)
		}
		lines = append(lines, le.Line)
	}
	if diff := cmp.Diff([]int{11, 12}, lines); diff != "" {
		t.Errorf("error lines (-want +got):\n%s", diff)
	}
}

func TestParseProcLimitsMemlock(t *testing.T) {
	data := []byte("Limit                     Soft Limit           Hard Limit           Units     \nMax locked memory         67108864             unlimited            bytes     \n")
	soft, hard, err := parseProcLimitsMemlock(data)
	if err != nil || soft != "65536" || hard != "unlimited" {
		t.Errorf("got %q, %q, %v", soft, hard, err)
	}
	for _, bad := range []string{"", "Max open files 1024 1024 files\n", "Max locked memory 64\n", "Max locked memory lots lots bytes\n"} {
		if _, _, err := parseProcLimitsMemlock([]byte(bad)); !errors.Is(err, ErrParse) {
			t.Errorf("%q: error %v, want ErrParse", bad, err)
		}
	}
}

// The unit file, its drop-ins (the last assignment wins), the manager's
// default, a masked unit, and the running process.
func TestCollectServices(t *testing.T) {
	root := versionsHostTree(t, map[string]string{
		"usr/lib/systemd/system/slurmd.service":           "[Service]\nLimitMEMLOCK=infinity\n",
		"etc/systemd/system/slurmd.service.d/50-cap.conf": "[Service]\nLimitMEMLOCK=64M\n",
		"usr/lib/systemd/system/service.d/10-all.conf":    "[Service]\nLimitMEMLOCK=bogus\n",
		"usr/lib/systemd/system/containerd.service":       "[Service]\nExecStart=/usr/bin/containerd\n",
		"etc/systemd/system.conf.d/60-memlock.conf":       "[Manager]\nDefaultLimitMEMLOCK=16M:32M\n",
		"usr/lib/systemd/system/kubelet.service":          "[Service]\nExecStart=/usr/bin/kubelet\n",
		"etc/systemd/system/kubelet.service":              "-> /dev/null",
		"proc/77/comm":                                    "containerd\n",
		"proc/77/limits":                                  "Max locked memory         unlimited            unlimited            bytes\n",
		"proc/78/comm":                                    "containerd\n",
		"proc/900/comm":                                   "crio\n",
		"proc/900/limits":                                 "Max locked memory  x y bytes\n",
		"etc/systemd/system/docker.service.d/README":      "not a drop-in",
	})
	c := versionsTestCollection(Dir(root))
	collectServices(c)
	want := map[string]snapshot.ServiceUnit{
		"slurmd.service": {
			File:    "/usr/lib/systemd/system/slurmd.service",
			DropIns: []string{"/usr/lib/systemd/system/service.d/10-all.conf", "/etc/systemd/system/slurmd.service.d/50-cap.conf"},
			Memlock: &snapshot.MemlockLimit{Soft: "65536", Hard: "65536"},
		},
		"containerd.service": {
			File: "/usr/lib/systemd/system/containerd.service", DropIns: []string{"/usr/lib/systemd/system/service.d/10-all.conf"},
			Memlock:    &snapshot.MemlockLimit{Soft: "16384", Hard: "32768"},
			RunningPID: 77, RunningMemlock: &snapshot.MemlockLimit{Soft: "unlimited", Hard: "unlimited"},
		},
		"kubelet.service": {File: "/dev/null", Masked: true, DropIns: []string{}},
		// Not installed as a unit: neither its configuration nor the
		// manager's default is known to apply.
		"crio.service": {DropIns: []string{}, RunningPID: 900},
	}
	if diff := cmp.Diff(want, c.snap.Services.Units); diff != "" {
		t.Errorf("units (-want +got):\n%s", diff)
	}
	for fact, src := range map[string]string{
		"services.units.slurmd.service.memlock":     "/etc/systemd/system/slurmd.service.d/50-cap.conf:2",
		"services.units.containerd.service.memlock": "/etc/systemd/system.conf.d/60-memlock.conf:2",
	} {
		if got := c.snap.Sources[fact].String(); got != src {
			t.Errorf("%s: source %q, want %q", fact, got, src)
		}
	}
	var paths []string
	for _, e := range c.snap.Errors {
		paths = append(paths, e.Path)
	}
	if diff := cmp.Diff([]string{"/usr/lib/systemd/system/service.d/10-all.conf", "/proc/900/limits"}, paths); diff != "" {
		t.Errorf("errors (-want +got):\n%s\n%v", diff, c.snap.Errors)
	}
}

// FuzzServiceLimits: the unit and /proc limits parsers never panic, and the
// values they accept are KiB numbers or "unlimited".
func FuzzServiceLimits(f *testing.F) {
	for _, s := range []string{
		"[Service]\nLimitMEMLOCK=infinity\n", "[Service]\nLimitMEMLOCK=64K:128M\n", "[Service]\nLimitMEMLOCK=\\\n8M\n",
		"[Manager]\nDefaultLimitMEMLOCK=8M\n", "Max locked memory 65536 65536 bytes\n", "[Service\nx", "LimitMEMLOCK=1.5G",
		"[Service]\nLimitMEMLOCK=3.5G3B\n", "[Service]\nLimitMEMLOCK= 4 M 11.5K:infinity\r\n",
	} {
		f.Add(s)
	}
	// The unit files of real Debian packages.
	for _, pkg := range []string{"slurmd", "containerd", "nftables", "firewalld", "rdma-core", "openssh-server"} {
		for _, s := range realpkgSeeds(f, pkg, "lib/systemd/system/*") {
			f.Add(string(s))
		}
	}
	for _, data := range debroot.Files(f, "systemd", "etc/systemd/system.conf", "lib/systemd/system/systemd-logind.service", "lib/systemd/system/user@.service") {
		f.Add(string(data))
	}
	ok := func(v string) bool {
		if v == "unlimited" {
			return true
		}
		_, err := parseNetInt(v)
		return err == nil
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, section := range []string{"Service", "Manager"} {
			as, _, _ := parseUnitSetting([]byte(text), section, "LimitMEMLOCK")
			for _, a := range as {
				if soft, hard, err := parseRlimitKB(a.Value); err == nil && (!ok(soft) || !ok(hard)) {
					t.Errorf("parseRlimitKB(%q) = %q, %q", a.Value, soft, hard)
				}
			}
		}
		if soft, hard, err := parseRlimitKB(text); err == nil && (!ok(soft) || !ok(hard)) {
			t.Errorf("parseRlimitKB(%q) = %q, %q", text, soft, hard)
		}
		if soft, hard, err := parseProcLimitsMemlock([]byte(text)); err == nil && (!ok(soft) || !ok(hard)) {
			t.Errorf("parseProcLimitsMemlock(%q) = %q, %q", text, soft, hard)
		}
	})
}
