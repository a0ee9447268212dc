package collectors

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetaudit/fleetaudit/internal/debroot"
)

// Real GRUB defaults, as shipped.
const (
	// Ubuntu 22.04 /etc/default/grub (grub2-common 2.06).
	grubUbuntuJammy = `# If you change this file, run 'update-grub' afterwards to update
# /boot/grub/grub.cfg.
# For full documentation of the options in this file, see:
#   info -f grub -n 'Simple configuration'

GRUB_DEFAULT=0
GRUB_TIMEOUT_STYLE=hidden
GRUB_TIMEOUT=0
GRUB_DISTRIBUTOR=` + "`lsb_release -i -s 2> /dev/null || echo Debian`" + `
GRUB_CMDLINE_LINUX_DEFAULT="quiet splash"
GRUB_CMDLINE_LINUX=""

# Uncomment to enable BadRAM filtering, modify to suit your needs
# This works with Linux (no patch required) and with any kernel that obtains
# the memory map information from GRUB (GNU Mach, kernel of FreeBSD ...)
#GRUB_BADRAM="0x01234567,0xfefefefe,0x89abcdef,0xefefefef"

# Uncomment to disable graphical terminal (grub-pc only)
#GRUB_TERMINAL=console

# The resolution used on graphical terminal
# note that you can use only modes which your graphic card supports via VBE
# you can see them in real GRUB with the command ` + "`vbeinfo'" + `
#GRUB_GFXMODE=640x480

# Uncomment if you don't want GRUB to pass "root=UUID=xxx" parameter to Linux
#GRUB_DISABLE_LINUX_UUID=true

# Uncomment to disable generation of recovery mode menu entries
#GRUB_DISABLE_RECOVERY="true"

# Uncomment to get a beep at grub start
#GRUB_INIT_TUNE="480 440 1"
`
	// Ubuntu 24.04 computes the distributor in a subshell that sources
	// os-release: inside backquotes, so nothing here is sourced.
	grubUbuntuNobleDistributor = "GRUB_DISTRIBUTOR=`( . /etc/os-release; echo ${NAME:-Ubuntu} ) 2>/dev/null || echo Ubuntu`\n"

	// Rocky/RHEL 9 /etc/default/grub.
	grubRHEL9 = `GRUB_TIMEOUT=5
GRUB_DISTRIBUTOR="$(sed 's, release .*$,,g' /etc/system-release)"
GRUB_DEFAULT=saved
GRUB_DISABLE_SUBMENU=true
GRUB_TERMINAL_OUTPUT="console"
GRUB_CMDLINE_LINUX="crashkernel=1G-4G:192M,4G-64G:256M,64G-:512M resume=/dev/mapper/rl-swap rd.lvm.lv=rl/root rd.lvm.lv=rl/swap"
GRUB_DISABLE_RECOVERY="true"
GRUB_ENABLE_BLSCFG=true
`
	// Ubuntu cloud images: /etc/default/grub.d/50-cloudimg-settings.cfg.
	grubCloudimg = `# Cloud Image specific Grub settings for Generic Cloud Images
# CLOUD_IMG: This file was created/modified by the Cloud Image build process

# Set the recordfail timeout
GRUB_RECORDFAIL_TIMEOUT=0

# Do not wait on grub prompt
GRUB_TIMEOUT=0

# Set the default commandline
GRUB_CMDLINE_LINUX_DEFAULT="console=tty1 console=ttyS0"

# Set the grub console type
GRUB_TERMINAL=console
`
	// An init-select.cfg in the style Ubuntu's shipped for choosing the init
	// system: a conditional that appends to the command line.
	grubInitSelect = `# Select the init system when a non-default one is installed.
if [ -x /sbin/upstart ] && [ "$(readlink -f /sbin/init)" != /sbin/upstart ]; then
    GRUB_CMDLINE_LINUX_DEFAULT="$GRUB_CMDLINE_LINUX_DEFAULT init=/sbin/upstart"
fi
`
	grubHugetlb = `# Shared boot policy (base layer): reserve CMA so 1G hugepages can be allocated at run time.
# Do not edit on hosts; change the config repo.
GRUB_CMDLINE_LINUX="$GRUB_CMDLINE_LINUX hugetlb_cma=6G"
`
)

