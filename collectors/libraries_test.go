package collectors

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/fleetaudit/fleetaudit/snapshot"
	"github.com/google/go-cmp/cmp"
)

func TestParseLdSoConf(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []ldSoConfEntry
		wantErr []string
	}{
		{
			name: "Debian and Ubuntu",
			in:   "include /etc/ld.so.conf.d/*.conf\n\n",
			want: []ldSoConfEntry{{Includes: []string{"/etc/ld.so.conf.d/*.conf"}, Line: 1}},
		},
		{
			name: "multiarch drop-in",
			in:   "# Multiarch support\n/usr/local/lib/x86_64-linux-gnu\n/lib/x86_64-linux-gnu\n/usr/lib/x86_64-linux-gnu\n",
			want: []ldSoConfEntry{{Dir: "/usr/local/lib/x86_64-linux-gnu", Line: 2}, {Dir: "/lib/x86_64-linux-gnu", Line: 3}, {Dir: "/usr/lib/x86_64-linux-gnu", Line: 4}},
		},
		{
			name: "RHEL relative include and placeholder",
			in:   "include ld.so.conf.d/*.conf\n# Placeholder file, no vDSO hwcap entries used in this kernel.\n",
			want: []ldSoConfEntry{{Includes: []string{"ld.so.conf.d/*.conf"}, Line: 1}},
		},
		{
			name: "comments anywhere, types, slashes, tabs, several patterns, hwcap",
			in:   "  /opt/lib/ # trailing\n/usr/X11R6/lib=libc6\ninclude\ta.conf  b/*.conf\nhwcap 1 nosegneg\nHWCAP 0 x\n/\ninclude\n#/commented\n",
			want: []ldSoConfEntry{{Dir: "/opt/lib", Line: 1}, {Dir: "/usr/X11R6/lib", Line: 2}, {Includes: []string{"a.conf", "b/*.conf"}, Line: 3}},
			// "include" alone is no directive but a relative directory name.
			wantErr: []string{"line 7: \"include\" is not an absolute directory"},
		},
		{
			name:    "relative directory",
			in:      "lib/relative\n/ok\n",
			want:    []ldSoConfEntry{{Dir: "/ok", Line: 2}},
			wantErr: []string{"line 1: \"lib/relative\" is not an absolute directory"},
		},
		{
			name:    "includex is a directory name, Include is not the directive",
			in:      "/includex\nInclude x\n",
			want:    []ldSoConfEntry{{Dir: "/includex", Line: 1}},
			wantErr: []string{"line 2: \"Include x\" is not an absolute directory"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, errs := parseLdSoConf([]byte(tt.in))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			versionsCheckErrors(t, errs, tt.wantErr)
		})
	}
}

// The METADATA of nvidia-nccl-cu12 2.20.5, as pip installs it.
const ncclMetadata = `Metadata-Version: 2.1
Name: nvidia-nccl-cu12
Version: 2.20.5
Summary: NVIDIA Collective Communication Library (NCCL) Runtime
Home-page: https://developer.nvidia.com/cuda-zone
Author: Nvidia CUDA Installer Team
Author-email: cuda_installer@nvidia.com
License: NVIDIA Proprietary Software
Keywords: cuda,nvidia,runtime,machine learning,deep learning
Classifier: Development Status :: 4 - Beta
Requires-Python: >=3
License-File: License.txt

NCCL (pronounced "Nickel") is a stand-alone library of standard collective communication routines for GPUs.
Version: 9.9.9
`

func TestParseDistInfoMetadata(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    distInfoMetadata
		wantErr []string
	}{
		{"nccl wheel; the body is not read", ncclMetadata, distInfoMetadata{"nvidia-nccl-cu12", "2.20.5", 2, 3}, nil},
		{
			"continuation lines, CRLF, first Version wins",
			"Metadata-Version: 2.1\r\nName: torch\r\nLicense: BSD-3\r\n        Copyright (c) 2016\r\nVersion: 2.3.1+cu121\r\nVersion: 0\r\n",
			distInfoMetadata{"torch", "2.3.1+cu121", 2, 5}, nil,
		},
		{
			"no Version",
			"Metadata-Version: 2.1\nName: nvidia-nccl-cu12\nSummary: NVIDIA Collective Communication Library (NCCL) Runtime\n\nVersion: 2.19.3\n",
			distInfoMetadata{Name: "nvidia-nccl-cu12", NameLine: 2}, []string{"no Version field"},
		},
		{
			"empty Version and a bad header line",
			"Name: x\nVersion:\nnot a header\n",
			distInfoMetadata{Name: "x", NameLine: 1}, []string{"line 3: not a \"Field: value\" line", "no Version field"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, errs := parseDistInfoMetadata([]byte(tt.in))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			versionsCheckErrors(t, errs, tt.wantErr)
		})
	}
}

