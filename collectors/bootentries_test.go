package collectors

import (
	"context"
	"encoding/binary"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"unicode/utf16"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

const testMID = "0a1b2c3d4e5f40718293a4b5c6d7e8f9"

// blsRoot is a RHEL 9-like host: GRUB with BLS entries for two kernels and
// a rescue entry, plus files.
func blsRoot(grubDefaults string, grubenv []string, more fstest.MapFS) fstest.MapFS {
	files := fstest.MapFS{
		"etc/default/grub":   {Data: []byte(grubDefaults)},
		"boot/grub2/grubenv": {Data: grubenvBlock(grubenv...)},
	}
	for _, e := range []struct{ ver, opts string }{
		{"5.14.0-427.13.1.el9_4.x86_64", "root=/dev/sda2 ro new=1"},
		{"5.14.0-362.24.1.el9_3.x86_64", "root=/dev/sda2 ro old=1"},
		{"0-rescue", "root=/dev/sda2 ro rescue=1"},
	} {
		files["boot/loader/entries/"+testMID+"-"+e.ver+".conf"] = &fstest.MapFile{Data: []byte(
			"title Linux (" + e.ver + ")\nversion " + e.ver + "\nlinux /vmlinuz-" + e.ver + "\noptions " + e.opts + "\n")}
	}
	for k, v := range more {
		files[k] = v
	}
	return files
}

func bootOf(t *testing.T, files fstest.MapFS) (*snapshot.Snapshot, snapshot.BootConfig) {
	t.Helper()
	snap, err := Collect(context.Background(), Target{Files: FS(files)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return snap, snap.Boot.Configured
}

func bootErrors(snap *snapshot.Snapshot) []string {
	var out []string
	for _, e := range snap.Errors {
		if e.Collector == bootCollector {
			out = append(out, e.Path+": "+e.Reason)
		}
	}
	return out
}

func TestGrubBLSDefaultEntry(t *testing.T) {
	const bls = "GRUB_ENABLE_BLSCFG=true\nGRUB_CMDLINE_LINUX=\"quiet\"\n"
	tests := []struct {
		name     string
		defaults string
		grubenv  []string
		// want is the "name=1" param of the default entry, by its source
		want, by, source string
	}{
		{"saved_entry names the older kernel", bls + "GRUB_DEFAULT=saved\n", []string{"saved_entry=" + testMID + "-5.14.0-362.24.1.el9_3.x86_64"}, "old", "saved_entry", "/boot/grub2/grubenv:2"},
		{"next_entry wins once", bls + "GRUB_DEFAULT=saved\n", []string{"saved_entry=" + testMID + "-5.14.0-362.24.1.el9_3.x86_64", "next_entry=" + testMID + "-0-rescue"}, "rescue", "next_entry", "/boot/grub2/grubenv:3"},
		{"a saved_entry of a removed kernel falls back to the first", bls + "GRUB_DEFAULT=saved\n", []string{"saved_entry=" + testMID + "-5.14.0-70.el9.x86_64"}, "new", "first", ""},
		{"GRUB_DEFAULT unset is 0: the newest", bls, nil, "new", "GRUB_DEFAULT", "default: GRUB_DEFAULT unset: grub-mkconfig uses 0"},
		{"a numeric GRUB_DEFAULT indexes the sorted menu", bls + "GRUB_DEFAULT=2\n", nil, "rescue", "GRUB_DEFAULT", "/etc/default/grub:3"},
		{"GRUB_DEFAULT by title", bls + "GRUB_DEFAULT=\"Linux (5.14.0-362.24.1.el9_3.x86_64)\"\n", nil, "old", "GRUB_DEFAULT", "/etc/default/grub:3"},
		{"an index past the menu is the first", bls + "GRUB_DEFAULT=7\n", nil, "new", "first", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap, cfg := bootOf(t, blsRoot(tt.defaults, tt.grubenv, nil))
			if cfg.Loader != "grub-bls" || cfg.DefaultEntry == nil {
				t.Fatalf("loader %q, default %v; want grub-bls with a default entry", cfg.Loader, cfg.DefaultEntry)
			}
			if _, ok := cfg.Params[tt.want]; !ok || cfg.DefaultBy != tt.by {
				t.Errorf("default entry %s (params %v) by %q, want the %s entry by %q", cfg.Entries[*cfg.DefaultEntry].ID, cfg.Params, cfg.DefaultBy, tt.want, tt.by)
			}
			got := snap.Sources["boot.configured.default_entry"].String()
			if tt.source != "" && got != tt.source || tt.source == "" && !strings.Contains(got, "first (newest) entry") {
				t.Errorf("default_entry source %q, want %q", got, tt.source)
			}
			var ids []string
			for _, e := range cfg.Entries {
				ids = append(ids, strings.TrimPrefix(e.ID, testMID+"-"))
			}
			if want := []string{"5.14.0-427.13.1.el9_4.x86_64", "5.14.0-362.24.1.el9_3.x86_64", "0-rescue"}; !slices.Equal(ids, want) {
				t.Errorf("menu order %q, want %q", ids, want)
			}
			if errs := bootErrors(snap); len(errs) > 0 {
				t.Errorf("errors: %q", errs)
			}
			if p := snap.Sources["boot.configured.params."+tt.want].String(); !strings.HasPrefix(p, "/boot/loader/entries/") || !strings.HasSuffix(p, ".conf:4") {
				t.Errorf("param %s cited at %q, want its entry's options line", tt.want, p)
			}
		})
	}
}

func TestGrubBLSDetection(t *testing.T) {
	const plain = "GRUB_CMDLINE_LINUX=\"quiet\"\n"
	tests := []struct {
		name   string
		files  fstest.MapFS
		loader string
	}{
		{"entries without GRUB_ENABLE_BLSCFG or blscfg in grub.cfg are not read", blsRoot(plain, nil, nil), "grub"},
		{"blscfg in grub.cfg is enough", blsRoot(plain, nil, fstest.MapFS{
			"boot/grub2/grub.cfg": {Data: []byte("set default=\"${saved_entry}\"\ninsmod blscfg\nblscfg\n")},
		}), "grub-bls"},
		{"RHEL 8 EFI keeps grub.cfg in the ESP", blsRoot(plain, nil, fstest.MapFS{
			"boot/efi/EFI/redhat/grub.cfg": {Data: []byte("  blscfg\n")},
		}), "grub-bls"},
		{"GRUB_ENABLE_BLSCFG without entries (a config repo) keeps the defaults", fstest.MapFS{
			"etc/default/grub": {Data: []byte("GRUB_ENABLE_BLSCFG=true\n" + plain)},
		}, "grub"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, cfg := bootOf(t, tt.files)
			if cfg.Loader != tt.loader {
				t.Errorf("loader = %q, want %q", cfg.Loader, tt.loader)
			}
			if tt.loader == "grub" && (len(cfg.Entries) > 0 || cfg.Params["quiet"] != "") {
				if _, ok := cfg.Params["quiet"]; !ok {
					t.Errorf("configured params %v, want the GRUB defaults'", cfg.Params)
				}
			}
		})
	}
}

func TestGrubBLSExpansion(t *testing.T) {
	files := blsRoot("GRUB_ENABLE_BLSCFG=true\nGRUB_DEFAULT=saved\n",
		[]string{"saved_entry=" + testMID + "-5.14.0-427.13.1.el9_4.x86_64", "kernelopts=root=/dev/sda2 ro hugetlb_cma=4G ", "tuned_params=nohz=on"},
		nil)
	files["boot/loader/entries/"+testMID+"-5.14.0-427.13.1.el9_4.x86_64.conf"] = &fstest.MapFile{Data: []byte(
		"title New\nversion 5.14.0-427.13.1.el9_4.x86_64\nlinux /vmlinuz\noptions $kernelopts $tuned_params $tuned_missing\n")}
	snap, cfg := bootOf(t, files)
	if cfg.Cmdline.Cmdline != "root=/dev/sda2 ro hugetlb_cma=4G  nohz=on " {
		t.Errorf("cmdline %q", cfg.Cmdline.Cmdline)
	}
	e := cfg.Entries[*cfg.DefaultEntry]
	if e.Options != "$kernelopts $tuned_params $tuned_missing" || !slices.Equal(e.Unset, []string{"tuned_missing"}) {
		t.Errorf("entry options %q unset %q", e.Options, e.Unset)
	}
	if e.Vars["hugetlb_cma"] != "kernelopts" || e.Vars["nohz"] != "tuned_params" {
		t.Errorf("vars %v", e.Vars)
	}
	for fact, want := range map[string]string{
		"boot.configured.params.hugetlb_cma": "/boot/grub2/grubenv:3",
		"boot.configured.params.nohz":        "/boot/grub2/grubenv:4",
		"boot.configured.cmdline":            "/boot/loader/entries/" + testMID + "-5.14.0-427.13.1.el9_4.x86_64.conf:4",
		"boot.configured.grubenv.kernelopts": "/boot/grub2/grubenv:3",
	} {
		if got := snap.Sources[fact].String(); got != want {
			t.Errorf("%s cited at %q, want %q", fact, got, want)
		}
	}
	if _, ok := cfg.Grubenv["saved_entry"]; !ok || len(cfg.Grubenv) != 3 {
		t.Errorf("grubenv %v, want the three variables read", cfg.Grubenv)
	}
}

func TestGrubBLSFallbacksAndErrors(t *testing.T) {
	const bls = "GRUB_ENABLE_BLSCFG=true\n"
	t.Run("kernelopts from grub.cfg when grubenv has none (RHEL 8)", func(t *testing.T) {
		files := blsRoot(bls, nil, fstest.MapFS{"boot/grub2/grub.cfg": {Data: []byte(
			"if [ -z \"${kernelopts}\" ]; then\n  set kernelopts=\"root=/dev/sda2 ro quiet \"\nfi\ninsmod blscfg\nblscfg\n")}})
		files["boot/loader/entries/"+testMID+"-5.14.0-427.13.1.el9_4.x86_64.conf"] = &fstest.MapFile{Data: []byte("linux /vmlinuz\noptions $kernelopts\n")}
		snap, cfg := bootOf(t, files)
		if _, ok := cfg.Params["quiet"]; !ok {
			t.Errorf("params %v, want kernelopts from grub.cfg", cfg.Params)
		}
		if got := snap.Sources["boot.configured.params.quiet"].String(); got != "/boot/grub2/grub.cfg:2" {
			t.Errorf("quiet cited at %q", got)
		}
	})
	t.Run("no options: default_kernelopts", func(t *testing.T) {
		files := blsRoot(bls, []string{"default_kernelopts=root=/dev/sda2 ro fallback=1"}, nil)
		files["boot/loader/entries/"+testMID+"-5.14.0-427.13.1.el9_4.x86_64.conf"] = &fstest.MapFile{Data: []byte("linux /vmlinuz\n")}
		_, cfg := bootOf(t, files)
		if cfg.Params["fallback"] != "1" {
			t.Errorf("params %v, want default_kernelopts", cfg.Params)
		}
	})
	t.Run("broken entries are errors and left out as GRUB leaves them", func(t *testing.T) {
		files := blsRoot(bls, nil, fstest.MapFS{
			"boot/loader/entries/nolinux.conf":                                      {Data: []byte("title x\noptions quiet\n")},
			"boot/loader/entries/stops.conf":                                        {Data: []byte("linux /vmlinuz-9\n\noptions hugetlb_cma=4G\n")},
			"boot/loader/entries/.hidden.conf":                                      {Data: []byte("linux /x\n")},
			"boot/loader/entries/notes.txt":                                         {Data: []byte("linux /x\n")},
			"boot/loader/entries/" + testMID + "-5.14.0-427.13.1.el9_4.x86_64.conf": {Data: []byte("linux /vmlinuz\nefi /EFI/Linux/x.efi\n")},
		})
		snap, cfg := bootOf(t, files)
		var ids []string
		for _, e := range cfg.Entries {
			ids = append(ids, e.ID)
		}
		if !slices.Contains(ids, "stops") || slices.Contains(ids, "nolinux") || len(ids) != 3 {
			t.Errorf("entries %q", ids)
		}
		errs := strings.Join(bootErrors(snap), "\n")
		for _, want := range []string{
			"/boot/loader/entries/nolinux.conf: parse error: no linux key",
			"/boot/loader/entries/stops.conf: parse error: line 2: a line without a value ends GRUB's reading",
			"parse error: both linux and efi keys",
		} {
			if !strings.Contains(errs, want) {
				t.Errorf("errors lack %q:\n%s", want, errs)
			}
		}
	})
	t.Run("an unknown GRUB_DEFAULT leaves the configured command line unknown", func(t *testing.T) {
		snap, cfg := bootOf(t, blsRoot(bls+"GRUB_DEFAULT=\"$(grubby --default-index)\"\n", nil, nil))
		if cfg.Present || cfg.DefaultEntry != nil || cfg.Loader != "grub-bls" || len(cfg.Entries) != 3 {
			t.Errorf("present %v default %v loader %q entries %d", cfg.Present, cfg.DefaultEntry, cfg.Loader, len(cfg.Entries))
		}
		if errs := strings.Join(bootErrors(snap), "\n"); !strings.Contains(errs, "GRUB_DEFAULT cannot be evaluated") {
			t.Errorf("errors: %s", errs)
		}
	})
	t.Run("an unreadable grubenv leaves the default and its variables unknown", func(t *testing.T) {
		files := blsRoot(bls+"GRUB_DEFAULT=0\n", nil, nil)
		delete(files, "boot/grub2/grubenv")
		files["boot/grub2/grubenv/x"] = &fstest.MapFile{Data: []byte("a directory where the file should be")}
		files["boot/loader/entries/"+testMID+"-0-rescue.conf"] = &fstest.MapFile{Data: []byte("linux /vmlinuz\noptions $kernelopts\n")}
		snap, cfg := bootOf(t, files)
		if cfg.Present || cfg.DefaultEntry != nil || cfg.DefaultBy != "unknown" || len(cfg.Entries) != 3 {
			t.Errorf("present %v default %v by %q entries %d", cfg.Present, cfg.DefaultEntry, cfg.DefaultBy, len(cfg.Entries))
		}
		for _, e := range cfg.Entries {
			if e.Present != !strings.Contains(e.Options, "$") {
				t.Errorf("entry %s (options %q) present %v: only entries without variables are known", e.ID, e.Options, e.Present)
			}
		}
		if errs := strings.Join(bootErrors(snap), "\n"); !strings.Contains(errs, "/boot/grub2/grubenv: ") {
			t.Errorf("errors: %s", errs)
		}
	})
	t.Run("grub.cfg is not read when nothing needs it", func(t *testing.T) {
		files := blsRoot(bls, []string{"kernelopts=quiet"}, fstest.MapFS{"boot/grub2/grub.cfg/x": {Data: []byte("dir")}})
		snap, cfg := bootOf(t, files)
		if errs := bootErrors(snap); len(errs) > 0 || cfg.Loader != "grub-bls" {
			t.Errorf("loader %q errors %q", cfg.Loader, errs)
		}
	})
	t.Run("a grubenv without its signature is ignored by GRUB", func(t *testing.T) {
		files := blsRoot(bls+"GRUB_DEFAULT=saved\n", nil, fstest.MapFS{
			"boot/grub2/grubenv": {Data: []byte("saved_entry=" + testMID + "-0-rescue\n")},
		})
		snap, cfg := bootOf(t, files)
		if cfg.DefaultBy != "first" {
			t.Errorf("default by %q, want first", cfg.DefaultBy)
		}
		if errs := strings.Join(bootErrors(snap), "\n"); !strings.Contains(errs, "/boot/grub2/grubenv: parse error: line 1: not a GRUB environment block") {
			t.Errorf("errors: %s", errs)
		}
	})
}

func efiVar(s string) []byte {
	b := []byte{7, 0, 0, 0}
	for _, u := range append(utf16.Encode([]rune(s)), 0) {
		b = binary.LittleEndian.AppendUint16(b, u)
	}
	return b
}

func TestSdBootDefaultEntry(t *testing.T) {
	root := func(more fstest.MapFS) fstest.MapFS {
		files := fstest.MapFS{
			"etc/kernel/cmdline":             {Data: []byte("root=UUID=1 ro\n")},
			"efi/loader/loader.conf":         {Data: []byte("timeout 3\ndefault fedora-6.7*\n")},
			"efi/loader/entries/auto-x.conf": {Data: []byte("linux /x\noptions auto=1\n")},
		}
		for _, v := range []string{"6.8.9", "6.8.5", "6.7.12"} {
			files["efi/loader/entries/fedora-"+v+".conf"] = &fstest.MapFile{Data: []byte(
				"title Fedora\nversion " + v + "\nsort-key fedora\noptions root=UUID=1 ro\noptions v=" + v + "\nlinux /k/" + v + "/linux\n")}
		}
		for k, v := range more {
			files[k] = v
		}
		return files
	}
	const vendor = "-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f"
	tests := []struct {
		name string
		more fstest.MapFS
		want string
		by   string
	}{
		{"loader.conf default glob", nil, "6.7.12", "loader.conf default"},
		{"LoaderEntryDefault beats loader.conf", fstest.MapFS{"sys/firmware/efi/efivars/LoaderEntryDefault" + vendor: {Data: efiVar("Fedora-6.8.5.conf")}}, "6.8.5", "LoaderEntryDefault"},
		{"LoaderEntryOneShot beats both", fstest.MapFS{
			"sys/firmware/efi/efivars/LoaderEntryDefault" + vendor: {Data: efiVar("fedora-6.8.5.conf")},
			"sys/firmware/efi/efivars/LoaderEntryOneShot" + vendor: {Data: efiVar("fedora-6.8.9.conf")},
		}, "6.8.9", "LoaderEntryOneShot"},
		{"no match: the first (newest)", fstest.MapFS{"efi/loader/loader.conf": {Data: []byte("default arch-*\n")}}, "6.8.9", "first"},
		{"@saved: the last booted", fstest.MapFS{
			"efi/loader/loader.conf":                                  {Data: []byte("default @saved\n")},
			"sys/firmware/efi/efivars/LoaderEntryLastBooted" + vendor: {Data: efiVar("fedora-6.8.5.conf")},
		}, "6.8.5", "loader.conf default"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap, cfg := bootOf(t, root(tt.more))
			if cfg.Loader != "systemd-boot" || cfg.DefaultEntry == nil {
				t.Fatalf("loader %q default %v", cfg.Loader, cfg.DefaultEntry)
			}
			if cfg.Params["v"] != tt.want || cfg.DefaultBy != tt.by {
				t.Errorf("default v=%s by %q, want v=%s by %q", cfg.Params["v"], cfg.DefaultBy, tt.want, tt.by)
			}
			if len(cfg.Entries) != 3 || cfg.Entries[0].Version != "6.8.9" || cfg.Entries[2].Version != "6.7.12" {
				t.Errorf("entries %+v, want 3 newest first (auto- entries skipped)", cfg.Entries)
			}
			if got := cfg.Cmdline.Cmdline; got != "root=UUID=1 ro v="+tt.want {
				t.Errorf("cmdline %q: options lines are joined", got)
			}
			if got := snap.Sources["boot.configured.params.v"].String(); !strings.HasSuffix(got, ".conf:4") {
				t.Errorf("v cited at %q, want the first options line", got)
			}
			if errs := bootErrors(snap); len(errs) > 0 {
				t.Errorf("errors: %q", errs)
			}
		})
	}
}

