package collectors

import "strings"

// releaseArchSuffixes are machine names that RPM-built kernels append to
// their release ("5.14.0-427.13.1.el9_4.x86_64").
var releaseArchSuffixes = []string{"x86_64", "aarch64", "ppc64le", "s390x", "i686", "riscv64"}

func collectKernel(c *collection) {
	if c.snap.Source.Image {
		// No kernel runs: the installed ones are what applies.
		collectInstalledKernels(c)
		return
	}
	k := &c.snap.Kernel
	set := func(fact, name string, dst *string) bool {
		v, ok := c.readTrimmed("kernel", name)
		if !ok || v == "" {
			return false
		}
		*dst = v
		c.from(fact, name, 0)
		return true
	}
	set("kernel.release", "/proc/sys/kernel/osrelease", &k.Release)
	set("kernel.version", "/proc/sys/kernel/version", &k.Version)
	if set("kernel.arch", "/proc/sys/kernel/arch", &k.Arch) {
		return
	}
	if arch := archFromRelease(k.Release); arch != "" {
		k.Arch = arch
		c.from("kernel.arch", "/proc/sys/kernel/osrelease", 0)
		return
	}
	if k.Release != "" {
		// Never guessed: the nvidia collector may still fill it in from the
		// module banner.
		c.defaulted("kernel.arch", "unknown: no /proc/sys/kernel/arch before Linux 6.1")
	}
}

// archFromRelease returns the machine name an RPM kernel release ends with.
func archFromRelease(release string) string {
	for _, arch := range releaseArchSuffixes {
		if strings.HasSuffix(release, "."+arch) {
			return arch
		}
	}
	return ""
}
