package collectors

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/fleetaudit/fleetaudit/internal/shellparse"
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
func isPosixVarName(s string) bool { return shellparse.ValidName(s) }

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

// profileEvent is what one profile.d assignment or export does to a shell
// variable.
type profileEvent struct {
	Var ncclAssignment
	// Export marks the variable for the environment; an event may assign,
	// export, or both ("export NAME=value").
	Export bool
	Assign bool
	// Self, when set, is the value's pieces, which expand the variable's
	// own earlier value (LD_LIBRARY_PATH=/x:$LD_LIBRARY_PATH).
	Self []shellparse.Piece
}

// selfExpanding are the variables whose value may expand its own earlier
// value: the loader path, which scripts prepend to.
var selfExpanding = map[string]bool{"LD_LIBRARY_PATH": true}

// profileValue is a word's literal text, or for a selfExpanding name its
// pieces when they are literal text and expansions of the name itself
// ($NAME, ${NAME}, ${NAME:+...}).
func profileValue(cmd *shellparse.Command, name string, w *syntax.Word) (string, []shellparse.Piece, bool) {
	if v, ok := profileLiteral(cmd, w); ok || w == nil || !selfExpanding[name] {
		return v, nil, ok
	}
	if strings.ContainsRune(cmd.Raw(w.Pos(), w.End()), '\\') {
		return "", nil, false
	}
	pieces := cmd.Pieces(w)
	if !selfPieces(name, pieces) {
		return "", nil, false
	}
	return "", pieces, true
}

func selfPieces(name string, pieces []shellparse.Piece) bool {
	for _, p := range pieces {
		switch {
		case p.Kind == shellparse.Text && !strings.Contains(p.Text, "\n"):
		case p.Kind == shellparse.Param && p.Name == name && p.Op == "":
		case p.Kind == shellparse.Param && p.Name == name && (p.Op == ":+" || p.Op == "+") && selfPieces(name, p.Word):
		default:
			return false
		}
	}
	return true
}

// expandSelf is pieces with the variable's earlier value (set or not).
func expandSelf(pieces []shellparse.Piece, prev string, set bool) string {
	var b strings.Builder
	for _, p := range pieces {
		switch {
		case p.Kind == shellparse.Text:
			b.WriteString(p.Text)
		case p.Op == "":
			b.WriteString(prev)
		case (p.Op == ":+" && prev != "") || (p.Op == "+" && set):
			b.WriteString(expandSelf(p.Word, prev, set))
		}
	}
	return b.String()
}

// maxProfileErrors stops reading a script that is not shell at all.
const maxProfileErrors = 10

// parseProfileScript reads the forms of a /etc/profile.d script that set
// variables: "export NAME=value", "NAME=value" and "export NAME", with
// literal values (quotes, no expansion, no backslash, one line), run by the
// login shell itself: at top level or in the branches of if, case, loops
// and { } groups, not in functions, subshells or pipelines. Statements
// with anything else (expansions, a command after the assignments) are
// skipped, not errors: a login shell runs them, but they are not
// configuration fleetaudit can read without running them. Syntax errors
// are reported: the shell stops sourcing the file there. Scripts are
// parsed as bash, the shell that reads profile.d on most hosts (a superset
// of /bin/sh for what is read here).
func parseProfileScript(data []byte) ([]profileEvent, []error) {
	var out []profileEvent
	var errs []error
	script := shellparse.New(data, syntax.LangBash)
	for {
		cmd, err := script.Next()
		if err != nil {
			msg := err.Msg
			switch msg {
			case "unterminated double quote":
				msg = `unterminated " quote`
			case "unterminated single quote":
				msg = "unterminated ' quote"
			}
			if len(errs) == maxProfileErrors {
				msg = fmt.Sprintf("more than %d syntax errors; the rest of the file is not read", maxProfileErrors)
			}
			errs = append(errs, fmt.Errorf("%w: line %d: %s", ErrParse, err.Line, msg))
			if len(errs) > maxProfileErrors || err.Stop {
				return out, errs
			}
			continue
		}
		if cmd == nil {
			return out, errs
		}
		out = profileStmts(cmd, cmd.Stmts, out)
	}
}

