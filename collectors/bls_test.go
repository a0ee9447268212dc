package collectors

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// A RHEL 8 entry as kernel-install writes it (RHEL 8 "Understanding boot
// entries").
const rhel8Entry = `title Red Hat Enterprise Linux (4.18.0-74.el8.x86_64) 8.0 (Ootpa)
version 4.18.0-74.el8.x86_64
linux /vmlinuz-4.18.0-74.el8.x86_64
initrd /initramfs-4.18.0-74.el8.x86_64.img $tuned_initrd
options $kernelopts $tuned_params
id rhel-20190227183418-4.18.0-74.el8.x86_64
grub_users $grub_users
grub_arg --unrestricted
grub_class kernel
`

// A systemd-boot entry as 90-loaderentry.install writes it.
const sdbootEntry = `# Boot Loader Specification type#1 entry
# File created by /usr/lib/kernel/install.d/90-loaderentry.install (systemd 255.4-1.fc40)
title      Fedora Linux 40 (Server Edition)
version    6.8.5-301.fc40.x86_64
machine-id 4e1a9c7b2d3f4a5e8b6c7d8e9f0a1b2c
sort-key   fedora
options    root=UUID=5c2e ro rootflags=subvol=root
linux      /4e1a9c7b2d3f4a5e8b6c7d8e9f0a1b2c/6.8.5-301.fc40.x86_64/linux
initrd     /4e1a9c7b2d3f4a5e8b6c7d8e9f0a1b2c/6.8.5-301.fc40.x86_64/initrd
`

func TestParseGrubBLSEntry(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		lines []BLSLine
		stop  int
		err   bool
	}{
		{name: "rhel 8", in: rhel8Entry, lines: []BLSLine{
			{"title", "Red Hat Enterprise Linux (4.18.0-74.el8.x86_64) 8.0 (Ootpa)", 1},
			{"version", "4.18.0-74.el8.x86_64", 2},
			{"linux", "/vmlinuz-4.18.0-74.el8.x86_64", 3},
			{"initrd", "/initramfs-4.18.0-74.el8.x86_64.img $tuned_initrd", 4},
			{"options", "$kernelopts $tuned_params", 5},
			{"id", "rhel-20190227183418-4.18.0-74.el8.x86_64", 6},
			{"grub_users", "$grub_users", 7},
			{"grub_arg", "--unrestricted", 8},
			{"grub_class", "kernel", 9},
		}},
		{
			name:  "blanks before the key and the value go, trailing ones stay; comments skipped",
			in:    "  # a comment\n\toptions   quiet  \r\n",
			lines: []BLSLine{{"options", "quiet  ", 2}},
		},
		{
			// strchr(' ') first: a tab before the first space belongs to the key.
			name:  "a tab separates only a line without a space",
			in:    "linux\t/vmlinuz\noptions\troot=/dev/sda ro\n",
			lines: []BLSLine{{"linux", "/vmlinuz", 1}, {"options\troot=/dev/sda", "ro", 2}},
		},
		{
			name:  "a blank line ends GRUB's reading",
			in:    "linux /vmlinuz\n\noptions hugetlb_cma=4G\n",
			lines: []BLSLine{{"linux", "/vmlinuz", 1}},
			stop:  2,
		},
		{
			name:  "so does a key without a value",
			in:    "linux /vmlinuz\noptions \ntitle x\n",
			lines: []BLSLine{{"linux", "/vmlinuz", 1}},
			stop:  2,
		},
		{
			name:  "a NUL ends the file",
			in:    "linux /vmlinuz\noptions quiet\x00 hugetlb_cma=4G\n",
			lines: []BLSLine{{"linux", "/vmlinuz", 1}, {"options", "quiet", 2}},
			err:   true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lines, stop, err := ParseGrubBLSEntry([]byte(tt.in))
			if diff := cmp.Diff(tt.lines, lines, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
			if stop != tt.stop {
				t.Errorf("stop = %d, want %d", stop, tt.stop)
			}
			if (err != nil) != tt.err || err != nil && !errors.Is(err, ErrParse) {
				t.Errorf("err = %v, want error %v", err, tt.err)
			}
		})
	}
}

