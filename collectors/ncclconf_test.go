package collectors

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseNCCLConf(t *testing.T) {
	in := strings.Join([]string{
		"# site defaults",                 // 1
		"NCCL_DEBUG=WARN",                 // 2
		"",                                // 3
		"NCCL_SOCKET_IFNAME==ens1f0",      // 4: NCCL's exact-match prefix
		`NCCL_TOPO_FILE="/etc/t.xml"`,     // 5: quotes are kept
		"NCCL_DEBUG = INFO",               // 6
		"NCCL_ALGO",                       // 7
		"  # indented comment=x",          // 8: only column 0 starts a comment
		"=orphan",                         // 9
		"NCCL_IB_HCA=mlx5_0:1, ",          // 10: trailing space kept
		"CUDA_DEVICE_MAX_CONNECTIONS=1\r", // 11: NCCL keeps the CR
	}, "\n")
	want := []ncclAssignment{
		{Name: "NCCL_DEBUG", Value: "WARN", Line: 2},
		{Name: "NCCL_SOCKET_IFNAME", Value: "=ens1f0", Line: 4},
		{Name: "NCCL_TOPO_FILE", Value: `"/etc/t.xml"`, Line: 5},
		{Name: "NCCL_IB_HCA", Value: "mlx5_0:1, ", Line: 10},
		{Name: "CUDA_DEVICE_MAX_CONNECTIONS", Value: "1\r", Line: 11},
	}
	wantErrs := []string{
		`parse error: line 6: "NCCL_DEBUG " is not a variable name (NCCL does not trim spaces)`,
		`parse error: line 7: no '=' in "NCCL_ALGO"; NCCL ignores the line`,
		`parse error: line 8: "  # indented comment" is not a variable name (NCCL does not trim spaces)`,
		`parse error: line 9: "" is not a variable name (NCCL does not trim spaces)`,
	}
	got, errs := parseNCCLConf([]byte(in))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("assignments (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantErrs, hwErrorStrings(t, errs)); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

func TestParseEnvironmentFile(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []ncclAssignment
		errs []string
	}{
		{
			name: "ubuntu default",
			in:   `PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/usr/games:/usr/local/games:/snap/bin"` + "\n",
			want: []ncclAssignment{{Name: "PATH", Value: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/usr/games:/usr/local/games:/snap/bin", Line: 1}},
		},
		{
			name: "forms pam_env accepts",
			in: strings.Join([]string{
				"export NCCL_A=1",      // 1
				`NCCL_B="x y"`,         // 2
				"NCCL_C='v'",           // 3
				"NCCL_D=a#comment",     // 4
				"  # comment",          // 5
				"NCCL_E=one \\",        // 6
				"   two",               // 7
				"NCCL_F",               // 8: unsets
				`NCCL_G="a"b"`,         // 9: inner quotes stay
				"=x",                   // 10
				"\tFI_EFA_FORK_SAFE=1", // 11
				"NCCL_H='open",         // 12
			}, "\n"),
			want: []ncclAssignment{
				{Name: "NCCL_A", Value: "1", Line: 1},
				{Name: "NCCL_B", Value: "x y", Line: 2},
				{Name: "NCCL_C", Value: "v", Line: 3},
				{Name: "NCCL_D", Value: "a", Line: 4},
				{Name: "NCCL_E", Value: "one two", Line: 6},
				{Name: "NCCL_F", Line: 8, Unset: true},
				{Name: "NCCL_G", Value: `a"b`, Line: 9},
				{Name: "FI_EFA_FORK_SAFE", Value: "1", Line: 11},
				{Name: "NCCL_H", Value: "open", Line: 12},
			},
		},
		{
			name: "names pam_env rejects",
			in:   "NCCL-BAD=1\nNCCL_OK=1\nNCCL X=1\n",
			want: []ncclAssignment{{Name: "NCCL_OK", Value: "1", Line: 2}},
			errs: []string{
				`parse error: line 1: "NCCL-BAD" is not an alphanumeric name; pam_env ignores the line`,
				`parse error: line 3: "NCCL X" is not an alphanumeric name; pam_env ignores the line`,
			},
		},
		{name: "trailing backslash at EOF", in: "NCCL_A=1\\", want: []ncclAssignment{{Name: "NCCL_A", Value: "1\\", Line: 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, errs := parseEnvironmentFile([]byte(tt.in))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("assignments (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.errs, hwErrorStrings(t, errs)); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseProfileScript(t *testing.T) {
	ev := func(name, value string, line int, export, assign bool) profileEvent {
		return profileEvent{Var: ncclAssignment{Name: name, Value: value, Line: line}, Export: export, Assign: assign}
	}
	in := strings.Join([]string{
		"# NCCL defaults",                             // 1
		"export NCCL_SOCKET_IFNAME=bond0",             // 2
		"NCCL_IB_HCA=mlx5",                            // 3
		"export NCCL_IB_HCA",                          // 4
		"export NCCL_A=1 NCCL_B=2",                    // 5
		"export NCCL_C='=mlx5_0' NCCL_D=\"^mlx5_1\"",  // 6
		`export NCCL_E="a"'b'c`,                       // 7
		"FI_PROVIDER=efa    # not exported",           // 8
		"export NCCL_F=a#b",                           // 9
		"export NCCL_G=$(cat /etc/g)",                 // 10
		`export NCCL_H="${H}"`,                        // 11
		"NCCL_I=1 ./run.sh",                           // 12
		"if [ -d /opt/x ]; then . /opt/x/init.sh; fi", // 13
		"export -n NCCL_J",                            // 14
		`"NCCL_K"=1`,                                  // 15
		`export "NCCL_L=1"`,                           // 16
		`export NCCL_M="PHB`,                          // 17
		"    export NCCL_N=2",                         // 18
		"echo hi",                                     // 19
		"export",                                      // 20
		"eval $(/usr/bin/locale-check C.UTF-8)",       // 21
		"export NCCL_O=x\\",                           // 22
	}, "\n")
	want := []profileEvent{
		ev("NCCL_SOCKET_IFNAME", "bond0", 2, true, true),
		ev("NCCL_IB_HCA", "mlx5", 3, false, true),
		ev("NCCL_IB_HCA", "", 4, true, false),
		ev("NCCL_A", "1", 5, true, true),
		ev("NCCL_B", "2", 5, true, true),
		ev("NCCL_C", "=mlx5_0", 6, true, true),
		ev("NCCL_D", "^mlx5_1", 6, true, true),
		ev("NCCL_E", "abc", 7, true, true),
		ev("FI_PROVIDER", "efa", 8, false, true),
		ev("NCCL_F", "a#b", 9, true, true),
		ev("NCCL_L", "1", 16, true, true),
		ev("NCCL_N", "2", 18, true, true),
	}
	got, errs := parseProfileScript([]byte(in))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	wantErrs := []string{`parse error: line 17: unterminated " quote`}
	if diff := cmp.Diff(wantErrs, hwErrorStrings(t, errs)); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

func TestCollectNCCLConfig(t *testing.T) {
	dir := t.TempDir()
	hwWriteTree(t, dir, map[string]string{
		"etc/nccl.conf":             "NCCL_DEBUG=INFO\nNCCL_DEBUG=TRACE\nNCCL_ALGO=Ring\nNCCL_IB_HCA=mlx5\n",
		"etc/environment":           "NCCL_DEBUG=WARN\nNCCL_IB_HCA=mlx5_0\nNCCL_IB_HCA\nLANG=C.UTF-8\n",
		"etc/profile.d/10-a.sh":     "NCCL_SOCKET_IFNAME=eth0\nFI_PROVIDER=efa\n",
		"etc/profile.d/20-b.sh":     "export NCCL_SOCKET_IFNAME\nexport FI_EFA_USE_DEVICE_RDMA=1\n",
		"etc/profile.d/30-c.sh":     "export NCCL_DEBUG=VERSION\n",
		"etc/profile.d/40-skip.csh": "setenv NCCL_DEBUG INFO\n",
	})
	c := hwTestCollection(dir)
	collectNCCLConfig(c)
	cfg := c.snap.NCCLConfig
	if diff := cmp.Diff(map[string]string{"NCCL_DEBUG": "INFO", "NCCL_ALGO": "Ring", "NCCL_IB_HCA": "mlx5"}, cfg.File); diff != "" {
		t.Errorf("file (-want +got):\n%s", diff)
	}
	wantEnv := map[string]string{"NCCL_DEBUG": "VERSION", "NCCL_SOCKET_IFNAME": "eth0", "FI_EFA_USE_DEVICE_RDMA": "1"}
	if diff := cmp.Diff(wantEnv, cfg.Env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	wantEffective := map[string]string{"NCCL_DEBUG": "VERSION", "NCCL_ALGO": "Ring", "NCCL_IB_HCA": "mlx5", "NCCL_SOCKET_IFNAME": "eth0", "FI_EFA_USE_DEVICE_RDMA": "1"}
	if diff := cmp.Diff(wantEffective, cfg.Effective); diff != "" {
		t.Errorf("effective (-want +got):\n%s", diff)
	}
	wantSources := map[string]string{
		"nccl_config.file.NCCL_DEBUG":                  "/etc/nccl.conf:1",
		"nccl_config.file.NCCL_ALGO":                   "/etc/nccl.conf:3",
		"nccl_config.file.NCCL_IB_HCA":                 "/etc/nccl.conf:4",
		"nccl_config.env.NCCL_DEBUG":                   "/etc/profile.d/30-c.sh:1",
		"nccl_config.env.NCCL_SOCKET_IFNAME":           "/etc/profile.d/10-a.sh:1",
		"nccl_config.env.FI_EFA_USE_DEVICE_RDMA":       "/etc/profile.d/20-b.sh:2",
		"nccl_config.effective.NCCL_DEBUG":             "/etc/profile.d/30-c.sh:1",
		"nccl_config.effective.NCCL_ALGO":              "/etc/nccl.conf:3",
		"nccl_config.effective.NCCL_IB_HCA":            "/etc/nccl.conf:4",
		"nccl_config.effective.NCCL_SOCKET_IFNAME":     "/etc/profile.d/10-a.sh:1",
		"nccl_config.effective.FI_EFA_USE_DEVICE_RDMA": "/etc/profile.d/20-b.sh:2",
	}
	if diff := cmp.Diff(wantSources, sourceTexts(c.snap.Sources)); diff != "" {
		t.Errorf("sources (-want +got):\n%s", diff)
	}
	if len(c.snap.Errors) > 0 {
		t.Errorf("errors: %v", c.snap.Errors)
	}
}

func FuzzNCCLConf(f *testing.F) {
	for _, p := range []string{
		"gpu-node/etc/nccl.conf", "gpu-node/etc/profile.d/nccl.sh", "gpu-node/etc/environment",
		"dropins/etc/nccl.conf", "dropins/etc/environment", "dropins/etc/profile.d/50-nccl.sh",
		"dropins/etc/profile.d/60-site.sh", "rhel-node/etc/profile.d/which2.sh",
		"garbage/etc/nccl.conf", "garbage/etc/environment", "garbage/etc/profile.d/nccl.sh",
	} {
		if data, err := os.ReadFile(filepath.Join("..", "testdata", "hosts", filepath.FromSlash(p))); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("NCCL_X=1 \\\n  NCCL_Y=2\nexport A=\"b\"'c'd #e\n'"))
	f.Fuzz(func(t *testing.T, data []byte) {
		lines := strings.Count(string(data), "\n") + 1
		check := func(parser string, as []ncclAssignment, errs []error) {
			for _, a := range as {
				if a.Line < 1 || a.Line > lines {
					t.Errorf("%s: %s at line %d outside 1..%d", parser, a.Name, a.Line, lines)
				}
				if !isPosixVarName(a.Name) {
					t.Errorf("%s: bad name %q", parser, a.Name)
				}
				if strings.Contains(a.Value, "\n") {
					t.Errorf("%s: %s value %q spans lines", parser, a.Name, a.Value)
				}
			}
			for _, err := range errs {
				if !errors.Is(err, ErrParse) || !strings.HasPrefix(err.Error(), "parse error: line ") {
					t.Errorf("%s: error %q: want an ErrParse naming its line", parser, err)
				}
			}
		}
		as, errs := parseNCCLConf(data)
		check("nccl.conf", as, errs)
		as, errs = parseEnvironmentFile(data)
		check("environment", as, errs)
		events, errs := parseProfileScript(data)
		as = as[:0]
		for _, ev := range events {
			if !ev.Assign && !ev.Export {
				t.Errorf("profile.d: event for %s does nothing", ev.Var.Name)
			}
			as = append(as, ev.Var)
		}
		check("profile.d", as, errs)
	})
}
