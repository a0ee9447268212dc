package snapshot

import (
	"strconv"
	"strings"
)

// Provenance is where a fact's value came from: a file (and line) on the
// host, a file of a config-repo layer, a default and why, or a command. Its
// JSON form is text (see MarshalText), so rules and reports read one string
// per fact.
type Provenance struct {
	// File is the path on the host ("/etc/default/grub"), a directory for
	// facts read from a listing, or the name of a file outside the host that
	// describes it (a pod manifest).
	File string
	// Line is the 1-based line in File; 0 when the whole file is meant.
	Line int
	// Layer is the config-repo layer that put File on the host, "" for a
	// host's own file. Its text is the file's path in the repo.
	Layer string
	// Default says why the fact took its default (nothing set it).
	Default string
	// Command is the command line whose output gave the value.
	Command string
	// More are further places of a fact read from several (the NCCL
	// libraries found on one host).
	More []Provenance
	// Baseline is the repo path of the baseline snapshot a config repo's
	// fleet took the fact from (a fact the repo cannot know); the rest is
	// where that snapshot's host had it. Its text follows the rest:
	// " (baseline baselines/gpu.json)".
	Baseline string
}

const (
	defaultPrefix = "default: "
	commandPrefix = "command: "
	// layerDir is where a config repo keeps its layers.
	layerDir = "layers/"
	listSep  = ", "
	// baselineOpen and baselineClose enclose Baseline in the text.
	baselineOpen  = " (baseline "
	baselineClose = ")"
)

// FileAt is the provenance of line (0: the whole file) of a host file.
func FileAt(file string, line int) Provenance { return Provenance{File: file, Line: line} }

// Defaulted is the provenance of a fact no file set.
func Defaulted(why string) Provenance { return Provenance{Default: why} }

// FromCommand is the provenance of a fact a command's output gave.
func FromCommand(cmdline string) Provenance { return Provenance{Command: cmdline} }

// IsZero tells whether p says nothing.
func (p Provenance) IsZero() bool {
	return p.File == "" && p.Line == 0 && p.Layer == "" && p.Default == "" && p.Command == "" && len(p.More) == 0 && p.Baseline == ""
}

// Path is where p points without its line: the file, or its repo path for a
// config-repo layer. It is how collection errors name a file.
func (p Provenance) Path() string {
	if p.Layer != "" {
		return layerDir + p.Layer + "/" + strings.TrimPrefix(p.File, "/")
	}
	return p.File
}

// String is the text form: "/etc/x.conf:3", "/proc/cmdline",
// "default: why", "command: nvidia-smi ...", a config repo's
// "layers/base/etc/x.conf:3", several joined by ", ".
func (p Provenance) String() string {
	var b strings.Builder
	p.write(&b)
	for _, m := range p.More {
		b.WriteString(listSep)
		m.write(&b)
	}
	if p.Baseline != "" {
		b.WriteString(baselineOpen + p.Baseline + baselineClose)
	}
	return b.String()
}

func (p Provenance) write(b *strings.Builder) {
	switch {
	case p.Default != "":
		b.WriteString(defaultPrefix + p.Default)
	case p.Command != "":
		b.WriteString(commandPrefix + p.Command)
	default:
		b.WriteString(p.Path())
		if p.Line > 0 {
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(p.Line))
		}
	}
}

// MarshalText writes String.
func (p Provenance) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText reads any text: what String writes comes back the same, and
// text it never writes (a snapshot from elsewhere) is kept as a file name,
// so writing it again gives the same bytes.
func (p *Provenance) UnmarshalText(text []byte) error {
	*p = ParseProvenance(string(text))
	return nil
}

// ParseProvenance reads the text form of a provenance.
func ParseProvenance(s string) Provenance {
	if rest, ok := strings.CutSuffix(s, baselineClose); ok {
		if i := strings.LastIndex(rest, baselineOpen); i >= 0 && i+len(baselineOpen) < len(rest) {
			p := ParseProvenance(rest[:i])
			if p.Baseline == "" {
				p.Baseline = rest[i+len(baselineOpen):]
				return p
			}
		}
	}
	// A default's or command's text may hold ", " itself.
	if strings.HasPrefix(s, defaultPrefix) || strings.HasPrefix(s, commandPrefix) {
		return parseOne(s)
	}
	parts := strings.Split(s, listSep)
	p := parseOne(parts[0])
	for _, part := range parts[1:] {
		p.More = append(p.More, parseOne(part))
	}
	return p
}

func parseOne(s string) Provenance {
	// An empty reason or command line cannot be written back: a file name.
	if why, ok := strings.CutPrefix(s, defaultPrefix); ok && why != "" {
		return Provenance{Default: why}
	}
	if cmd, ok := strings.CutPrefix(s, commandPrefix); ok && cmd != "" {
		return Provenance{Command: cmd}
	}
	var p Provenance
	p.File = s
	if i := strings.LastIndexByte(s, ':'); i > 0 {
		if n, ok := lineNumber(s[i+1:]); ok {
			p.File, p.Line = s[:i], n
		}
	}
	if rest, ok := strings.CutPrefix(p.File, layerDir); ok {
		if layer, file, ok := strings.Cut(rest, "/"); ok && layer != "" && file != "" && !strings.HasPrefix(file, "/") {
			p.Layer, p.File = layer, "/"+file
		}
	}
	return p
}

// lineNumber reads a line number exactly as String writes one (no sign, no
// leading zero), so that text round-trips.
func lineNumber(s string) (int, bool) {
	if s == "" || s[0] == '0' || len(s) > 9 {
		return 0, false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}