func TestParseRecord(t *testing.T) {
	in := "nvidia/nccl/lib/libnccl.so.2,sha256=q0JZ1s2cS8mTj2n8pT6mV4L1yQfH1w3vQm0v3r2fX5E,245686256\n" +
		"\"odd,name.py\",,\n" +
		"nvidia_nccl_cu12-2.20.5.dist-info/RECORD,,\n"
	got, err := parseRecord([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"nvidia/nccl/lib/libnccl.so.2", "odd,name.py", "nvidia_nccl_cu12-2.20.5.dist-info/RECORD"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := parseRecord([]byte("a,b\n\"unterminated\n")); !errors.Is(err, ErrParse) || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("bad RECORD: %v", err)
	}
}

func TestScanNCCLVersion(t *testing.T) {
	banner := "NCCL version 2.18.3+cuda12.2"
	junk := func(n int) string { return strings.Repeat("\x00\x7fELF", n/5+1)[:n] }
	tests := []struct {
		name        string
		in          string
		chunk       int
		limit       int64
		wantVersion string
		wantBanner  string
	}{
		{"in the middle", junk(300) + banner + "\x00" + junk(300), 64, 1 << 20, "2.18.3", banner},
		{"split across chunks", junk(60) + banner + "\x00" + junk(500), 64, 1 << 20, "2.18.3", banner},
		{"at EOF without a terminator", junk(130) + banner, 64, 1 << 20, "2.18.3", banner},
		{"suffix and no CUDA part", junk(10) + "NCCL version 2.1.0~a0\x00", 64, 1 << 20, "2.1.0", "NCCL version 2.1.0~a0"},
		{"format strings first", "NCCL version %s\x00NCCL version \x00" + junk(100) + banner + "\x00", 32, 1 << 20, "2.18.3", banner},
		{"beyond the scan limit", junk(1000) + banner + "\x00", 64, 500, "", ""},
		{"none", junk(5000), 256, 1 << 20, "", ""},
		{"empty", "", 64, 1 << 20, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, b, err := scanNCCLVersion(strings.NewReader(tt.in), tt.limit, tt.chunk)
			if err != nil || v != tt.wantVersion || b != tt.wantBanner {
				t.Errorf("%q %q %v, want %q %q", v, b, err, tt.wantVersion, tt.wantBanner)
			}
			// One byte per Read must give the same answer.
			v, _, err = scanNCCLVersion(iotest.OneByteReader(strings.NewReader(tt.in)), tt.limit, tt.chunk)
			if err != nil || v != tt.wantVersion {
				t.Errorf("one byte at a time: %q %v", v, err)
			}
		})
	}
	if _, _, err := scanNCCLVersion(iotest.ErrReader(errors.New("EIO")), 1<<20, 64); err == nil {
		t.Error("read error not returned")
	}
}

func TestCompareDottedVersions(t *testing.T) {
	ordered := []string{"2.9.1", "2.18.3", "2.18.3.1", "2.20.5", "12.1.105", "12.2.140", "unknown"}
	for i := range ordered {
		for j := range ordered {
			got := compareDottedVersions(ordered[i], ordered[j])
			if (i < j && got >= 0) || (i > j && got <= 0) || (i == j && got != 0) {
				t.Errorf("compare(%q, %q) = %d", ordered[i], ordered[j], got)
			}
		}
	}
}