// renderShellValue shows a value as its segments with their origins, or why
// it is unknown.
func renderShellValue(v ShellValue) string {
	if v.Unknown != nil {
		return fmt.Sprintf("unknown at %s: %s", v.Unknown.At, v.Unknown.Why)
	}
	if !v.Set {
		return "unset"
	}
	var parts []string
	for _, s := range v.Segments {
		parts = append(parts, fmt.Sprintf("%s %q", s.Origin, s.Text))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func grubFiles(pairs ...string) []GrubFile {
	var files []GrubFile
	for i := 0; i+1 < len(pairs); i += 2 {
		files = append(files, GrubFile{Name: pairs[i], Data: []byte(pairs[i+1])})
	}
	return files
}

const (
	gd  = "/etc/default/grub"
	gd1 = "/etc/default/grub.d/40-a.cfg"
	gd2 = "/etc/default/grub.d/60-b.cfg"
)

func TestEvalGrubDefaults(t *testing.T) {
	tests := []struct {
		name         string
		files        []GrubFile
		linux        string
		linuxDefault string
		errs         []string
		// aborted is where grub-mkconfig exits, "" when it runs through.
		aborted string
	}{
		{
			name:         "ubuntu 22.04 with a backquoted distributor is not an error",
			files:        grubFiles(gd, grubUbuntuJammy),
			linux:        "[]",
			linuxDefault: `[/etc/default/grub:10 "quiet splash"]`,
		},
		{
			name:         "ubuntu 24.04 distributor",
			files:        grubFiles(gd, grubUbuntuNobleDistributor+`GRUB_CMDLINE_LINUX="ro"`),
			linux:        `[/etc/default/grub:2 "ro"]`,
			linuxDefault: "unset",
		},
		{
			name:         "rhel 9 with a command substitution in the distributor",
			files:        grubFiles(gd, grubRHEL9),
			linux:        `[/etc/default/grub:6 "crashkernel=1G-4G:192M,4G-64G:256M,64G-:512M resume=/dev/mapper/rl-swap rd.lvm.lv=rl/root rd.lvm.lv=rl/swap"]`,
			linuxDefault: "unset",
		},
		{
			name:         "cloud image drop-in overrides, hugetlb drop-in appends",
			files:        grubFiles(gd, grubUbuntuJammy, "/etc/default/grub.d/50-cloudimg-settings.cfg", grubCloudimg, "/etc/default/grub.d/60-hugetlb.cfg", grubHugetlb),
			linux:        `[/etc/default/grub.d/60-hugetlb.cfg:3 " hugetlb_cma=6G"]`,
			linuxDefault: `[/etc/default/grub.d/50-cloudimg-settings.cfg:11 "console=tty1 console=ttyS0"]`,
		},
		{
			name: "expansion keeps the origin of each part",
			files: grubFiles(
				gd, "GRUB_CMDLINE_LINUX=\"iommu=pt\"\n",
				gd1, "# a\nGRUB_CMDLINE_LINUX=\"$GRUB_CMDLINE_LINUX hugetlb_cma=2G\"\n",
				gd2, "GRUB_CMDLINE_LINUX=\"${GRUB_CMDLINE_LINUX} hugetlb_cma=0\"\n"),
			linux:        `[/etc/default/grub:1 "iommu=pt", /etc/default/grub.d/40-a.cfg:2 " hugetlb_cma=2G", /etc/default/grub.d/60-b.cfg:1 " hugetlb_cma=0"]`,
			linuxDefault: "unset",
		},
		{
			name:         "export, empty assignment and several assignments on a line",
			files:        grubFiles(gd, "export GRUB_CMDLINE_LINUX=quiet\nA=1 B=$A GRUB_CMDLINE_LINUX_DEFAULT=\nexport X GRUB_CMDLINE_LINUX_DEFAULT=\"$B$A\"\n"),
			linux:        `[/etc/default/grub:1 "quiet"]`,
			linuxDefault: `[/etc/default/grub:2 "11"]`,
		},
		{
			name:         "double quote escapes and single quotes",
			files:        grubFiles(gd, `V=x`+"\n"+`GRUB_CMDLINE_LINUX="a=\"b c\" \\ \$V $V \q"'$V "'`+"\n"),
			linux:        `[/etc/default/grub:2 "a=\"b c\" \\ $V ", /etc/default/grub:1 "x", /etc/default/grub:2 " \\q$V \""]`,
			linuxDefault: "unset",
		},
		{
			name:         "unquoted words with expansion and escapes",
			files:        grubFiles(gd, "A=pt\nGRUB_CMDLINE_LINUX=iommu=$A\\ x#y # comment\n"),
			linux:        `[/etc/default/grub:2 "iommu=", /etc/default/grub:1 "pt", /etc/default/grub:2 " x#y"]`,
			linuxDefault: "unset",
		},
		{
			name:         "backslash-newline continues a line; each part keeps its own line",
			files:        grubFiles(gd, "GRUB_CMDLINE_LINUX=\"iommu=pt \\\n  hugetlb_cma=6G\"\nGRUB_CMDLINE_LINUX_DEFAULT=\\\nquiet\n"),
			linux:        `[/etc/default/grub:1 "iommu=pt ", /etc/default/grub:2 "  hugetlb_cma=6G"]`,
			linuxDefault: `[/etc/default/grub:4 "quiet"]`,
		},
		{
			name:         "newline inside quotes",
			files:        grubFiles(gd, "GRUB_CMDLINE_LINUX='a\nb'\n"),
			linux:        `[/etc/default/grub:1 "a\n", /etc/default/grub:2 "b"]`,
			linuxDefault: "unset",
		},
		{
			name: "default and alternative expansions",
			files: grubFiles(gd, `E=
GRUB_CMDLINE_LINUX="${E:-colon} ${E-nocolon} ${U:-unset} ${U-unset2} ${E:+alt} ${GRUB_CMDLINE_LINUX:+x}${#E}"
: ${GRUB_CMDLINE_LINUX_DEFAULT:=quiet}
`),
			linux:        `[/etc/default/grub:2 "colon  unset unset2  0"]`,
			linuxDefault: `[/etc/default/grub:3 "quiet"]`,
		},
		{
			name:         "unset",
			files:        grubFiles(gd, "GRUB_CMDLINE_LINUX=a\nunset GRUB_CMDLINE_LINUX\n"),
			linux:        "unset",
			linuxDefault: "unset",
		},
		{
			name:         "command substitution in the command line is an error",
			files:        grubFiles(gd, "GRUB_CMDLINE_LINUX=\"quiet $(cat /etc/extra)\"\n"),
			linux:        "unknown at /etc/default/grub:1: command substitution $(...) at line 1",
			linuxDefault: "unset",
			errs:         []string{"/etc/default/grub: parse error: line 1: GRUB_CMDLINE_LINUX cannot be evaluated: command substitution $(...) at line 1"},
		},
		{
			name:         "an unknown value that is later replaced is no error",
			files:        grubFiles(gd, "GRUB_CMDLINE_LINUX=`cat /x`\n", gd1, "GRUB_CMDLINE_LINUX=quiet\n"),
			linux:        `[/etc/default/grub.d/40-a.cfg:1 "quiet"]`,
			linuxDefault: "unset",
		},
		{
			name:         "assignment inside if",
			files:        grubFiles(gd, grubUbuntuJammy, "/etc/default/grub.d/init-select.cfg", grubInitSelect),
			linux:        "[]",
			linuxDefault: "unknown at /etc/default/grub.d/init-select.cfg:3: set only conditionally, inside if at line 2",
			errs:         []string{"/etc/default/grub.d/init-select.cfg: parse error: line 3: GRUB_CMDLINE_LINUX_DEFAULT cannot be evaluated: set only conditionally, inside if at line 2"},
		},
		{
			name:         "assignment after &&",
			files:        grubFiles(gd, "GRUB_CMDLINE_LINUX=a\n[ -d /sys/firmware/efi ] && GRUB_CMDLINE_LINUX=b\n"),
			linux:        "unknown at /etc/default/grub:2: set only conditionally, after && or || at line 2",
			linuxDefault: "unset",
			errs:         []string{"/etc/default/grub: parse error: line 2: GRUB_CMDLINE_LINUX cannot be evaluated: set only conditionally, after && or || at line 2"},
		},
		{
			name:         "subshells, pipelines and here-documents change nothing",
			files:        grubFiles(gd, "GRUB_CMDLINE_LINUX=a\n(GRUB_CMDLINE_LINUX=b)\nGRUB_CMDLINE_LINUX=c | cat\ncat <<EOF >/dev/null\nGRUB_CMDLINE_LINUX=d\nEOF\necho done 2>&1\n"),
			linux:        `[/etc/default/grub:1 "a"]`,
			linuxDefault: "unset",
		},
		{
			name:         "sourcing another file makes everything unknown",
			files:        grubFiles(gd, "GRUB_CMDLINE_LINUX=a\n. /etc/default/site\nGRUB_CMDLINE_LINUX_DEFAULT=quiet\n"),
			linux:        "unknown at /etc/default/grub:2: may be set by the file sourced at line 2",
			linuxDefault: `[/etc/default/grub:3 "quiet"]`,
			errs:         []string{"/etc/default/grub: parse error: line 2: GRUB_CMDLINE_LINUX cannot be evaluated: may be set by the file sourced at line 2"},
		},
		{
			name:         "a function call is opaque",
			files:        grubFiles(gd, "add() {\n  GRUB_CMDLINE_LINUX=\"$GRUB_CMDLINE_LINUX $1\"\n}\nGRUB_CMDLINE_LINUX=a\nadd nosmt\n"),
			linux:        "unknown at /etc/default/grub:5: may be set by shell function add, called at line 5",
			linuxDefault: "unknown at /etc/default/grub:5: may be set by shell function add, called at line 5",
			errs: []string{
				"/etc/default/grub: parse error: line 5: GRUB_CMDLINE_LINUX cannot be evaluated: may be set by shell function add, called at line 5",
				"/etc/default/grub: parse error: line 5: GRUB_CMDLINE_LINUX_DEFAULT cannot be evaluated: may be set by shell function add, called at line 5",
			},
		},
		{
			name:         "return ends the file, a conditional return makes the rest conditional",
			files:        grubFiles(gd, "A=1\nreturn\nGRUB_CMDLINE_LINUX=never\n", gd1, "[ -e /x ] || return\nGRUB_CMDLINE_LINUX_DEFAULT=maybe\n", gd2, "GRUB_CMDLINE_LINUX=b\n"),
			linux:        `[/etc/default/grub.d/60-b.cfg:1 "b"]`,
			linuxDefault: "unknown at /etc/default/grub.d/40-a.cfg:2: set only conditionally, after a conditional return at line 1",
			errs:         []string{"/etc/default/grub.d/40-a.cfg: parse error: line 2: GRUB_CMDLINE_LINUX_DEFAULT cannot be evaluated: set only conditionally, after a conditional return at line 1"},
		},
		{
			name:         "a variable grub-mkconfig sets at run time",
			files:        grubFiles(gd, "GRUB_CMDLINE_LINUX=\"root=$GRUB_DEVICE\"\n"),
			linux:        "unknown at /etc/default/grub:1: reads GRUB_DEVICE, which grub-mkconfig sets at run time (line 1)",
			linuxDefault: "unset",
			errs:         []string{"/etc/default/grub: parse error: line 1: GRUB_CMDLINE_LINUX cannot be evaluated: reads GRUB_DEVICE, which grub-mkconfig sets at run time (line 1)"},
		},
		{
			// dash and bash --posix exit at a syntax error in a file read
			// with ".": grub-mkconfig writes no grub.cfg from these files.
			name: "unterminated quote: grub-mkconfig exits there, nothing after it is read",
			files: grubFiles(gd, "GRUB_CMDLINE_LINUX=ro\nGRUB_CMDLINE_LINUX_DEFAULT=\"quiet\nGRUB_TIMEOUT=5\n",
				gd1, "GRUB_CMDLINE_LINUX=\"$GRUB_CMDLINE_LINUX x\"\n"),
			linux:        "unknown at /etc/default/grub:2: grub-mkconfig exits at line 2, a syntax error",
			linuxDefault: "unknown at /etc/default/grub:2: grub-mkconfig exits at line 2, a syntax error",
			errs:         []string{"/etc/default/grub: parse error: line 2: unterminated double quote; " + grubAborts},
			aborted:      "/etc/default/grub:2",
		},
		{
			name:         "a syntax error in a drop-in ends all files",
			files:        grubFiles(gd, "GRUB_CMDLINE_LINUX=ro\n", gd1, "GRUB_CMDLINE_LINUX=x\nfi\n", gd2, "GRUB_CMDLINE_LINUX=late\n"),
			linux:        "unknown at /etc/default/grub.d/40-a.cfg:2: grub-mkconfig exits at line 2, a syntax error",
			linuxDefault: "unknown at /etc/default/grub.d/40-a.cfg:2: grub-mkconfig exits at line 2, a syntax error",
			errs:         []string{`/etc/default/grub.d/40-a.cfg: parse error: line 2: "fi" unexpected; ` + grubAborts},
			aborted:      "/etc/default/grub.d/40-a.cfg:2",
		},
		{
			name:         "other syntax errors: the first one counts",
			files:        grubFiles(gd, "GRUB_CMDLINE_LINUX=a\nfi\nGRUB_CMDLINE_LINUX_DEFAULT=${a b}\nif true; then\n"),
			linux:        "unknown at /etc/default/grub:2: grub-mkconfig exits at line 2, a syntax error",
			linuxDefault: "unknown at /etc/default/grub:2: grub-mkconfig exits at line 2, a syntax error",
			errs:         []string{`/etc/default/grub: parse error: line 2: "fi" unexpected; ` + grubAborts},
			aborted:      "/etc/default/grub:2",
		},
		{
			// bash, /bin/sh on RHEL and SUSE, runs it; dash does not.
			name:         "a bash feature: that line is unknown, the rest is read",
			files:        grubFiles(gd, "GRUB_CMDLINE_LINUX_DEFAULT=${x/a/b}\nGRUB_CMDLINE_LINUX=ro\n"),
			linux:        `[/etc/default/grub:2 "ro"]`,
			linuxDefault: "unknown at /etc/default/grub:1: line is not POSIX shell",
			errs:         []string{"/etc/default/grub: parse error: line 1: search and replace: a bash feature; /bin/sh does not accept it"},
		},
		{
			name:         "a file of bash features stops being read after 10",
			files:        grubFiles(gd, strings.Repeat("A=${x/a/b}\n", 12)+"GRUB_CMDLINE_LINUX=late\n"),
			linux:        "unknown at /etc/default/grub:11: may be set after line 11, where reading stopped",
			linuxDefault: "unknown at /etc/default/grub:11: may be set after line 11, where reading stopped",
			errs: append(func() (errs []string) {
				for i := 1; i <= 10; i++ {
					errs = append(errs, fmt.Sprintf(`/etc/default/grub: parse error: line %d: search and replace: a bash feature; /bin/sh does not accept it`, i))
				}
				return errs
			}(), "/etc/default/grub: parse error: line 11: more than 10 lines that are not POSIX shell; the rest of the file is not read"),
		},
		{
			name:         "values that grow without bound are capped",
			files:        grubFiles(gd, "A=x\n"+strings.Repeat("A=$A$A$A$A\n", 8)+"GRUB_CMDLINE_LINUX=\"$A\"\n"),
			linux:        "unknown at /etc/default/grub:9: value at line 9 is too long to evaluate",
			linuxDefault: "unset",
			errs:         []string{"/etc/default/grub: parse error: line 9: GRUB_CMDLINE_LINUX cannot be evaluated: value at line 9 is too long to evaluate"},
		},
		{
			name:         "compound commands parse",
			files:        grubFiles(gd, "for x in a b; do\n  echo $x\ndone\ncase $y in\n  a|b) z=1 ;;\n  *) ;;\nesac\nwhile false; do :; done\n{ GRUB_CMDLINE_LINUX=grouped; }\n"),
			linux:        `[/etc/default/grub:9 "grouped"]`,
			linuxDefault: "unset",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := EvalGrubDefaults(tt.files, nil)
			if diff := cmp.Diff(tt.linux, renderShellValue(got.Linux)); diff != "" {
				t.Errorf("GRUB_CMDLINE_LINUX (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.linuxDefault, renderShellValue(got.LinuxDefault)); diff != "" {
				t.Errorf("GRUB_CMDLINE_LINUX_DEFAULT (-want +got):\n%s", diff)
			}
			var errs []string
			for _, e := range got.Errors {
				if !errors.Is(e, ErrParse) {
					t.Errorf("error %v does not wrap ErrParse", e)
				}
				errs = append(errs, e.File+": "+e.Error())
			}
			if diff := cmp.Diff(tt.errs, errs); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			aborted := ""
			if got.Aborted != nil {
				aborted = ShellOrigin{got.Aborted.File, got.Aborted.Line}.String()
			}
			if aborted != tt.aborted {
				t.Errorf("aborted at %q, want %q", aborted, tt.aborted)
			}
		})
	}
}

func FuzzGrubDefaults(f *testing.F) {
	for _, seed := range [][2]string{
		{grubUbuntuJammy, grubHugetlb},
		{grubUbuntuJammy, grubCloudimg},
		{grubUbuntuJammy, grubInitSelect},
		{grubUbuntuNobleDistributor, "GRUB_CMDLINE_LINUX=\"${GRUB_CMDLINE_LINUX} hugetlb_cma=0\"\n"},
		{grubRHEL9, ""},
		{"GRUB_CMDLINE_LINUX=\"a $(b \"c\" 'd)') ${x:-\"y}\"} `e` $((1+2))\"\n", "add() { :; }\nadd\n. /x\n"},
		{"cat <<-EOF\n\tx\n\tEOF\nGRUB_CMDLINE_LINUX=\"unterminated\n", "if a; then b; elif c; then d; else e; fi\ncase x in (a) ;; esac\n"},
	} {
		f.Add(seed[0], seed[1])
	}
	// Debian's template, which grub-pc's and grub-efi-amd64's postinst copy
	// to /etc/default/grub.
	// SUSE's layout: the parameters in GRUB_CMDLINE_LINUX_DEFAULT (sles15-node).
	for _, data := range fixtureEntries(f, "etc/default/grub") {
		f.Add(string(data), "")
	}
	for _, data := range debroot.Files(f, "grub2-common", "usr/share/grub/default/grub") {
		f.Add(string(data), "")
		f.Add(grubRHEL9, string(data))
	}
	f.Fuzz(func(t *testing.T, main, dropin string) {
		files := grubFiles(gd, main, gd1, dropin)
		got := EvalGrubDefaults(files, nil)
		lines := map[string]int{gd: strings.Count(main, "\n") + 1, gd1: strings.Count(dropin, "\n") + 1}
		for _, e := range got.Errors {
			if n, ok := lines[e.File]; !ok || e.Line < 1 || e.Line > n {
				t.Fatalf("error %q at %s:%d is outside the input", e, e.File, e.Line)
			}
			if !errors.Is(e, ErrParse) {
				t.Fatalf("error %v does not wrap ErrParse", e)
			}
		}
		for _, v := range []ShellValue{got.Linux, got.LinuxDefault} {
			if v.Unknown != nil {
				if n, ok := lines[v.Unknown.At.File]; !ok || v.Unknown.At.Line < 1 || v.Unknown.At.Line > n {
					t.Fatalf("unknown at %s is outside the input", v.Unknown.At)
				}
				continue
			}
			for _, s := range v.Segments {
				if n, ok := lines[s.Origin.File]; !ok || s.Origin.Line < 1 || s.Origin.Line > n {
					t.Fatalf("segment %q from %s is outside the input", s.Text, s.Origin)
				}
				// Every character comes from the line it cites, except for
				// ${#VAR}, which writes a number.
				src := main
				if s.Origin.File == gd1 {
					src = dropin
				}
				line := strings.Split(src, "\n")[s.Origin.Line-1]
				for i := 0; i < len(s.Text); i++ {
					c := s.Text[i]
					if c != '\n' && strings.IndexByte(line, c) < 0 && (c < '0' || c > '9') {
						t.Fatalf("segment %q cites %s, whose line %q lacks %q", s.Text, s.Origin, line, c)
					}
				}
			}
		}
	})
}

// initSelectCfg is the conditional append Ubuntu's init-select.cfg makes: it
// must not make the command line of every Ubuntu host unknown.
const initSelectCfg = `# Ubuntu: boot upstart when it is installed but not the default init
if [ -e /sbin/upstart ] && [ "$(readlink /sbin/init)" != "upstart" ]; then
    GRUB_CMDLINE_LINUX_DEFAULT="$GRUB_CMDLINE_LINUX_DEFAULT init=/sbin/upstart"
fi
`

func TestEvalGrubConditions(t *testing.T) {
	root := fstest.MapFS{
		"sbin/upstart":       {Mode: 0o755},
		"etc/grub-flag":      {Data: []byte("x")},
		"etc/empty":          {},
		"opt/dir":            {Mode: fs.ModeDir | 0o755},
		"usr/bin/link":       {Data: []byte("upstart"), Mode: fs.ModeSymlink},
		"usr/bin/noexec.cfg": {Mode: 0o644},
	}
	tests := []struct {
		name, cond string
		want       string // GRUB_CMDLINE_LINUX_DEFAULT after "if COND; then append x; else append y; fi"
		unknown    bool
	}{
		{"-e present", "[ -e /sbin/upstart ]", "base x", false},
		{"-e absent", "[ -e /sbin/nothing ]", "base y", false},
		{"-f on a dir", "[ -f /opt/dir ]", "base y", false},
		{"-d", "[ -d /opt/dir ]", "base x", false},
		{"-x", "test -x /sbin/upstart", "base x", false},
		{"-x without bits", "[ -x /usr/bin/noexec.cfg ]", "base y", false},
		{"-s empty", "[ -s /etc/empty ]", "base y", false},
		{"-s", "[ -s /etc/grub-flag ]", "base x", false},
		{"-L", "[ -L /usr/bin/link ]", "base x", false},
		{"relative path", "[ -e sbin/upstart ]", "base", true},
		{"-n var", `[ -n "$GRUB_CMDLINE_LINUX_DEFAULT" ]`, "base x", false},
		{"-z var", `[ -z "$UNSET" ]`, "base x", false},
		{"string =", `[ "$GRUB_CMDLINE_LINUX_DEFAULT" = base ]`, "base x", false},
		{"string !=", `[ a != a ]`, "base y", false},
		{"integers", `[ 10 -gt 9 ]`, "base x", false},
		{"not an integer", `[ ten -gt 9 ]`, "base", true},
		{"negation", `! [ -e /sbin/upstart ]`, "base y", false},
		{"test negation", `[ ! -e /sbin/upstart ]`, "base y", false},
		{"-a -o", `[ -e /nope -a -e /sbin/upstart -o -d /opt/dir ]`, "base x", false},
		{"false && unknown", `[ -e /nope ] && [ "$(readlink /sbin/init)" != upstart ]`, "base y", false},
		{"true || unknown", `[ -e /sbin/upstart ] || [ "$(cat /x)" = y ]`, "base x", false},
		{"true && unknown", `[ -e /sbin/upstart ] && [ "$(readlink /sbin/init)" != upstart ]`, "base", true},
		{"unknown command", `grep -q foo /etc/x`, "base", true},
		{"true builtin", `true`, "base x", false},
		{"false builtin", `false`, "base y", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := "GRUB_CMDLINE_LINUX_DEFAULT=base\nif " + tt.cond + "; then\n" +
				"  GRUB_CMDLINE_LINUX_DEFAULT=\"$GRUB_CMDLINE_LINUX_DEFAULT x\"\nelse\n" +
				"  GRUB_CMDLINE_LINUX_DEFAULT=\"$GRUB_CMDLINE_LINUX_DEFAULT y\"\nfi\n"
			got := EvalGrubDefaults([]GrubFile{{Name: "/etc/default/grub", Data: []byte(cfg)}}, sourceFileTester{FS(root)})
			if v := got.LinuxDefault.String(); v != tt.want {
				t.Errorf("value = %q, want %q", v, tt.want)
			}
			if (got.LinuxDefault.Unknown != nil) != tt.unknown || (len(got.Errors) > 0) != tt.unknown {
				t.Errorf("unknown = %v, errors = %v; want unknown %v", got.LinuxDefault.Unknown, got.Errors, tt.unknown)
			}
		})
	}
}

func TestEvalGrubUbuntuInitSelect(t *testing.T) {
	files := []GrubFile{
		{Name: "/etc/default/grub", Data: []byte("GRUB_CMDLINE_LINUX_DEFAULT=\"quiet splash\"\nGRUB_CMDLINE_LINUX=\"\"\n")},
		{Name: "/etc/default/grub.d/init-select.cfg", Data: []byte(initSelectCfg)},
	}
	// No upstart: the shell skips the branch, and so does the evaluator.
	got := EvalGrubDefaults(files, sourceFileTester{FS(fstest.MapFS{"sbin/init": {Data: []byte("x")}})})
	if got.LinuxDefault.String() != "quiet splash" || got.LinuxDefault.Unknown != nil || len(got.Errors) != 0 {
		t.Errorf("without upstart: %q unknown=%v errors=%v", got.LinuxDefault.String(), got.LinuxDefault.Unknown, got.Errors)
	}
	// Upstart installed: the readlink test cannot be decided. The error names
	// the line and the value before the if is kept.
	got = EvalGrubDefaults(files, sourceFileTester{FS(fstest.MapFS{"sbin/upstart": {Mode: 0o755}})})
	if got.LinuxDefault.String() != "quiet splash" || got.LinuxDefault.Unknown == nil {
		t.Errorf("with upstart: %q unknown=%v", got.LinuxDefault.String(), got.LinuxDefault.Unknown)
	}
	if len(got.Errors) != 1 || !strings.Contains(got.Errors[0].Error(), "line 3: GRUB_CMDLINE_LINUX_DEFAULT cannot be evaluated: set only conditionally, inside if at line 2") {
		t.Errorf("errors = %v", got.Errors)
	}
}
