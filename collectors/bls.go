package collectors

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Boot Loader Specification type #1 entries (/boot/loader/entries/*.conf)
// are read differently by the two boot loaders that use them, and this file
// follows each: GRUB's blscfg module as RHEL, Rocky, Alma, Fedora and Amazon
// Linux ship it (rhboot/grub2, grub-core/commands/blscfg.c), and
// systemd-boot (src/boot/boot.c, line_get_key_value). Sort orders and the
// default choice are in bootentries.go.
//
// Not modelled: GRUB runs the expanded options through its script lexer at
// boot (quotes and backslashes removed, a "$" left in a variable's value
// expanded again), and menu entries other than the BLS ones (41_custom,
// os-prober) are not read, so a GRUB_DEFAULT or saved_entry naming one is
// taken as naming none. Boot counting suffixes (+3-1.conf) and unified
// kernel images (efi/uki entries) carry no options line here. systemd-boot
// also drops an entry whose "linux" file it cannot open on the partition;
// that is not checked here.

// BLSLine is one key and its value in a boot entry.
type BLSLine struct {
	Key, Value string
	Line       int
}

// ParseGrubBLSEntry reads an entry as GRUB's blscfg does: leading blanks
// dropped, "#" lines skipped, the key ends at the first space (or, in a line
// without one, the first tab), and the value starts after the blanks that
// follow. Trailing blanks stay in the value. A line with no value, a blank
// line among them, ends GRUB's reading of the file: stop is that line, and
// the lines after it do not exist for GRUB (0 when it reads to the end).
// A NUL byte ends the file for GRUB's C strings and is an error.
func ParseGrubBLSEntry(data []byte) (lines []BLSLine, stop int, err error) {
	data, err = cutNUL(data)
	for i, raw := range confFileLines(data) {
		n := i + 1
		text := strings.TrimLeft(strings.TrimSuffix(raw, "\r"), " \t")
		if strings.HasPrefix(text, "#") {
			continue
		}
		sep := strings.IndexByte(text, ' ')
		if sep < 0 {
			sep = strings.IndexByte(text, '\t')
		}
		if sep < 0 || sep == len(text)-1 {
			return lines, n, err
		}
		lines = append(lines, BLSLine{Key: text[:sep], Value: strings.TrimLeft(text[sep+1:], " \t"), Line: n})
	}
	return lines, 0, err
}

// ParseSdBootEntry reads an entry or loader.conf as systemd-boot does
// (v252 src/boot/efi/boot.c line_get_key_value): a line ends at "\n" or
// "\r"; blank and "#" lines are skipped, blanks trimmed at both ends, the
// key ends at the first space or tab, and a value wholly in double quotes
// loses them. A line with a key and no value is skipped by the loader:
// each such line is in skipped, an ErrParse naming it.
func ParseSdBootEntry(data []byte) (lines []BLSLine, skipped []error, err error) {
	data, err = cutNUL(data)
	for i, raw := range confFileLines(data) {
		for _, part := range strings.Split(raw, "\r") {
			text := strings.Trim(part, " \t")
			if text == "" || strings.HasPrefix(text, "#") {
				continue
			}
			sep := strings.IndexAny(text, " \t")
			if sep < 0 {
				skipped = append(skipped, fmt.Errorf("%w: line %d: %q has no value; systemd-boot skips the line", ErrParse, i+1, text))
				continue
			}
			value := strings.TrimLeft(text[sep+1:], " \t")
			// boot.c tests the first and the line's last byte: a lone
			// quote is both and leaves nothing.
			if value[0] == '"' && value[len(value)-1] == '"' {
				value = value[1:max(1, len(value)-1)]
			}
			lines = append(lines, BLSLine{Key: text[:sep], Value: value, Line: i + 1})
		}
	}
	return lines, skipped, err
}

// sdBootEntryKeys are the keys systemd-boot v252 reads in a type #1 entry
// (config_entry_add_type1); sdBootConfKeys those of loader.conf
// (config_defaults_load_from_file). Other keys are ignored by design: the
// Boot Loader Specification lets loaders skip keys they do not know, and
// GRUB's blscfg keys (id, grub_*) are among them.
var (
	sdBootEntryKeys = []string{"title", "sort-key", "version", "machine-id", "linux", "efi", "architecture", "devicetree", "initrd", "options"}
	sdBootConfKeys  = []string{"timeout", "default", "editor", "auto-entries", "auto-firmware", "beep", "reboot-for-bitlocker", "secure-boot-enroll", "console-mode", "random-seed-mode"}
)