// versionsHostTree writes files (content) and symbolic links ("-> target") under a
// temporary root.
func versionsHostTree(t *testing.T, entries map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range entries {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		if target, ok := strings.CutPrefix(content, "-> "); ok {
			err = os.Symlink(target, p)
		} else if strings.HasSuffix(name, "/") {
			err = os.MkdirAll(p, 0o755)
		} else {
			err = os.WriteFile(p, []byte(content), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestRealPath(t *testing.T) {
	src := Dir(versionsHostTree(t, map[string]string{
		"usr/lib/x86_64-linux-gnu/libnccl.so.2.18.3":    "x",
		"usr/lib/x86_64-linux-gnu/libnccl.so.2":         "-> libnccl.so.2.18.3",
		"usr/lib/x86_64-linux-gnu/libnccl.so":           "-> /usr/lib/x86_64-linux-gnu/libnccl.so.2",
		"lib":                                           "-> usr/lib",
		"etc/alternatives/cuda":                         "-> /usr/local/cuda-12.2",
		"usr/local/cuda":                                "-> /etc/alternatives/cuda",
		"usr/local/cuda-12.2/targets/x86_64-linux/lib/": "",
		"usr/local/cuda-12.2/lib64":                     "-> targets/x86_64-linux/lib",
		"loop/a":                                        "-> b",
		"loop/b":                                        "-> a",
		"escape":                                        "-> ../../../../usr",
	}))
	tests := []struct {
		in, want string
		wantErr  bool
	}{
		{"/lib/x86_64-linux-gnu/libnccl.so", "/usr/lib/x86_64-linux-gnu/libnccl.so.2.18.3", false},
		{"/usr/local/cuda/lib64", "/usr/local/cuda-12.2/targets/x86_64-linux/lib", false},
		// ".." climbs from where the link leads, as the kernel resolves it.
		{"/usr/local/cuda/lib64/../lib", "/usr/local/cuda-12.2/targets/x86_64-linux/lib", false},
		{"usr/local/cuda/lib64/", "/usr/local/cuda-12.2/targets/x86_64-linux/lib", false},
		{"/escape/lib", "/usr/lib", false},
		{"/", "/", false},
		{"/loop/a", "", true},
		{"/missing/x", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := RealPath(src, tt.in)
			if got != tt.want || (err != nil) != tt.wantErr {
				t.Errorf("%q, %v; want %q (error %v)", got, err, tt.want, tt.wantErr)
			}
		})
	}
	if _, err := RealPath(src, "/missing/x"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: %v, want fs.ErrNotExist", err)
	}
}

func TestCollectLibraries(t *testing.T) {
	site := "usr/local/lib/python3.10/dist-packages/"
	root := versionsHostTree(t, map[string]string{
		// Merged /usr: /lib and /usr/lib are one directory, listed three ways.
		"lib":                             "-> usr/lib",
		"etc/ld.so.conf":                  "include ld.so.conf.d/*.conf\n/usr/lib/x86_64-linux-gnu/\n",
		"etc/ld.so.conf.d/multiarch.conf": "/lib/x86_64-linux-gnu\n/opt/site/lib\n",
		"usr/lib/x86_64-linux-gnu/libnccl.so.2.18.3":          "\x7fELF",
		"usr/lib/x86_64-linux-gnu/libnccl.so.2":               "-> libnccl.so.2.18.3",
		"usr/lib/x86_64-linux-gnu/libnccl.so":                 "-> libnccl.so.2",
		"usr/lib/x86_64-linux-gnu/libnccl_static.a":           "!<arch>",
		"usr/lib/x86_64-linux-gnu/libnvidia-ml.so.535.104.05": "\x7fELF",
		"usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1":          "-> libnvidia-ml.so.535.104.05",
		"usr/lib/x86_64-linux-gnu/libcudart.so.11.0":          "-> libcudart.so.11.8.89",
		// A dangling link is no library.
		"usr/lib/x86_64-linux-gnu/libcudart.so.10.1":    "-> libcudart.so.10.1.243",
		"usr/lib/x86_64-linux-gnu/libcudart.so.11.8.89": "\x7fELF",
		// A copy known only by its soname: the banner tells its version.
		"opt/site/lib/libnccl.so.2":              "\x7fELF\x00NCCL version 2.19.3+cuda12.3\x00",
		"opt/site/lib/libnvidia-ml.so.550.54.15": "\x7fELF",
		// Toolkits: cuda and cuda-12.2 are one directory.
		"usr/local/cuda-12.2/targets/x86_64-linux/lib/libcudart.so.12.2.140": "\x7fELF",
		"usr/local/cuda-12.2/targets/x86_64-linux/lib/libcudart.so.12":       "-> libcudart.so.12.2.140",
		"usr/local/cuda-12.2/lib64":                                          "-> targets/x86_64-linux/lib",
		"usr/local/cuda":                                                     "-> cuda-12.2",
		"opt/conda/lib/libcudart.so.12":                                      "\x7fELF",
		// Wheels: RECORD names the library; cu13; no RECORD; library gone.
		site + "nvidia_nccl_cu12-2.20.5.dist-info/METADATA":                                                  "Name: nvidia-nccl-cu12\nVersion: 2.20.5\n",
		site + "nvidia_nccl_cu12-2.20.5.dist-info/RECORD":                                                    "nvidia/nccl/lib/libnccl.so.2,sha256=x,1\n",
		site + "nvidia/nccl/lib/libnccl.so.2":                                                                "\x7fELF",
		site + "nvidia_cuda_runtime_cu13-13.0.96.dist-info/METADATA":                                         "Name: nvidia-cuda-runtime-cu13\nVersion: 13.0.96\n",
		site + "nvidia_cuda_runtime_cu13-13.0.96.dist-info/RECORD":                                           "nvidia/cu13/lib/libcudart.so.13,sha256=x,1\n",
		site + "nvidia/cu13/lib/libcudart.so.13":                                                             "\x7fELF",
		"opt/venv/lib/python3.12/site-packages/nvidia_nccl_cu11-2.14.3.dist-info/METADATA":                   "Name: nvidia-nccl-cu11\nVersion: 2.14.3\n",
		"opt/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2":                                 "\x7fELF",
		"opt/conda/envs/old/lib/python3.8/site-packages/nvidia_cuda_runtime_cu11-11.7.99.dist-info/METADATA": "Version: 11.7.99\n",
		"opt/conda/envs/old/lib/python3.8/site-packages/torch/lib/libnccl.so.2.10.3":                         "\x7fELF",
		// rdma-core: the release is in the real file's name; MLNX_OFED's
		// build names no number the rules can compare.
		"usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.39.0": "\x7fELF",
		"usr/lib/x86_64-linux-gnu/libibverbs.so.1":         "-> libibverbs.so.1.14.39.0",
		"usr/lib/x86_64-linux-gnu/libibverbs.so":           "-> libibverbs.so.1",
		"opt/site/lib/libibverbs.so.1.14.2307mlnx47":       "\x7fELF",
		// NCCL net plugins: aws-ofi-nccl's two names for one file, a
		// versioned SHARP plugin; libnccl-netfoo.so is no plugin NCCL loads.
		"opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so": "\x7fELF",
		"opt/amazon/ofi-nccl/lib/libnccl-net.so":     "-> libnccl-net-ofi.so",
		"opt/site/lib/libnccl-net.so.0.0.0":          "\x7fELF",
		"opt/site/lib/libnccl-netfoo.so":             "\x7fELF",
	})
	c := versionsTestCollection(Dir(root))
	collectLibraries(c)

	want := snapshot.Libraries{
		NCCL: []snapshot.Library{
			{Version: "2.10.3", Path: "/opt/conda/envs/old/lib/python3.8/site-packages/torch/lib/libnccl.so.2.10.3", Kind: "wheel", How: "file-name", Source: snapshot.ParseProvenance("/opt/conda/envs/old/lib/python3.8/site-packages/torch/lib/libnccl.so.2.10.3")},
			{Version: "2.14.3", Path: "/opt/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2", Kind: "wheel", How: "dist-info", Source: snapshot.ParseProvenance("/opt/venv/lib/python3.12/site-packages/nvidia_nccl_cu11-2.14.3.dist-info/METADATA:2")},
			{Version: "2.18.3", Path: "/usr/lib/x86_64-linux-gnu/libnccl.so.2.18.3", Kind: "system", How: "file-name", Source: snapshot.ParseProvenance("/usr/lib/x86_64-linux-gnu/libnccl.so.2.18.3")},
			{Version: "2.19.3", Path: "/opt/site/lib/libnccl.so.2", Kind: "system", How: "embedded-string", Source: snapshot.ParseProvenance("/opt/site/lib/libnccl.so.2")},
			{Version: "2.20.5", Path: "/" + site + "nvidia/nccl/lib/libnccl.so.2", Kind: "wheel", How: "dist-info", Source: snapshot.ParseProvenance("/" + site + "nvidia_nccl_cu12-2.20.5.dist-info/METADATA:2")},
		},
		CUDA: []snapshot.Library{
			{Version: "11.7.99", Path: "/opt/conda/envs/old/lib/python3.8/site-packages/nvidia_cuda_runtime_cu11-11.7.99.dist-info", Kind: "wheel", How: "dist-info", Source: snapshot.ParseProvenance("/opt/conda/envs/old/lib/python3.8/site-packages/nvidia_cuda_runtime_cu11-11.7.99.dist-info/METADATA:1")},
			{Version: "11.8.89", Path: "/usr/lib/x86_64-linux-gnu/libcudart.so.11.8.89", Kind: "system", How: "file-name", Source: snapshot.ParseProvenance("/usr/lib/x86_64-linux-gnu/libcudart.so.11.8.89")},
			{Version: "12", Path: "/opt/conda/lib/libcudart.so.12", Kind: "other", How: "file-name", Source: snapshot.ParseProvenance("/opt/conda/lib/libcudart.so.12")},
			{Version: "12.2.140", Path: "/usr/local/cuda-12.2/targets/x86_64-linux/lib/libcudart.so.12.2.140", Kind: "other", How: "file-name", Source: snapshot.ParseProvenance("/usr/local/cuda-12.2/targets/x86_64-linux/lib/libcudart.so.12.2.140")},
			{Version: "13.0.96", Path: "/" + site + "nvidia/cu13/lib/libcudart.so.13", Kind: "wheel", How: "dist-info", Source: snapshot.ParseProvenance("/" + site + "nvidia_cuda_runtime_cu13-13.0.96.dist-info/METADATA:2")},
		},
		NCCLNet: []snapshot.Library{
			{Version: "0.0.0", Path: "/opt/site/lib/libnccl-net.so.0.0.0", Kind: "system", How: "file-name", Source: snapshot.ParseProvenance("/opt/site/lib/libnccl-net.so.0.0.0")},
			{Version: "unknown", Path: "/opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so", Kind: "other", How: "none", Source: snapshot.ParseProvenance("/opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so")},
		},
		Verbs: []snapshot.Library{
			{Version: "39.0", Path: "/usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.39.0", Kind: "system", How: "file-name", Source: snapshot.ParseProvenance("/usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.39.0")},
			{Version: "unknown", Path: "/opt/site/lib/libibverbs.so.1.14.2307mlnx47", Kind: "system", How: "none", Source: snapshot.ParseProvenance("/opt/site/lib/libibverbs.so.1.14.2307mlnx47")},
		},
	}
	if diff := cmp.Diff(want, c.snap.Libraries); diff != "" {
		t.Errorf("libraries (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"535.104.05", "550.54.15"}, c.snap.NVIDIA.NVMLVersions); diff != "" {
		t.Errorf("nvml (-want +got):\n%s", diff)
	}
	if got, want := c.snap.Sources["nvidia.nvml_versions"].String(), "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.535.104.05, /opt/site/lib/libnvidia-ml.so.550.54.15"; got != want {
		t.Errorf("nvml source %q, want %q", got, want)
	}
	if len(c.snap.Errors) != 0 {
		t.Errorf("errors: %v", c.snap.Errors)
	}
}

func FuzzLdSoConf(f *testing.F) {
	for _, s := range []string{
		"include /etc/ld.so.conf.d/*.conf\n\n",
		"include ld.so.conf.d/*.conf\n",
		"# Multiarch support\n/usr/local/lib/x86_64-linux-gnu\n/lib/x86_64-linux-gnu\n/usr/lib/x86_64-linux-gnu\n",
		"/usr/local/cuda/targets/x86_64-linux/lib\n",
		"# Placeholder file, no vDSO hwcap entries used in this kernel.\n",
		"hwcap 0 nosegneg\n/usr/X11R6/lib=libc6 # x\ninclude\ta b\n/\nrelative\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, errs := parseLdSoConf(data)
		lines := strings.Count(string(data), "\n") + 1
		for _, e := range entries {
			if e.Line < 1 || e.Line > lines {
				t.Errorf("%+v outside 1..%d", e, lines)
			}
			if (e.Dir == "") == (len(e.Includes) == 0) {
				t.Errorf("%+v is neither a directory nor an include", e)
			}
			if e.Dir != "" && (!strings.HasPrefix(e.Dir, "/") || strings.HasSuffix(e.Dir, "/") || strings.ContainsAny(e.Dir, "#=\n")) {
				t.Errorf("directory %q", e.Dir)
			}
		}
		for _, err := range errs {
			if !errors.Is(err, ErrParse) {
				t.Errorf("%v does not wrap ErrParse", err)
			}
		}
	})
}

func FuzzDistInfoMetadata(f *testing.F) {
	for _, s := range []string{
		ncclMetadata,
		"Metadata-Version: 2.1\nName: nvidia-cuda-runtime-cu12\nVersion: 12.1.105\nSummary: CUDA Runtime native Libraries\n",
		"Metadata-Version: 2.1\nName: nvidia-nccl-cu12\nSummary: x\n\nVersion: 2.19.3\n",
		"Name: x\r\n  continued\r\nVersion:\r\n",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		md, errs := parseDistInfoMetadata(data)
		lines := strings.Split(string(data), "\n")
		if md.VersionLine > 0 {
			if md.VersionLine > len(lines) || md.Version == "" || !strings.Contains(lines[md.VersionLine-1], md.Version) {
				t.Errorf("version %q at line %d", md.Version, md.VersionLine)
			}
		} else if len(errs) == 0 {
			t.Error("no version and no error")
		}
		if md.NameLine < 0 || md.NameLine > len(lines) {
			t.Errorf("name line %d", md.NameLine)
		}
		for _, err := range errs {
			if !errors.Is(err, ErrParse) {
				t.Errorf("%v does not wrap ErrParse", err)
			}
		}
	})
}
