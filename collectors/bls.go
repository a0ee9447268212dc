package collectors

import (
	"bytes"
	"fmt"
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
// kernel images (efi/uki entries) carry no options line here.

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
	for i, raw := range splitLines(data) {
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

// ParseSdBootEntry reads an entry as systemd-boot does: blank and "#" lines
// skipped, blanks trimmed at both ends, the key ends at the first space or
// tab, a line with no value is skipped, and a value wholly in double quotes
// loses them.
func ParseSdBootEntry(data []byte) ([]BLSLine, error) {
	data, err := cutNUL(data)
	var lines []BLSLine
	for i, raw := range splitLines(data) {
		text := strings.Trim(strings.TrimSuffix(raw, "\r"), " \t")
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		sep := strings.IndexAny(text, " \t")
		if sep < 0 {
			continue
		}
		value := strings.TrimLeft(text[sep+1:], " \t")
		if len(value) >= 2 && value[0] == '"' && value[len(value)-1] == '"' {
			value = value[1 : len(value)-1]
		}
		lines = append(lines, BLSLine{Key: text[:sep], Value: value, Line: i + 1})
	}
	return lines, err
}

func cutNUL(data []byte) ([]byte, error) {
	if i := bytes.IndexByte(data, 0); i >= 0 {
		line := 1 + bytes.Count(data[:i], []byte("\n"))
		return data[:i], fmt.Errorf("%w: line %d: NUL byte; the boot loader reads no further", ErrParse, line)
	}
	return data, nil
}

func splitLines(data []byte) []string {
	text := strings.TrimSuffix(string(data), "\n")
	if text == "" {
		return nil
	}
	return strings.Split(text, "\n")
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
