package collectors

import (
	"errors"
	"fmt"
	"maps"
	"strings"
)

const (
	ncclConfPath       = "/etc/nccl.conf"
	etcEnvironmentPath = "/etc/environment"
	profileDDir        = "/etc/profile.d"
)

// ncclAssignment is one variable a configuration line sets (or, with Unset,
// removes).
type ncclAssignment struct {
	Name  string
	Value string
	Line  int
	Unset bool
}

// isPosixVarName says whether s is a portable environment variable name.
func isPosixVarName(s string) bool {
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		if !(b == '_' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9') {
			return false
		}
	}
	return true
}

// isNCCLEnvName says whether a variable configures NCCL or its libfabric
// (EFA) transport.
func isNCCLEnvName(name string) bool {
	return strings.HasPrefix(name, "NCCL_") || strings.HasPrefix(name, "FI_")
}

// parseNCCLConf reads nccl.conf as NCCL's setEnvFile does: a line starting
// with '#' is a comment, the name runs to the first '=' and the value is the
// rest of the line, kept verbatim (no trimming, no quote removal). Lines NCCL
// would ignore or apply to a name no one reads are reported.
func parseNCCLConf(data []byte) ([]ncclAssignment, []error) {
	var out []ncclAssignment
	var errs []error
	for i, line := range strings.Split(string(data), "\n") {
		n := i + 1
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("%w: line %d: no '=' in %q; NCCL ignores the line", ErrParse, n, hwClip(line)))
		case !isPosixVarName(name):
			errs = append(errs, fmt.Errorf("%w: line %d: %q is not a variable name (NCCL does not trim spaces)", ErrParse, n, hwClip(name)))
		default:
			out = append(out, ncclAssignment{Name: name, Value: value, Line: n})
		}
	}
	return out, errs
}

// parseEnvironmentFile reads /etc/environment as pam_env's readenv does: a
// backslash at the end of a line continues it, '#' starts a comment anywhere,
// an optional "export " is skipped, a value that opens with a quote loses that
// quote and a quote that ends it, and a name without '=' unsets the variable.
// Lines pam_env rejects (a name that is not alphanumeric) are reported.
func parseEnvironmentFile(data []byte) ([]ncclAssignment, []error) {
	var out []ncclAssignment
	var errs []error
	lines := strings.Split(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		start := i + 1
		text := strings.TrimLeft(lines[i], " \t")
		if text == "" || text[0] == '#' {
			continue
		}
		// Join continued lines; a comment ends the logical line.
		for {
			if j := strings.IndexByte(text, '#'); j >= 0 {
				text = text[:j]
				break
			}
			trimmed := strings.TrimRight(text, " \t")
			if !strings.HasSuffix(trimmed, "\\") || i+1 >= len(lines) {
				break
			}
			i++
			text = trimmed[:len(trimmed)-1] + strings.TrimLeft(lines[i], " \t")
		}
		text = strings.TrimPrefix(text, "export ")
		if text == "" || text[0] == '=' {
			continue
		}
		name, value, hasValue := strings.Cut(text, "=")
		if !isPosixVarName(name) {
			errs = append(errs, fmt.Errorf("%w: line %d: %q is not an alphanumeric name; pam_env ignores the line", ErrParse, start, hwClip(name)))
			continue
		}
		if !hasValue {
			out = append(out, ncclAssignment{Name: name, Line: start, Unset: true})
			continue
		}
		out = append(out, ncclAssignment{Name: name, Value: pamEnvUnquote(value), Line: start})
	}
	return out, errs
}

// pamEnvUnquote drops an opening quote and a quote that is the last character,
// keeping any other quote, as pam_env does; it is not shell unquoting.
func pamEnvUnquote(v string) string {
	if v == "" || (v[0] != '"' && v[0] != '\'') {
		return v
	}
	v = v[1:]
	if n := len(v); n > 0 && (v[n-1] == '"' || v[n-1] == '\'') {
		v = v[:n-1]
	}
	return v
}

// profileWord is one word of a simple shell command line, quotes removed.
type profileWord struct {
	text string
	// eq is the offset of the first '=' in text, -1 if none.
	eq int
	// assignment is true when that '=' makes the word an assignment: it is
	// unquoted and nothing before it was quoted.
	assignment bool
}

// errProfileComplex marks a line that uses shell features beyond literal words.
var errProfileComplex = errors.New("shell line too complex")

// splitProfileWords splits a line into words with literal quoting only: bare
// characters, '...' and "..." without $, ` or \ inside. Anything else
// (expansions, operators, escapes) returns errProfileComplex; an unterminated
// quote returns another error.
func splitProfileWords(line string) ([]profileWord, error) {
	var words []profileWord
	var cur strings.Builder
	inWord, quoted := false, false
	word := profileWord{eq: -1}
	flush := func() {
		if inWord {
			word.text = cur.String()
			words = append(words, word)
		}
		cur.Reset()
		inWord, quoted = false, false
		word = profileWord{eq: -1}
	}
	for i := 0; i < len(line); i++ {
		ch := line[i]
		switch {
		case ch == ' ' || ch == '\t' || ch == '\r':
			flush()
		case ch == '#' && !inWord:
			flush()
			return words, nil
		case ch == '\'' || ch == '"':
			end := strings.IndexByte(line[i+1:], ch)
			if end < 0 {
				return nil, fmt.Errorf("unterminated %c quote", ch)
			}
			text := line[i+1 : i+1+end]
			if ch == '"' && strings.ContainsAny(text, "$`\\") {
				return nil, errProfileComplex
			}
			if j := strings.IndexByte(text, '='); j >= 0 && word.eq < 0 {
				word.eq = cur.Len() + j
			}
			cur.WriteString(text)
			inWord, quoted = true, true
			i += end + 1
		case strings.IndexByte("$`\\;&|<>(){}", ch) >= 0:
			return nil, errProfileComplex
		case ch == '=' && word.eq < 0:
			word.eq, word.assignment = cur.Len(), !quoted
			cur.WriteByte(ch)
			inWord = true
		default:
			cur.WriteByte(ch)
			inWord = true
		}
	}
	flush()
	return words, nil
}