func TestParseSdBootEntry(t *testing.T) {
	lines, skipped, err := ParseSdBootEntry([]byte(sdbootEntry + "\n\noptions \"iommu=pt\"\noptions\n  title\tOther  \n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(skipped) != 1 || !errors.Is(skipped[0], ErrParse) || !strings.Contains(skipped[0].Error(), "line 13: \"options\" has no value; systemd-boot skips the line") {
		t.Errorf("skipped = %v, want the key-only line 13", skipped)
	}
	var opts []string
	for _, l := range lines {
		if l.Key == "options" {
			opts = append(opts, l.Value)
		}
	}
	if want := []string{"root=UUID=5c2e ro rootflags=subvol=root", "iommu=pt"}; !slices.Equal(opts, want) {
		t.Errorf("options = %q, want %q (quotes around a whole value go, a key alone is skipped)", opts, want)
	}
	if l, _ := lastBLS(lines, "title"); l.Value != "Other" || l.Line != 14 {
		t.Errorf("last title = %+v, want Other at line 14", l)
	}
	if l, _ := firstBLS(lines, "sort-key"); l.Value != "fedora" {
		t.Errorf("sort-key = %q", l.Value)
	}
}

func TestExpandGrubOptions(t *testing.T) {
	env := map[string]string{
		"kernelopts":   "root=/dev/mapper/rhel-root ro quiet ",
		"tuned_params": "skew_tick=1 nohz=on",
		"x":            "one",
		"empty":        "",
	}
	lookup := func(n string) (string, bool) { v, ok := env[n]; return v, ok }
	tests := []struct {
		in    string
		want  string
		unset []string
		ok    bool
	}{
		{in: "$kernelopts $tuned_params", want: "root=/dev/mapper/rhel-root ro quiet  skew_tick=1 nohz=on ", ok: true},
		{in: "$kernelopts $tuned_params", want: "root=/dev/mapper/rhel-root ro quiet  skew_tick=1 nohz=on ", ok: true},
		{in: "root=/dev/sda ro $missing hugetlb_cma=4G", want: "root=/dev/sda ro hugetlb_cma=4G", unset: []string{"missing"}, ok: true},
		{in: "root=/dev/sda ro $tuned_params", want: "root=/dev/sda ro skew_tick=1 nohz=on ", ok: true},
		{in: "quiet", want: "quiet", ok: true},
		// expand_val's quirks: one character before "$" or at the end is
		// dropped, ${name} is not a variable, a one-letter name is dropped.
		{in: "a$tuned_params", want: "skew_tick=1 nohz=on ", ok: true},
		{in: "quiet q", want: "quiet q", ok: true},
		{in: "$tuned_params q", want: "skew_tick=1 nohz=on ", ok: true},
		{in: "${tuned_params}", want: "{tuned_params}", ok: true},
		{in: "ro $x", want: "ro ", ok: true},
		{in: "ro $xx", want: "ro ", unset: []string{"xx"}, ok: true},
		{in: "$empty", want: " ", ok: true},
		{in: "$missing", unset: []string{"missing"}, ok: false},
		{in: "$missing ", ok: true, unset: []string{"missing"}},
		{in: "q", ok: false},
	}
	for _, tt := range tests {
		pieces, unset, ok := ExpandGrubOptions(tt.in, lookup)
		var got strings.Builder
		for _, p := range pieces {
			got.WriteString(p.Text)
		}
		if got.String() != tt.want || !slices.Equal(unset, tt.unset) || ok != tt.ok {
			t.Errorf("ExpandGrubOptions(%q) = %q, unset %q, ok %v; want %q, %q, %v", tt.in, got.String(), unset, ok, tt.want, tt.unset, tt.ok)
		}
	}
}

func grubenvBlock(lines ...string) []byte {
	b := grubenvSignature
	for _, l := range lines {
		b += l + "\n"
	}
	return []byte(b + strings.Repeat("#", 1024-len(b)))
}

func TestParseGrubenv(t *testing.T) {
	vars, err := ParseGrubenv(grubenvBlock("saved_entry=abc-5.14.0", `kernelopts=root=/dev/sda ro a\\b\=c`, "# comment", "boot_success=0"))
	if err != nil {
		t.Fatal(err)
	}
	want := []GrubenvVar{{"saved_entry", "abc-5.14.0", 2}, {"kernelopts", `root=/dev/sda ro a\b=c`, 3}, {"boot_success", "0", 5}}
	if diff := cmp.Diff(want, vars); diff != "" {
		t.Errorf("vars (-want +got):\n%s", diff)
	}

	if _, err := ParseGrubenv([]byte("saved_entry=x\n")); !errors.Is(err, ErrParse) {
		t.Errorf("no signature: err = %v, want a parse error", err)
	}
	vars, err = ParseGrubenv(grubenvBlock("a=1", "garbage", "b=2"))
	if !errors.Is(err, ErrParse) || !strings.Contains(err.Error(), "line 3") || len(vars) != 1 {
		t.Errorf("a line without =: vars %v, err %v; want a=1 and an error at line 3", vars, err)
	}
}

func TestGrubBLSOrder(t *testing.T) {
	const mid = "8d3c2f1e0b9a47c6a5d4e3f2a1b0c9d8"
	// Newest first, as bls_add_entry keeps them: the rescue entry's
	// version "0" sorts last; el8_10 is newer than el8_9.
	want := []string{
		mid + "-4.18.0-553.el8_10.x86_64",
		mid + "-4.18.0-513.5.1.el8_9.x86_64",
		mid + "-4.18.0-513.el8_9.x86_64",
		mid + "-4.18.0-477.27.1.el8_8.x86_64",
		mid + "-0-rescue",
	}
	got := slices.Clone(want)
	slices.Reverse(got)
	slices.SortFunc(got, func(a, b string) int { return -grubBLSCmp(a, b) })
	if !slices.Equal(got, want) {
		t.Errorf("order:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"1.0", "1.0", 0}, {"1.0", "1.0.1", -1}, {"1.0~rc1", "1.0", -1}, {"1.0+git1", "1.0", 1},
		{"1.a", "1.1", -1}, {"010", "10", 0}, {"2.0", "10.0", -1}, {"1_0", "1.0", 0},
	} {
		if got := grubVercmp(c.a, c.b); got != c.want {
			t.Errorf("grubVercmp(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestSdVerscmp(t *testing.T) {
	// The order strverscmp_improved documents, oldest first.
	order := []string{"122.1", "123~rc1-1", "123", "123-a", "123-a.1", "123-1", "123-1.1", "123^post1", "123.a-1", "123.1-1", "123a-1", "124-1"}
	for i := range order {
		for j := range order {
			if got, want := sdVerscmp(order[i], order[j]), cmpInt(i, j); got != want {
				t.Errorf("sdVerscmp(%q, %q) = %d, want %d", order[i], order[j], got, want)
			}
		}
	}
	// systemd's test-bootspec: sort-key entries first (by key, then
	// version, newest first), then the rest by id, newest first.
	entries := []sdSortable{
		{id: "a-10.conf", version: "10", machineID: "dd235d00696545768f6f693bfd23b15f"},
		{id: "a-5.conf", version: "5", machineID: "dd235d00696545768f6f693bfd23b15f"},
		{id: "b.conf", version: "3", machineID: "b75451ad92f94feeab50b0b442768dbd"},
		{id: "c.conf", sortKey: "xxxx", version: "5", machineID: "309de666fd5044268a9a26541ac93176"},
		{id: "cx.conf", sortKey: "xxxx", version: "10", machineID: "309de666fd5044268a9a26541ac93176"},
		{id: "d.conf", sortKey: "kkkk", version: "100", machineID: "81c6e3147cf544c19006af023e22b292"},
	}
	slices.SortStableFunc(entries, sdBootEntryCmp)
	var ids []string
	for _, e := range entries {
		ids = append(ids, e.id)
	}
	if want := []string{"d.conf", "cx.conf", "c.conf", "b.conf", "a-10.conf", "a-5.conf"}; !slices.Equal(ids, want) {
		t.Errorf("order = %q, want %q", ids, want)
	}
}

// fixtureEntries are the boot entries and grubenv files of the fixture
// roots: real samples for the fuzz targets.
func fixtureEntries(t testing.TB, pattern string) [][]byte {
	paths, err := filepath.Glob(filepath.Join(fixtureHosts, "*", pattern))
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, data)
	}
	return out
}

func FuzzBLSEntry(f *testing.F) {
	f.Add([]byte(rhel8Entry))
	f.Add([]byte(sdbootEntry))
	f.Add([]byte("default fedora-6.7*\ndefault @newest\ntimeout five\r\nOptions x\nbeep\n\"\n"))
	if entry := realLoaderEntry(f, sdbRoot+"\nhugetlb_cma=6G\n"); entry != nil {
		f.Add(entry)
	}
	for _, pattern := range []string{"boot/loader/entries/*.conf", "efi/loader/entries/*.conf", "efi/loader/loader.conf"} {
		for _, data := range fixtureEntries(f, pattern) {
			f.Add(data)
		}
	}
	env := map[string]string{"kernelopts": "root=/dev/sda ro ", "tuned_params": "nohz=on"}
	lookup := func(n string) (string, bool) { v, ok := env[n]; return v, ok }
	f.Fuzz(func(t *testing.T, data []byte) {
		lines, stop, _ := ParseGrubBLSEntry(data)
		for _, l := range lines {
			if l.Key == "" || strings.ContainsAny(l.Key, " \n") || strings.Contains(l.Value, "\n") {
				t.Fatalf("bad line %+v", l)
			}
			if stop > 0 && l.Line >= stop {
				t.Fatalf("line %d read after the stop at %d", l.Line, stop)
			}
		}
		sd, skipped, _ := ParseSdBootEntry(data)
		for _, err := range skipped {
			if !errors.Is(err, ErrParse) || errLine(err) < 1 {
				t.Fatalf("skipped line error %v names no line", err)
			}
		}
		def, _, _ := parseLoaderConf(data)
		if def != nil && (def.Key != "default" || strings.HasPrefix(def.Value, "@") && !strings.EqualFold(def.Value, "@saved")) {
			t.Fatalf("loader.conf default %+v is one systemd-boot skips", def)
		}
		for _, l := range sd {
			if l.Key == "" || strings.ContainsAny(l.Key, " \t\n") || strings.Contains(l.Value, "\n") {
				t.Fatalf("bad systemd-boot line %+v", l)
			}
		}
		for _, l := range append(lines, sd...) {
			pieces, _, _ := ExpandGrubOptions(l.Value, lookup)
			n := 0
			for _, p := range pieces {
				n += len(p.Text)
			}
			// Each byte expands at most into one variable's value and a space.
			if n > len(l.Value)*(len("root=/dev/sda ro ")+1) {
				t.Fatalf("%q expanded to %d bytes", l.Value, n)
			}
		}
		if len(lines) > 1 {
			a, b := lines[0].Value, lines[1].Value
			if grubVercmp(a, a) != 0 || sdVerscmp(a, a) != 0 {
				t.Fatalf("%q does not compare equal to itself", a)
			}
			if utf8.ValidString(a) && utf8.ValidString(b) && sdVerscmp(a, b) != -sdVerscmp(b, a) {
				t.Fatalf("sdVerscmp(%q, %q) is not antisymmetric", a, b)
			}
			_ = grubBLSCmp(a, b)
		}
	})
}

func FuzzGrubenv(f *testing.F) {
	f.Add(grubenvBlock("saved_entry=abc", `kernelopts=a\\b`))
	f.Add([]byte("# GRUB Environment Block\nx"))
	for _, data := range fixtureEntries(f, "boot/grub2/grubenv") {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		vars, err := ParseGrubenv(data)
		if err != nil && !errors.Is(err, ErrParse) {
			t.Fatalf("error %v does not wrap ErrParse", err)
		}
		last := 0
		for _, v := range vars {
			if v.Name == "" || strings.ContainsAny(v.Name, "\n=") || v.Line <= last {
				t.Fatalf("bad variable %+v after line %d", v, last)
			}
			last = v.Line
		}
	})
}

// BenchmarkExpandGrubOptions measures expanding a RHEL 8 entry's options.
func BenchmarkExpandGrubOptions(b *testing.B) {
	env := map[string]string{
		"kernelopts":   "root=/dev/mapper/rhel-root ro crashkernel=auto resume=/dev/mapper/rhel-swap rd.lvm.lv=rhel/root rd.lvm.lv=rhel/swap rhgb quiet ",
		"tuned_params": "skew_tick=1 nohz=on nohz_full=2-31 rcu_nocbs=2-31 tuned.non_isolcpus=00000003 intel_pstate=disable nosoftlockup",
	}
	lookup := func(n string) (string, bool) { v, ok := env[n]; return v, ok }
	b.ReportAllocs()
	for b.Loop() {
		ExpandGrubOptions("$kernelopts $tuned_params", lookup)
	}
}

// systemd-boot v252 boot.c line_get_key_value ends a line at "\n" or "\r"
// and unquotes by the value's first and the line's last byte.
func TestParseSdBootEntryLineEnds(t *testing.T) {
	lines, skipped, err := ParseSdBootEntry([]byte("title A\r\noptions a=1\rlinux /k\noptions \"\n"))
	if err != nil || len(skipped) != 0 {
		t.Fatalf("err %v skipped %v", err, skipped)
	}
	want := []BLSLine{{"title", "A", 1}, {"options", "a=1", 2}, {"linux", "/k", 2}, {"options", "", 3}}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
}

// config_defaults_load_from_file logs and skips a value it cannot parse;
// an earlier valid line keeps its effect.
func TestParseLoaderConf(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		def     string // "" when no default applies
		skipped []int
	}{
		{"stock", "#timeout 3\n#console-mode keep\n", "", nil},
		{"last default wins", "default a-*\ndefault b-*\n", "b-*", nil},
		{"unsupported special identifier keeps the earlier one", "default a-*\ndefault @newest\n", "a-*", []int{2}},
		{"@saved in any case", "default @Saved\n", "@Saved", nil},
		{"key-only line", "default\n", "", []int{1}},
		{"keys are case-sensitive", "Default a-*\n", "", []int{1}},
		{"bad values", "timeout 3s\ntimeout menu-force\neditor Yes\nauto-entries no\nconsole-mode 1x\nsecure-boot-enroll if-safe\nrandom-seed-mode with-system-token\nbeep\ntimeout 4294967296\n", "", []int{1, 3, 5, 6, 8, 9}},
		{"unknown keys are ignored", "foo bar\nentries-dir x\n", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			def, skipped, err := parseLoaderConf([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if def != nil {
				got = def.Value
			}
			if got != tt.def {
				t.Errorf("default %q, want %q", got, tt.def)
			}
			var lines []int
			for _, e := range skipped {
				if !errors.Is(e, ErrParse) {
					t.Errorf("%v is not a parse error", e)
				}
				lines = append(lines, errLine(e))
			}
			if !slices.Equal(lines, tt.skipped) {
				t.Errorf("skipped lines %v (%v), want %v", lines, skipped, tt.skipped)
			}
		})
	}
}
