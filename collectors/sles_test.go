package collectors

import (
	"context"
	"testing"
)

// sles15-node is written the way SLES 15 SP5 lays out its files
// (testdata/hosts/README.md cites each source). Its stock files read as
// their readers read them: suse-module-tools' "allow_unsupported_modules 0"
// is a command SUSE's kmod reads, not a bad line; the blacklist's line with
// a trailing comment blocks its first word, "i2c-matroxfb" is i2c_matroxfb,
// and the install command is kept whole; the kernel parameters YaST writes
// into GRUB_CMDLINE_LINUX_DEFAULT are configured; aaa_base's sysctl
// defaults come from /usr/lib/sysctl.d.
func TestSLESNodeStockFiles(t *testing.T) {
	snap, err := Collect(context.Background(), fixtureTarget("sles15-node"), fixtureOptions("sles15-node"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range snap.Errors {
		t.Errorf("collection error on a stock SLES file: %+v", e)
	}
	m := snap.Modules
	if len(m.Blacklisted) != 125 || !m.Blacklisted["opl3sa2"] || !m.Blacklisted["i2c_matroxfb"] || !m.Blacklisted["snd_bt87x"] {
		t.Errorf("blacklisted %d modules %v, want 50-blacklist.conf's 125 lines", len(m.Blacklisted), m.Blacklisted)
	}
	if got := m.Install["bttv_skip_it"]; got != `echo "module alias skipped (bt878 chip without PCI Subsystem ID)"` {
		t.Errorf("install bttv_skip_it = %q", got)
	}
	if !m.Configured["sg"] {
		t.Errorf("configured %v, want sg from /usr/lib/modules-load.d/sg.conf", m.Configured)
	}
	cfg := snap.Boot.Configured
	if cfg.Loader != "grub" || cfg.Grub == nil || cfg.Grub.CmdlineLinux != "" || cfg.Params["hugetlb_cma"] != "4G" || cfg.Params["security"] != "apparmor" {
		t.Errorf("boot configured %+v, want GRUB with the parameters of GRUB_CMDLINE_LINUX_DEFAULT", cfg)
	}
	for fact, want := range map[string]string{
		"boot.configured.params.hugetlb_cma": "/etc/default/grub:11",
		"sysctl.configured.kernel.sysrq":     "/usr/lib/sysctl.d/50-default.conf:44",
		"modules.blacklisted.opl3sa2":        "/etc/modprobe.d/50-blacklist.conf:147",
		"modules.install.bttv_skip_it":       "/etc/modprobe.d/50-blacklist.conf:179",
	} {
		if got := snap.Sources[fact].String(); got != want {
			t.Errorf("%s cited at %q, want %s", fact, got, want)
		}
	}
	if snap.Logind.RemoveIPC != "yes" || !snap.Logind.RemoveIPCDefault {
		t.Errorf("logind %+v, want RemoveIPC yes by SUSE's (upstream) default", snap.Logind)
	}
}