// profileEvent is what one profile.d line does to a shell variable.
type profileEvent struct {
	Var ncclAssignment
	// Export marks the variable for the environment; an event may assign,
	// export, or both ("export NAME=value").
	Export bool
	Assign bool
}

// parseProfileScript reads the simple forms of a /etc/profile.d script that
// set variables: "export NAME=value", "NAME=value" and "export NAME", with
// literal quoting. Other lines (conditionals, expansions, commands) are
// skipped, not errors: a login shell runs them, but they are not
// configuration fleetaudit can read without running them. An unterminated
// quote is reported: the shell would fail to source the file.
func parseProfileScript(data []byte) ([]profileEvent, []error) {
	var out []profileEvent
	var errs []error
	for i, line := range strings.Split(string(data), "\n") {
		n := i + 1
		words, err := splitProfileWords(line)
		if err != nil && !errors.Is(err, errProfileComplex) {
			errs = append(errs, fmt.Errorf("%w: line %d: %v", ErrParse, n, err))
			continue
		}
		if err != nil || len(words) == 0 {
			continue
		}
		export := words[0].text == "export" && words[0].eq < 0
		if export {
			words = words[1:]
		}
		events, simple := profileLineEvents(words, export, n)
		if simple {
			out = append(out, events...)
		}
	}
	return out, errs
}

// profileLineEvents turns the words after an optional "export" into events;
// simple is false for anything else, such as "NAME=value command".
func profileLineEvents(words []profileWord, export bool, line int) (events []profileEvent, simple bool) {
	for _, w := range words {
		// export sees its arguments after quote removal, so a quoted '='
		// still assigns there; a bare word must be a real assignment.
		assign := w.eq >= 0 && (export || w.assignment)
		name, value := w.text, ""
		if assign {
			name, value = w.text[:w.eq], w.text[w.eq+1:]
		}
		if !isPosixVarName(name) || (!assign && !export) {
			return nil, false
		}
		events = append(events, profileEvent{
			Var:    ncclAssignment{Name: name, Value: value, Line: line},
			Export: export,
			Assign: assign,
		})
	}
	return events, len(events) > 0
}

// ncclSetting is a variable's value and where it was set.
type ncclSetting struct {
	value, file string
	line        int
}

func collectNCCLConfig(c *collection) {
	const collector = "nccl_config"
	file := map[string]ncclSetting{}
	if data, ok := c.read(collector, ncclConfPath); ok {
		assignments, errs := parseNCCLConf(data)
		for _, err := range errs {
			c.fail(collector, ncclConfPath, err)
		}
		for _, a := range assignments {
			// setenv(name, value, 0): the first line for a name wins.
			if _, seen := file[a.Name]; !seen {
				file[a.Name] = ncclSetting{a.Value, ncclConfPath, a.Line}
			}
		}
	}

	// The login shell's variables: pam_env puts /etc/environment in the
	// environment, then /etc/profile sources profile.d/*.sh in order.
	vars := map[string]ncclSetting{}
	exported := map[string]bool{}
	if data, ok := c.read(collector, etcEnvironmentPath); ok {
		assignments, errs := parseEnvironmentFile(data)
		for _, err := range errs {
			c.fail(collector, etcEnvironmentPath, err)
		}
		for _, a := range assignments {
			if a.Unset {
				delete(vars, a.Name)
				continue
			}
			vars[a.Name] = ncclSetting{a.Value, etcEnvironmentPath, a.Line}
			exported[a.Name] = true
		}
	}
	for _, e := range c.readDir(collector, profileDDir) {
		if !strings.HasSuffix(e.Name(), ".sh") {
			continue
		}
		name := profileDDir + "/" + e.Name()
		data, ok := c.read(collector, name)
		if !ok {
			continue
		}
		events, errs := parseProfileScript(data)
		for _, err := range errs {
			c.fail(collector, name, err)
		}
		for _, ev := range events {
			if ev.Assign {
				vars[ev.Var.Name] = ncclSetting{ev.Var.Value, name, ev.Var.Line}
			}
			if ev.Export {
				exported[ev.Var.Name] = true
			}
		}
	}
	env := map[string]ncclSetting{}
	for name, s := range vars {
		if exported[name] && isNCCLEnvName(name) {
			env[name] = s
		}
	}

	effective := maps.Clone(file)
	maps.Copy(effective, env)

	cfg := &c.snap.NCCLConfig
	cfg.File = recordNCCLSettings(c, "nccl_config.file.", file)
	cfg.Env = recordNCCLSettings(c, "nccl_config.env.", env)
	cfg.Effective = recordNCCLSettings(c, "nccl_config.effective.", effective)
}

// recordNCCLSettings returns the values of settings and records where each
// came from under prefix.
func recordNCCLSettings(c *collection, prefix string, settings map[string]ncclSetting) map[string]string {
	values := make(map[string]string, len(settings))
	for name, s := range settings {
		values[name] = s.value
		c.from(prefix+name, s.file, s.line)
	}
	return values
}
