package collectors

import (
	"encoding/binary"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

// Boot entries: on RHEL-family systems and Amazon Linux 2023 GRUB reads Boot
// Loader Specification entries (GRUB_ENABLE_BLSCFG=true, "blscfg" in
// grub.cfg), and grubby edits them; systemd-boot reads them on its own. The
// next boot's command line is then the default entry's options, not
// GRUB_CMDLINE_LINUX.

const (
	blsEntriesDir = "/boot/loader/entries"
	grubenvFile   = "/boot/grub2/grubenv"
	// debianGrubenvFile is grubenv where Debian and Ubuntu keep GRUB
	// (/boot/grub); only its presence is read, as evidence of GRUB.
	debianGrubenvFile = "/boot/grub/grubenv"
	efiDir            = "/boot/efi/EFI"
	// efivarsDir holds EFI variables as files: 4 bytes of attributes, then
	// the value (systemd-boot's are NUL-terminated UTF-16LE strings).
	efivarsDir = "/sys/firmware/efi/efivars"
	// loaderVendor is the vendor GUID of systemd-boot's variables.
	loaderVendor = "4a67b082-0a4c-41cf-b6c7-440b29bb8c4f"
)

// grubCfgFiles are where grub.cfg lives on BIOS installs and where
// grub2-mkconfig writes it for EFI on RHEL 9 and later; RHEL 8 EFI keeps it
// in the ESP (found by listing /boot/efi/EFI).
var grubCfgFiles = []string{"/boot/grub2/grub.cfg", "/boot/grub/grub.cfg"}

// sdBootRoots are where the ESP or XBOOTLDR partition is mounted; each holds
// loader/loader.conf and loader/entries (bootctl's search order).
var sdBootRoots = []string{"/efi", "/boot", "/boot/efi"}

// bootEntries is what the boot loader's entries make of the next boot.
type bootEntries struct {
	loader  string
	entries []snapshot.BootEntry
	// def is the index of the default entry, -1 when it cannot be known.
	def       int
	defaultBy string
	env       map[string]string
	// sources are provenance per fact path, entry facts relative to
	// "boot.configured.".
	sources map[string]snapshot.Provenance
}

// entryFile is one entry file read from the root.
type entryFile struct {
	path string
	data []byte
}

// readEntryFiles reads dir/*.conf (no dot files), sorted by name.
func (c *collection) readEntryFiles(dir string) []entryFile {
	var files []entryFile
	for _, e := range c.readDir(bootCollector, dir) {
		name := e.Name()
		if strings.HasPrefix(name, ".") || !strings.HasSuffix(strings.ToLower(name), ".conf") || e.IsDir() {
			continue
		}
		if data, ok := c.read(bootCollector, dir+"/"+name); ok {
			files = append(files, entryFile{path: dir + "/" + name, data: data})
		}
	}
	return files
}

// grubCfgs reads the grub.cfg files once, and only when needed: on RHEL
// they are mode 0600, and an unprivileged collection should record that only
// where it matters.
type grubCfgs struct {
	c     *collection
	files []entryFile
	done  bool
}

func (g *grubCfgs) all() []entryFile {
	if !g.done {
		g.done = true
		paths := slices.Clone(grubCfgFiles)
		for _, e := range g.c.readDir(bootCollector, efiDir) {
			if e.IsDir() && !strings.EqualFold(e.Name(), "boot") {
				paths = append(paths, efiDir+"/"+e.Name()+"/grub.cfg")
			}
		}
		for _, p := range paths {
			if data, ok := g.c.read(bootCollector, p); ok {
				g.files = append(g.files, entryFile{path: p, data: data})
			}
		}
	}
	return g.files
}

// grubUsesBLS tells whether GRUB reads BLS entries: GRUB_ENABLE_BLSCFG=true
// in the defaults, or a "blscfg" command in grub.cfg (grub.cfg decides what
// GRUB does; the defaults decide what grub2-mkconfig writes next).
func grubUsesBLS(eval *GrubEvaluation, cfgs *grubCfgs) bool {
	if eval != nil && eval.EnableBLSCfg.Unknown == nil && eval.EnableBLSCfg.String() == "true" {
		return true
	}
	for _, cfg := range cfgs.all() {
		for _, line := range strings.Split(string(cfg.data), "\n") {
			if f := strings.Fields(line); len(f) > 0 && f[0] == "blscfg" {
				return true
			}
		}
	}
	return false
}

// collectGrubBLS reads GRUB's entries and environment and picks the default
// entry as GRUB will. It returns nil when GRUB does not use entries here or
// there are none (a rendered config repo has no /boot: the GRUB defaults are
// then what the next kernel install writes).
func (c *collection) collectGrubBLS(eval *GrubEvaluation) *bootEntries {
	files := c.readEntryFiles(blsEntriesDir)
	if len(files) == 0 {
		return nil
	}
	cfgs := &grubCfgs{c: c}
	if !grubUsesBLS(eval, cfgs) {
		return nil
	}
	be := &bootEntries{loader: "grub-bls", def: -1, env: map[string]string{}, sources: map[string]snapshot.Provenance{}}
	env, envAt, envKnown := c.grubEnv()

	type parsed struct {
		id    string
		file  string
		lines []BLSLine
	}
	var list []parsed
	for _, f := range files {
		lines, stop, err := ParseGrubBLSEntry(f.data)
		if err != nil {
			c.fail(bootCollector, f.path, err)
		}
		if stop > 0 {
			if rest, _, _ := ParseGrubBLSEntry(dropLines(f.data, stop)); len(rest) > 0 {
				c.fail(bootCollector, f.path, fmt.Errorf("%w: line %d: a line without a value ends GRUB's reading of the entry; the %d lines with keys after it are ignored", ErrParse, stop, len(rest)))
			}
		}
		_, hasLinux := firstBLS(lines, "linux")
		_, hasEFI := firstBLS(lines, "efi")
		if !hasLinux {
			// blscfg skips it (an "efi" entry is a UKI, which carries its own
			// command line), and so does the menu.
			why := "no linux key: GRUB skips the entry"
			if hasEFI {
				why = "an efi (unified kernel image) entry: its command line is inside the image and not read here"
			}
			c.fail(bootCollector, f.path, fmt.Errorf("%w: %s", ErrParse, why))
			continue
		}
		if hasEFI {
			c.fail(bootCollector, f.path, fmt.Errorf("%w: both linux and efi keys: GRUB skips the entry", ErrParse))
			continue
		}
		id := strings.TrimSuffix(path.Base(f.path), ".conf")
		list = append(list, parsed{id: id, file: f.path, lines: lines})
	}
	// bls_add_entry: newest first; an id equal to one already listed is
	// not added.
	var sorted []parsed
	for _, p := range list {
		i, dup := 0, false
		for ; i < len(sorted); i++ {
			r := grubBLSCmp(p.id, sorted[i].id)
			if r == 0 {
				dup = true
				break
			}
			if r > 0 {
				break
			}
		}
		if dup {
			c.fail(bootCollector, p.file, fmt.Errorf("%w: sorts equal to the entry %s; GRUB leaves this one out", ErrParse, sorted[i].file))
			continue
		}
		sorted = slices.Insert(sorted, i, p)
	}

	// usedUnknown is set when a variable is looked up in an environment
	// block that could not be read: what it expands to is unknown.
	usedUnknown, triedCfg := false, false
	lookup := func(name string) (string, bool) {
		v, ok := env[name]
		if !ok && name == "kernelopts" && !triedCfg {
			triedCfg = true
			if v, at, found := kerneloptsFallback(c, cfgs); found {
				env[name], envAt[name] = v, at
				ok = true
			}
		}
		if !ok && !envKnown {
			usedUnknown = true
		}
		if ok {
			be.env[name] = v
			be.sources["grubenv."+name] = envAt[name]
		}
		return env[name], ok
	}
	for i, p := range sorted {
		e := snapshot.BootEntry{ID: p.id, File: c.at(p.file, 0).Path(), Vars: map[string]string{}}
		if l, ok := firstBLS(p.lines, "title"); ok {
			e.Title = l.Value
		}
		if l, ok := firstBLS(p.lines, "version"); ok {
			e.Version = l.Value
		}
		if l, ok := firstBLS(p.lines, "linux"); ok {
			e.Linux = l.Value
		}
		opt, hasOpt := firstBLS(p.lines, "options")
		var pieces []ExpandedPiece
		produced := false
		origin := snapshot.Provenance{}
		if hasOpt {
			e.Options = opt.Value
			pieces, e.Unset, produced = ExpandGrubOptions(opt.Value, lookup)
			origin = c.at(p.file, opt.Line)
		}
		if !produced {
			// blscfg: no options (or nothing expanded) takes $default_kernelopts.
			if v, ok := lookup("default_kernelopts"); ok {
				var more []string
				pieces, more, _ = ExpandGrubOptions(v, lookup)
				for j := range pieces {
					if pieces[j].Var == "" {
						pieces[j].Var = "default_kernelopts"
					}
				}
				e.Unset = append(e.Unset, more...)
			}
		}
		prefix := "entries." + strconv.Itoa(i) + "."
		if usedUnknown {
			// Its options name variables of an unreadable grubenv.
			usedUnknown = false
			e.Unset = nil
		} else {
			e.Cmdline = c.entryCmdline(p.file, pieces, origin, envAt, e.Vars, prefix, be.sources)
		}
		be.entries = append(be.entries, e)
	}
	if len(be.entries) == 0 {
		return be
	}
	if !envKnown {
		// next_entry and saved_entry live there: which entry boots is
		// unknown (the read error is in the snapshot).
		be.defaultBy = "unknown"
		return be
	}

	// The default: grub.cfg sets default to $next_entry when grubenv has
	// one (00_header), else to GRUB_DEFAULT, where "saved" means
	// $saved_entry.
	var name, by string
	var at snapshot.Provenance
	switch {
	case env["next_entry"] != "":
		name, by, at = env["next_entry"], "next_entry", envAt["next_entry"]
		lookup("next_entry")
	case eval != nil && eval.Default.Unknown != nil:
		file := eval.Default.Unknown.At.File
		if file == "" {
			file = grubDefaultFile
		}
		c.fail(bootCollector, file, fmt.Errorf("%w: GRUB_DEFAULT cannot be evaluated (%s): the default boot entry is unknown", ErrParse, eval.Default.Unknown.Why))
		be.defaultBy = "unknown"
		return be
	case eval != nil && eval.Default.Set && eval.Default.String() == "saved":
		name, by, at = env["saved_entry"], "saved_entry", envAt["saved_entry"]
		if _, ok := lookup("saved_entry"); !ok {
			at = snapshot.Defaulted("GRUB_DEFAULT=saved and no saved_entry in " + grubenvFile)
		}
	case eval != nil && eval.Default.Set:
		name, by = eval.Default.String(), "GRUB_DEFAULT"
		at = c.at(eval.Default.AssignedAt.File, eval.Default.AssignedAt.Line)
	default:
		name, by, at = "0", "GRUB_DEFAULT", snapshot.Defaulted("GRUB_DEFAULT unset: grub-mkconfig uses 0")
	}
	be.def = grubMenuIndex(be.entries, name)
	be.defaultBy = by
	if be.def < 0 {
		be.def, be.defaultBy = 0, "first"
		why := fmt.Sprintf("%s %q names no entry", by, name)
		if name == "" {
			why = "GRUB_DEFAULT=saved and no saved_entry in " + grubenvFile
		}
		at = snapshot.Defaulted(why + ": GRUB boots its first (newest) entry")
	}
	be.sources["default_entry"] = at
	return be
}

// dropLines returns data after its first n lines.
func dropLines(data []byte, n int) []byte {
	for ; n > 0; n-- {
		i := slices.Index(data, '\n')
		if i < 0 {
			return nil
		}
		data = data[i+1:]
	}
	return data
}

// grubMenuIndex finds a menu entry as GRUB's get_entry_number does (rhboot):
// by id, then by title, then as a number; -1 when nothing matches.
func grubMenuIndex(entries []snapshot.BootEntry, name string) int {
	for i, e := range entries {
		if e.ID == name {
			return i
		}
	}
	for i, e := range entries {
		if e.Title == name || e.Title == "" && e.Linux == name {
			return i
		}
	}
	if n, ok := grubNumber(name); ok && n < len(entries) {
		return n
	}
	return -1
}

// grubNumber reads a whole value as grub_strtoul(val, 0) does: decimal,
// octal after 0, hex after 0x.
func grubNumber(s string) (int, bool) {
	if s == "" {
		return 0, false
	}
	base, digits := 10, s
	switch {
	case len(s) > 2 && (s[:2] == "0x" || s[:2] == "0X"):
		base, digits = 16, s[2:]
	case len(s) > 1 && s[0] == '0':
		base, digits = 8, s[1:]
	}
	n, err := strconv.ParseUint(digits, base, 31)
	if err != nil {
		return 0, false
	}
	return int(n), true
}

// grubEnv reads the GRUB environment block, and where each variable is set.
// known is false when the block exists but could not be read: GRUB sees
// variables there that the snapshot cannot. A missing block, or one GRUB
// ignores (no signature), is known to be empty.
func (c *collection) grubEnv() (env map[string]string, at map[string]snapshot.Provenance, known bool) {
	env, at = map[string]string{}, map[string]snapshot.Provenance{}
	errs := len(c.snap.Errors)
	data, ok := c.read(bootCollector, grubenvFile)
	if !ok {
		return env, at, len(c.snap.Errors) == errs
	}
	vars, err := ParseGrubenv(data)
	if err != nil {
		c.fail(bootCollector, grubenvFile, err)
	}
	for _, v := range vars {
		env[v.Name] = v.Value
		at[v.Name] = c.at(grubenvFile, v.Line)
	}
	return env, at, true
}

// kerneloptsFallback is the kernelopts RHEL 8's grub.cfg sets when grubenv
// has none (10_linux: if [ -z "${kernelopts}" ]; then set kernelopts="...";
// fi).
func kerneloptsFallback(c *collection, cfgs *grubCfgs) (string, snapshot.Provenance, bool) {
	for _, cfg := range cfgs.all() {
		for i, line := range strings.Split(string(cfg.data), "\n") {
			rest, found := strings.CutPrefix(strings.TrimSpace(line), "set kernelopts=")
			if !found {
				continue
			}
			// grub-mkconfig writes it in double quotes, without escapes.
			if len(rest) >= 2 && rest[0] == '"' && rest[len(rest)-1] == '"' {
				rest = rest[1 : len(rest)-1]
			}
			return rest, c.at(cfg.path, i+1), true
		}
	}
	return "", snapshot.Provenance{}, false
}

// entryCmdline parses expanded options into a command line and records the
// provenance of each param: the entry's options line for text written
// there, the grubenv line of the variable it came from otherwise.
func (c *collection) entryCmdline(file string, pieces []ExpandedPiece, origin snapshot.Provenance, envAt map[string]snapshot.Provenance, vars map[string]string, prefix string, sources map[string]snapshot.Provenance) snapshot.Cmdline {
	var text strings.Builder
	var from []string // variable of each byte, "" for the entry's own text
	for _, p := range pieces {
		text.WriteString(p.Text)
		for range len(p.Text) {
			from = append(from, p.Var)
		}
	}
	parsed, err := ParseKernelCmdline(text.String())
	if err != nil {
		c.fail(bootCollector, file, err)
	}
	cl := snapshot.Cmdline{Present: true, Cmdline: text.String(), Params: parsed.Params(), InitArgs: parsed.InitArgs}
	if !origin.IsZero() {
		sources[prefix+"cmdline"] = origin
	}
	for name := range cl.Params {
		arg, _ := parsed.Last(name)
		v := ""
		if arg.Offset < len(from) {
			v = from[arg.Offset]
		}
		switch {
		case v == "":
			sources[prefix+"params."+name] = origin
		default:
			vars[name] = v
			if at, ok := envAt[v]; ok {
				sources[prefix+"params."+name] = at
			}
		}
	}
	return cl
}

// sdBootVars are systemd-boot's EFI variables that choose the default.
var sdBootVars = []string{"LoaderEntryOneShot", "LoaderEntryDefault", "LoaderEntryLastBooted"}

// collectSdBoot reads systemd-boot's entries, once it is known to be
// installed; conf is its loader.conf ("" when there is none). It returns nil
// when there are no type #1 entries with a linux key.
func (c *collection) collectSdBoot(conf string) *bootEntries {
	be := &bootEntries{loader: "systemd-boot", def: -1, sources: map[string]snapshot.Provenance{}}
	type parsed struct {
		entry snapshot.BootEntry
		sort  sdSortable
		line  int
		file  string
	}
	var list []parsed
	seen := map[string]bool{}
	for _, r := range sdBootRoots {
		for _, f := range c.readEntryFiles(r + "/loader/entries") {
			base := path.Base(f.path)
			// boot.c config_load_entries: startswith, case-sensitive.
			if strings.HasPrefix(base, "auto-") {
				continue
			}
			lines, skipped, err := ParseSdBootEntry(f.data)
			if err != nil {
				c.fail(bootCollector, f.path, err)
			}
			skipped = append(skipped, sdBootKeyCase(lines, sdBootEntryKeys)...)
			sortByLine(skipped)
			for _, err := range skipped {
				c.skipped(bootCollector, f.path, err)
			}
			id := strings.ToLower(base)
			if seen[id] {
				continue
			}
			e := snapshot.BootEntry{ID: id, File: c.at(f.path, 0).Path()}
			var s sdSortable
			s.id = id
			if l, ok := lastBLS(lines, "title"); ok {
				e.Title = l.Value
			}
			if l, ok := lastBLS(lines, "version"); ok {
				e.Version, s.version = l.Value, l.Value
			}
			if l, ok := lastBLS(lines, "sort-key"); ok {
				s.sortKey = l.Value
			}
			if l, ok := lastBLS(lines, "machine-id"); ok {
				s.machineID = l.Value
			}
			// The last of "linux" and "efi" decides the entry's type
			// (config_entry_add_type1); efi entries carry no kernel
			// command line to read here.
			l, ok := lastBLS(lines, "linux")
			if efi, isEFI := lastBLS(lines, "efi"); !ok || isEFI && efi.Line > l.Line {
				continue
			}
			if !sdBootArchMatches(lines, c.snap.Kernel.Arch) {
				continue
			}
			e.Linux = l.Value
			var opts []string
			first := 0
			for _, l := range lines {
				if l.Key == "options" {
					opts = append(opts, l.Value)
					if first == 0 {
						first = l.Line
					}
				}
			}
			e.Options = strings.Join(opts, " ")
			seen[id] = true
			list = append(list, parsed{entry: e, sort: s, line: first, file: f.path})
		}
	}
	if len(list) == 0 {
		return nil
	}
	slices.SortStableFunc(list, func(a, b parsed) int { return sdBootEntryCmp(a.sort, b.sort) })
	for i, p := range list {
		e := p.entry
		var origin snapshot.Provenance
		if p.line > 0 {
			origin = c.at(p.file, p.line)
		}
		e.Cmdline = c.entryCmdline(p.file, []ExpandedPiece{{Text: e.Options}}, origin, nil, map[string]string{}, "entries."+strconv.Itoa(i)+".", be.sources)
		be.entries = append(be.entries, e)
	}

	// config_select_default_entry: the one-shot variable, the default
	// variable, loader.conf's default pattern ("@saved": the last booted),
	// else the first entry.
	// loader.conf is read before the EFI variables (config_load_defaults),
	// and its skipped lines are reported whichever default wins.
	var confDefault *BLSLine
	if conf != "" {
		data, _ := c.read(bootCollector, conf)
		var skipped []error
		var err error
		confDefault, skipped, err = parseLoaderConf(data)
		if err != nil {
			c.fail(bootCollector, conf, err)
		}
		for _, err := range skipped {
			c.skipped(bootCollector, conf, err)
		}
	}
	vars := map[string]string{}
	for _, v := range sdBootVars {
		if s, ok := c.efiString(v); ok {
			vars[v] = strings.ToLower(s)
		}
	}
	try := func(pattern, by string, at snapshot.Provenance) bool {
		if pattern == "" {
			return false
		}
		if pattern == "@saved" {
			pattern = vars["LoaderEntryLastBooted"]
		}
		for i, e := range be.entries {
			if ok, _ := path.Match(pattern, e.ID); ok {
				be.def, be.defaultBy = i, by
				be.sources["default_entry"] = at
				return true
			}
		}
		return false
	}
	efiAt := func(v string) snapshot.Provenance { return c.at(efivarsDir+"/"+v+"-"+loaderVendor, 0) }
	if try(vars["LoaderEntryOneShot"], "LoaderEntryOneShot", efiAt("LoaderEntryOneShot")) ||
		try(vars["LoaderEntryDefault"], "LoaderEntryDefault", efiAt("LoaderEntryDefault")) {
		return be
	}
	if l := confDefault; l != nil && try(strings.ToLower(l.Value), "loader.conf default", c.at(conf, l.Line)) {
		return be
	}
	be.def, be.defaultBy = 0, "first"
	be.sources["default_entry"] = snapshot.Defaulted("no default set or matched: systemd-boot boots its first (newest) entry")
	return be
}

// efiMachineNames are systemd-boot's EFI_MACHINE_TYPE_NAME per uname
// machine (v252 meson.build efi_arch). An x86_64 kernel on 32-bit firmware
// runs an ia32 systemd-boot; that case is not told apart here.
var efiMachineNames = map[string]string{
	"x86_64": "x64", "i686": "ia32", "i586": "ia32", "i386": "ia32",
	"aarch64": "aa64", "armv7l": "arm", "riscv64": "riscv64", "loongarch64": "loongarch64",
}

// sdBootArchMatches is config_entry_add_type1's "architecture" check: a line
// naming another machine type drops the entry. An unknown host machine
// keeps it.
func sdBootArchMatches(lines []BLSLine, machine string) bool {
	name, known := efiMachineNames[machine]
	if !known {
		return true
	}
	for _, l := range lines {
		if l.Key == "architecture" && l.Value != name {
			return false
		}
	}
	return true
}

// efiString reads a systemd-boot EFI variable: 4 bytes of attributes, then a
// NUL-terminated UTF-16LE string.
func (c *collection) efiString(name string) (string, bool) {
	data, ok := c.read(bootCollector, efivarsDir+"/"+name+"-"+loaderVendor)
	if !ok || len(data) < 4 {
		return "", false
	}
	data = data[4:]
	u := make([]uint16, 0, len(data)/2)
	for i := 0; i+1 < len(data); i += 2 {
		w := binary.LittleEndian.Uint16(data[i:])
		if w == 0 {
			break
		}
		u = append(u, w)
	}
	return string(utf16.Decode(u)), len(u) > 0
}