// sdBootKeyCase reports lines whose key is one of known in another case:
// systemd-boot compares keys with streq8, so "Options" is ignored.
func sdBootKeyCase(lines []BLSLine, known []string) []error {
	var errs []error
	for _, l := range lines {
		if slices.Contains(known, l.Key) {
			continue
		}
		if i := slices.IndexFunc(known, func(k string) bool { return strings.EqualFold(k, l.Key) }); i >= 0 {
			errs = append(errs, fmt.Errorf("%w: line %d: key %q is ignored; systemd-boot's keys are case-sensitive: %s", ErrParse, l.Line, l.Key, known[i]))
		}
	}
	return errs
}

// parseLoaderConf reads loader.conf as systemd-boot v252 does
// (config_defaults_load_from_file): the last valid "default" line wins; a
// "default" naming a special identifier other than "@saved" and a value
// the loader cannot parse for timeout, the boolean keys, secure-boot-enroll,
// console-mode or random-seed-mode are logged by the loader and skipped,
// leaving the earlier value. def is the default line that applies (nil when
// none does); each skipped line is in skipped.
func parseLoaderConf(data []byte) (def *BLSLine, skipped []error, err error) {
	lines, skipped, err := ParseSdBootEntry(data)
	skipped = append(skipped, sdBootKeyCase(lines, sdBootConfKeys)...)
	bad := func(l BLSLine, why string) {
		skipped = append(skipped, fmt.Errorf("%w: line %d: %s %q: %s; systemd-boot skips the line", ErrParse, l.Line, l.Key, l.Value, why))
	}
	for _, l := range lines {
		v := l.Value
		switch l.Key {
		case "default":
			if strings.HasPrefix(v, "@") && !strings.EqualFold(v, "@saved") {
				bad(l, "unsupported special entry identifier (only @saved)")
				continue
			}
			def = &l
		case "timeout":
			if v != "menu-force" && v != "menu-hidden" && !sdBootNumber(v, math.MaxUint32) {
				bad(l, "not a number of seconds (0-4294967295), menu-force or menu-hidden")
			}
		case "editor", "auto-entries", "auto-firmware", "beep", "reboot-for-bitlocker":
			if !sdBootBool(v) {
				bad(l, "not a boolean (1, yes, y, true, t, on, 0, no, n, false, f, off)")
			}
		case "secure-boot-enroll":
			if v != "manual" && v != "force" && v != "off" {
				bad(l, "not manual, force or off")
			}
		case "console-mode":
			if v != "auto" && v != "max" && v != "keep" && !sdBootNumber(v, math.MaxInt64) {
				bad(l, "not a mode number, auto, max or keep")
			}
		case "random-seed-mode":
			if v != "off" && v != "with-system-token" && v != "always" && !sdBootBool(v) {
				bad(l, "not off, with-system-token, always or a boolean")
			}
		}
	}
	sortByLine(skipped)
	return def, skipped, err
}

// sdBootBool is util.c parse_boolean: exact, lower-case words.
func sdBootBool(v string) bool {
	switch v {
	case "1", "yes", "y", "true", "t", "on", "0", "no", "n", "false", "f", "off":
		return true
	}
	return false
}

// sdBootNumber is parse_number8 with no tail allowed: decimal digits only,
// at most limit.
func sdBootNumber(v string, limit uint64) bool {
	if v == "" || strings.TrimLeft(v, "0123456789") != "" {
		return false
	}
	n, err := strconv.ParseUint(v, 10, 64)
	return err == nil && n <= limit
}

// sortByLine orders errors that name a line ("line N:") by it.
func sortByLine(errs []error) {
	slices.SortStableFunc(errs, func(a, b error) int { return cmpInt(errLine(a), errLine(b)) })
}

// errLine is the line number an ErrParse from this file names.
func errLine(err error) int {
	_, rest, _ := strings.Cut(err.Error(), ": line ")
	n, _ := strconv.Atoi(rest[:len(rest)-len(strings.TrimLeft(rest, "0123456789"))])
	return n
}

func cutNUL(data []byte) ([]byte, error) {
	if i := bytes.IndexByte(data, 0); i >= 0 {
		line := 1 + bytes.Count(data[:i], []byte("\n"))
		return data[:i], fmt.Errorf("%w: line %d: NUL byte; the boot loader reads no further", ErrParse, line)
	}
	return data, nil
}

// firstBLS returns the first line with key (GRUB's bls_get_val).
func firstBLS(lines []BLSLine, key string) (BLSLine, bool) {
	for _, l := range lines {
		if l.Key == key {
			return l, true
		}
	}
	return BLSLine{}, false
}