// systemd-boot v252 skips a loader.conf line it cannot parse (boot.c
// config_defaults_load_from_file: "Unsupported special entry identifier")
// and ignores an entry key in another case (streq8): each is a skipped
// error naming the file and line, and the default and command line are the
// ones the loader computes without them. An entry whose last loader key is
// "efi" is no Linux entry.
func TestSdBootSkippedLines(t *testing.T) {
	files := fstest.MapFS{
		"etc/kernel/cmdline":              {Data: []byte("root=UUID=1 ro\n")},
		"efi/loader/loader.conf":          {Data: []byte("default fedora-6.7*\ndefault @newest\ntimeout five\n")},
		"efi/loader/entries/memtest.conf": {Data: []byte("title memtest\nlinux /k/6.9.0/linux\nefi /memtest.efi\n")},
	}
	for _, v := range []string{"6.8.9", "6.8.5", "6.7.12"} {
		extra := ""
		if v == "6.7.12" {
			extra = "Options hugetlb_cma=2G\noptions\n"
		}
		files["efi/loader/entries/fedora-"+v+".conf"] = &fstest.MapFile{Data: []byte(
			"title Fedora\nversion " + v + "\nsort-key fedora\noptions root=UUID=1 ro\n" + extra + "linux /k/" + v + "/linux\n")}
	}
	snap, cfg := bootOf(t, files)
	if cfg.Loader != "systemd-boot" || cfg.DefaultEntry == nil || cfg.DefaultBy != "loader.conf default" {
		t.Fatalf("loader %q default %v by %q, want systemd-boot's loader.conf default", cfg.Loader, cfg.DefaultEntry, cfg.DefaultBy)
	}
	if e := cfg.Entries[*cfg.DefaultEntry]; e.Version != "6.7.12" {
		t.Errorf("default entry %+v, want 6.7.12 (line 1's pattern; line 2 is skipped)", e)
	}
	if got := snap.Sources["boot.configured.default_entry"].String(); got != "/efi/loader/loader.conf:1" {
		t.Errorf("default cited at %q, want /efi/loader/loader.conf:1", got)
	}
	if len(cfg.Entries) != 3 {
		t.Errorf("entries %+v, want the three fedora ones (memtest's last loader key is efi)", cfg.Entries)
	}
	if _, ok := cfg.Params["hugetlb_cma"]; ok || cfg.Cmdline.Cmdline != "root=UUID=1 ro" {
		t.Errorf("cmdline %q params %v: the loader ignores Options", cfg.Cmdline.Cmdline, cfg.Params)
	}
	entry := "/efi/loader/entries/fedora-6.7.12.conf"
	want := []snapshot.CollectionError{
		{Collector: "boot", Path: entry, Reason: `parse error: line 5: key "Options" is ignored; systemd-boot's keys are case-sensitive: options`, Skipped: true},
		{Collector: "boot", Path: entry, Reason: `parse error: line 6: "options" has no value; systemd-boot skips the line`, Skipped: true},
		{Collector: "boot", Path: "/efi/loader/loader.conf", Reason: `parse error: line 2: default "@newest": unsupported special entry identifier (only @saved); systemd-boot skips the line`, Skipped: true},
		{Collector: "boot", Path: "/efi/loader/loader.conf", Reason: `parse error: line 3: timeout "five": not a number of seconds (0-4294967295), menu-force or menu-hidden; systemd-boot skips the line`, Skipped: true},
	}
	var got []snapshot.CollectionError
	for _, e := range snap.Errors {
		if e.Collector == bootCollector {
			got = append(got, e)
		}
	}
	if diff := cmp.Diff(want, got, cmpopts.SortSlices(func(a, b snapshot.CollectionError) bool { return a.Path+a.Reason < b.Path+b.Reason })); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

// config_entry_add_type1 drops an entry whose "architecture" is not the
// loader's own EFI machine type (x64 on x86_64); with the host's machine
// unknown the entry stays.
func TestSdBootEntryArchitecture(t *testing.T) {
	files := func(arch string) fstest.MapFS {
		fs := fstest.MapFS{
			"etc/kernel/cmdline":            {Data: []byte("root=UUID=1 ro\n")},
			"efi/loader/loader.conf":        {Data: []byte("timeout 3\n")},
			"efi/loader/entries/a-6.9.conf": {Data: []byte("title Arm\nversion 6.9\nsort-key fedora\narchitecture aa64\noptions v=arm\nlinux /k/6.9/linux\n")},
			"efi/loader/entries/a-6.8.conf": {Data: []byte("title x64\nversion 6.8\nsort-key fedora\narchitecture x64\noptions v=x64\nlinux /k/6.8/linux\n")},
		}
		if arch != "" {
			fs["proc/sys/kernel/arch"] = &fstest.MapFile{Data: []byte(arch + "\n")}
		}
		return fs
	}
	_, cfg := bootOf(t, files("x86_64"))
	if len(cfg.Entries) != 1 || cfg.Params["v"] != "x64" {
		t.Errorf("x86_64 host: entries %+v, default v=%s; want only the x64 entry", cfg.Entries, cfg.Params["v"])
	}
	_, cfg = bootOf(t, files(""))
	if len(cfg.Entries) != 2 || cfg.Params["v"] != "arm" {
		t.Errorf("unknown machine: entries %+v, default v=%s; want both, the newest first", cfg.Entries, cfg.Params["v"])
	}
}