// profileStmts appends the events of the statements the shell runs itself.
func profileStmts(cmd *shellparse.Command, stmts []*syntax.Stmt, out []profileEvent) []profileEvent {
	for _, st := range stmts {
		if st.Background || st.Negated || len(st.Redirs) > 0 {
			continue
		}
		switch c := st.Cmd.(type) {
		case *syntax.CallExpr:
			if len(c.Args) == 0 {
				out = append(out, profileAssigns(cmd, c.Assigns)...)
			} else if len(c.Assigns) == 0 && c.Args[0].Lit() == "export" {
				var assigns []*syntax.Assign
				for _, w := range c.Args[1:] {
					assigns = append(assigns, &syntax.Assign{Naked: true, Value: w})
				}
				out = append(out, profileExports(cmd, assigns)...)
			}
		case *syntax.DeclClause:
			if c.Variant != nil && c.Variant.Value == "export" {
				out = append(out, profileExports(cmd, c.Args)...)
			}
		case *syntax.IfClause:
			for clause := c; clause != nil; clause = clause.Else {
				out = profileStmts(cmd, clause.Then, out)
			}
		case *syntax.Block:
			out = profileStmts(cmd, c.Stmts, out)
		case *syntax.CaseClause:
			for _, item := range c.Items {
				out = profileStmts(cmd, item.Stmts, out)
			}
		case *syntax.WhileClause:
			out = profileStmts(cmd, c.Do, out)
		case *syntax.ForClause:
			out = profileStmts(cmd, c.Do, out)
		}
	}
	return out
}

// profileLiteral is a word's text when it is literal: quotes removed, no
// expansion, no backslash, on one line.
func profileLiteral(cmd *shellparse.Command, w *syntax.Word) (string, bool) {
	if w == nil {
		return "", true
	}
	if strings.ContainsRune(cmd.Raw(w.Pos(), w.End()), '\\') {
		return "", false
	}
	var b strings.Builder
	for _, p := range cmd.Pieces(w) {
		if p.Kind != shellparse.Text {
			return "", false
		}
		b.WriteString(p.Text)
	}
	return b.String(), !strings.Contains(b.String(), "\n")
}

// profileAssigns reads NAME=value [NAME=value...]; nil unless every value
// is literal.
func profileAssigns(cmd *shellparse.Command, assigns []*syntax.Assign) []profileEvent {
	var events []profileEvent
	for _, a := range assigns {
		if a.Name == nil || a.Append || a.Index != nil || a.Array != nil {
			return nil
		}
		value, self, ok := profileValue(cmd, a.Name.Value, a.Value)
		if !ok || !isPosixVarName(a.Name.Value) {
			return nil
		}
		events = append(events, profileEvent{
			Var:    ncclAssignment{Name: a.Name.Value, Value: value, Line: cmd.Line(a.Pos())},
			Assign: true,
			Self:   self,
		})
	}
	return events
}

// profileExports reads the arguments of export; nil unless every one is a
// literal NAME or NAME=value. export sees its arguments after quote
// removal, so a quoted '=' assigns too.
func profileExports(cmd *shellparse.Command, args []*syntax.Assign) []profileEvent {
	var events []profileEvent
	for _, a := range args {
		if a.Append || a.Index != nil || a.Array != nil {
			return nil
		}
		name, value, assign := "", "", false
		if a.Name != nil {
			name = a.Name.Value
		}
		var self []shellparse.Piece
		text, ok := profileLiteral(cmd, a.Value)
		if !ok && !a.Naked {
			text, self, ok = profileValue(cmd, name, a.Value)
		}
		if !ok {
			return nil
		}
		switch {
		case !a.Naked:
			value, assign = text, true
		case a.Name == nil:
			name, value, assign = strings.Cut(text, "=")
		}
		if !isPosixVarName(name) {
			return nil
		}
		events = append(events, profileEvent{
			Var:    ncclAssignment{Name: name, Value: value, Line: cmd.Line(a.Pos())},
			Export: true,
			Assign: assign,
			Self:   self,
		})
	}
	return events
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
				value := ev.Var.Value
				if ev.Self != nil {
					prev, set := vars[ev.Var.Name]
					value = expandSelf(ev.Self, prev.value, set)
				}
				vars[ev.Var.Name] = ncclSetting{value, name, ev.Var.Line}
			}
			if ev.Export {
				exported[ev.Var.Name] = true
			}
		}
	}
	if s, ok := vars["LD_LIBRARY_PATH"]; ok && exported["LD_LIBRARY_PATH"] {
		c.loginLibraryPath = s
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

	// NCCL_TOPO_FILE names a file on this host: say when it is not there.
	// (A relative path is relative to the job's directory: not judged.)
	if topo, ok := effective["NCCL_TOPO_FILE"]; ok && strings.HasPrefix(topo.value, "/") {
		switch _, err := c.src.Stat(rel(topo.value)); {
		case errors.Is(err, fs.ErrNotExist):
			cfg.TopoFileMissing = true
			c.from("nccl_config.topo_file_missing", topo.file, topo.line)
		case err != nil:
			c.fail(collector, topo.value, err)
		}
	}
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