// lastBLS returns the last line with key (systemd-boot overwrites).
func lastBLS(lines []BLSLine, key string) (BLSLine, bool) {
	for i := len(lines) - 1; i >= 0; i-- {
		if lines[i].Key == key {
			return lines[i], true
		}
	}
	return BLSLine{}, false
}

// ExpandedPiece is a run of an expanded options value written in one place:
// the entry itself (Var "") or a GRUB environment variable.
type ExpandedPiece struct {
	Text string
	Var  string
}

// ExpandGrubOptions expands $NAME in an entry's options as blscfg's
// expand_val does before it writes the linux command: a name is letters,
// digits and "_"; a set variable becomes its value followed by one space
// (and a space right after the name is then dropped); an unset one becomes
// nothing and is listed in unset. ${NAME} is not a variable to it. Its
// quirks are kept, since they decide the command line: a one-character run
// of text right before "$" or at the very end is dropped, and so is a
// one-character name. ok is false when nothing at all was produced, where
// GRUB falls back to $default_kernelopts.
func ExpandGrubOptions(value string, lookup func(name string) (string, bool)) (pieces []ExpandedPiece, unset []string, ok bool) {
	isVar := false
	start, end := 0, 0
	field := func(from, to int) { // value[from..to], both included
		text := value[from : to+1]
		if !isVar {
			ok = true
			if text != "" {
				pieces = append(pieces, ExpandedPiece{Text: text})
			}
			return
		}
		v, set := lookup(text)
		if !set {
			if text != "" {
				unset = append(unset, text)
			}
			return
		}
		ok = true
		pieces = append(pieces, ExpandedPiece{Text: v, Var: text}, ExpandedPiece{Text: " ", Var: text})
	}
	for i := 0; i < len(value); i++ {
		c := value[i]
		switch {
		case c == '$':
			if start != end {
				field(start, end)
			}
			isVar = true
			start = i + 1
		case isVar && !(isASCIIAlnum(c) || c == '_'):
			field(start, end)
			isVar = false
			start = i
			if value[start] == ' ' {
				start++
			}
		}
		end = i
	}
	if start != end {
		field(start, end)
	}
	return pieces, unset, ok
}

func isASCIIAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// GrubenvVar is one variable of a GRUB environment block.
type GrubenvVar struct {
	Name, Value string
	Line        int
}

// grubenvSignature starts every GRUB environment block (grub-editenv).
const grubenvSignature = "# GRUB Environment Block\n"

// ParseGrubenv reads a GRUB environment block (/boot/grub2/grubenv) as
// GRUB's envblk does: it must start with the signature; "#" lines (the
// padding among them) are skipped; each other line is NAME=VALUE with
// backslash escaping the next character. A block without the signature is
// ignored by GRUB, and a line without "=" (which grub-editenv never writes)
// ends the reading here: both are errors, with the variables read before.
func ParseGrubenv(data []byte) ([]GrubenvVar, error) {
	if !bytes.HasPrefix(data, []byte(grubenvSignature)) {
		return nil, fmt.Errorf("%w: line 1: not a GRUB environment block (no %q signature); GRUB ignores it", ErrParse, strings.TrimSuffix(grubenvSignature, "\n"))
	}
	var vars []GrubenvVar
	line := 2
	p := data[len(grubenvSignature):]
	for len(p) > 0 {
		if p[0] == '#' {
			i := bytes.IndexByte(p, '\n')
			if i < 0 {
				break
			}
			p = p[i+1:]
			line++
			continue
		}
		eq := bytes.IndexByte(p, '=')
		nl := bytes.IndexByte(p, '\n')
		if eq < 0 || (nl >= 0 && nl < eq) {
			return vars, fmt.Errorf("%w: line %d: no \"=\": the block is malformed and GRUB misreads it from here; the rest is not read", ErrParse, line)
		}
		name := string(p[:eq])
		var value strings.Builder
		i := eq + 1
		start := line
		for ; i < len(p) && p[i] != '\n'; i++ {
			if p[i] == '\\' && i+1 < len(p) {
				i++
				if p[i] == '\n' {
					line++
				}
			}
			value.WriteByte(p[i])
		}
		if name == "" || bytes.IndexByte([]byte(name), 0) >= 0 {
			return vars, fmt.Errorf("%w: line %d: empty or binary variable name; GRUB reads no further", ErrParse, start)
		}
		vars = append(vars, GrubenvVar{Name: name, Value: value.String(), Line: start})
		if i >= len(p) {
			break
		}
		p = p[i+1:]
		line++
	}
	return vars, nil
}
