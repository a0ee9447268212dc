package collectors

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/fleetaudit/fleetaudit/internal/shellparse"
)

// GRUB defaults are shell: grub-mkconfig sources /etc/default/grub and then
// every /etc/default/grub.d/*.cfg with /bin/sh. This file evaluates the part
// of POSIX sh those files use (assignments, quoting, parameter expansion),
// statically and without running anything. What it cannot know (command
// substitution, sourcing, conditionals) makes the affected variable unknown
// instead of guessing. Every character of a value remembers the file:line
// that wrote it, through $VAR expansion, so a boot parameter can be traced to
// the drop-in that introduced it.

// ShellOrigin is where a piece of shell text was written.
type ShellOrigin struct {
	File string
	Line int
}

func (o ShellOrigin) String() string {
	if o.Line <= 0 {
		return o.File
	}
	return o.File + ":" + strconv.Itoa(o.Line)
}

// ShellSegment is a run of a value written in one place.
type ShellSegment struct {
	Text   string
	Origin ShellOrigin
}

// ShellUnknown says why a value cannot be known without running the shell.
type ShellUnknown struct {
	Why string
	At  ShellOrigin
	// reported is set when a syntax error entry already names the cause.
	reported bool
}

// ShellValue is a shell variable after evaluation.
type ShellValue struct {
	Set      bool
	Segments []ShellSegment
	// Unknown is nil when the value is known.
	Unknown *ShellUnknown
	// AssignedAt is the assignment that last set the variable.
	AssignedAt ShellOrigin
}

func (v ShellValue) String() string { return joinSegments(v.Segments) }

// GrubFile is one sourced file: its path on the host and its contents.
type GrubFile struct {
	Name string
	Data []byte
}

// GrubError is a problem at one line of one GRUB defaults file.
type GrubError struct {
	File string
	Line int
	err  error
}

func (e *GrubError) Error() string { return e.err.Error() }
func (e *GrubError) Unwrap() error { return e.err }

func newGrubError(file string, line int, format string, args ...any) *GrubError {
	return &GrubError{File: file, Line: line,
		err: fmt.Errorf("%w: line %d: %s", ErrParse, line, fmt.Sprintf(format, args...))}
}

// GrubEvaluation is the outcome of sourcing the GRUB defaults files.
type GrubEvaluation struct {
	Linux        ShellValue // GRUB_CMDLINE_LINUX
	LinuxDefault ShellValue // GRUB_CMDLINE_LINUX_DEFAULT
	// Default (GRUB_DEFAULT) and EnableBLSCfg (GRUB_ENABLE_BLSCFG) choose
	// the boot entry and whether entries come from /boot/loader/entries.
	// An unknown value is not an error here; the caller decides.
	Default      ShellValue
	EnableBLSCfg ShellValue
	// Errors are syntax errors, and a command-line variable that cannot be
	// evaluated. Other unknown variables (GRUB_DISTRIBUTOR=`lsb_release ...`)
	// are not errors.
	Errors []*GrubError
	// Aborted is the syntax error at which grub-mkconfig exits, nil when
	// there is none. Every variable is then unknown: grub-mkconfig writes
	// no new grub.cfg from these files.
	Aborted *GrubError
}

// grubRuntimeVars are set by grub-mkconfig from probing the running system
// before it sources the defaults; a file that reads them cannot be
// evaluated statically.
var grubRuntimeVars = []string{
	"GRUB_DEVICE", "GRUB_DEVICE_UUID", "GRUB_DEVICE_PARTUUID", "GRUB_DEVICE_BOOT",
	"GRUB_DEVICE_BOOT_UUID", "GRUB_FS", "GRUB_EARLY_INITRD_LINUX_STOCK",
	"grub_probe", "grub_file", "grub_editenv", "grub_script_check", "grub_cfg",
	"grub_mkconfig_dir", "pkgdatadir", "sysconfdir", "prefix", "exec_prefix",
	"datarootdir", "datadir", "sbindir", "bindir", "self", "x",
	"HOME", "PATH", "LANG", "LC_ALL", "PWD", "USER",
}

// grubAborts is what a syntax error in the defaults does: grub-mkconfig
// (#!/bin/sh, set -e) sources them before it opens grub.cfg.new, and a
// non-interactive sh (dash, bash --posix) exits at a syntax error in a
// file read with ".", so nothing is written.
const grubAborts = "grub-mkconfig's /bin/sh exits here: update-grub fails and grub.cfg keeps what its last run wrote"

// maxGrubBashisms stops reading a file that is not POSIX shell at all.
const maxGrubBashisms = 10

// EvalGrubDefaults sources files in order, as grub-mkconfig does, and
// returns the two command-line variables that 10_linux passes to Linux.
// root answers file tests in conditions; nil leaves them unknown.
func EvalGrubDefaults(files []GrubFile, root GrubFileTester) GrubEvaluation {
	env := newShellEnv()
	env.files = root
	for _, name := range grubRuntimeVars {
		env.runtime[name] = true
	}
	for _, f := range files {
		if env.source(f.Name, f.Data) {
			break
		}
	}
	res := GrubEvaluation{
		Linux:        env.lookup("GRUB_CMDLINE_LINUX"),
		LinuxDefault: env.lookup("GRUB_CMDLINE_LINUX_DEFAULT"),
		Default:      env.lookup("GRUB_DEFAULT"),
		EnableBLSCfg: env.lookup("GRUB_ENABLE_BLSCFG"),
		Errors:       env.errors,
		Aborted:      env.aborted,
	}
	for _, v := range []struct {
		name string
		val  ShellValue
	}{{"GRUB_CMDLINE_LINUX", res.Linux}, {"GRUB_CMDLINE_LINUX_DEFAULT", res.LinuxDefault}} {
		u := v.val.Unknown
		if u == nil || u.reported {
			continue
		}
		res.Errors = append(res.Errors, newGrubError(u.At.File, u.At.Line,
			"%s cannot be evaluated: %s", v.name, u.Why))
	}
	return res
}

// ---- evaluation ----

type shellEnv struct {
	vars    map[string]ShellValue
	runtime map[string]bool
	funcs   map[string]bool
	// opaque makes every variable not assigned since unknown: a sourced file
	// or eval could have set anything.
	opaque *ShellUnknown
	errors []*GrubError
	// aborted is the syntax error that ends the evaluation.
	aborted *GrubError

	// files answers file tests in conditions; nil makes them unknown.
	files GrubFileTester

	file string
	cmd  *shellparse.Command // being evaluated
	// fileCond and allCond make the rest of the file, or of all files,
	// conditional after a conditional return or exit.
	fileCond, allCond string
}

func newShellEnv() *shellEnv {
	return &shellEnv{vars: map[string]ShellValue{}, runtime: map[string]bool{}, funcs: map[string]bool{}}
}

type shModeKind int

const (
	modeApply shModeKind = iota // runs, in this shell
	modeCond                    // may or may not run
	modeNone                    // runs in a subshell: no effect here
)

type shMode struct {
	kind shModeKind
	why  string // for modeCond: what makes it conditional
}

func (m shMode) cond(why string) shMode {
	if m.kind == modeApply {
		return shMode{modeCond, why}
	}
	return m
}

type shControl int

const (
	ctlNext shControl = iota
	ctlReturn
	ctlExit
)

func (env *shellEnv) origin(line int) ShellOrigin { return ShellOrigin{File: env.file, Line: line} }

// source evaluates one file. It reports whether evaluation of all files
// stops (an unconditional exit).
func (env *shellEnv) source(file string, data []byte) bool {
	env.file = file
	env.fileCond = ""
	// grub-mkconfig is a /bin/sh script (dash on Debian and Ubuntu): the
	// defaults must be POSIX shell, and a bash-only construct is an error.
	script := shellparse.New(data, syntax.LangPOSIX)
	bashisms := 0
	for {
		cmd, err := script.Next()
		if err != nil && !err.Stop && err.Lang == "bash" {
			if bashisms++; bashisms > maxGrubBashisms {
				err.Msg, err.Limit = fmt.Sprintf("more than %d lines that are not POSIX shell; the rest of the file is not read", maxGrubBashisms), true
			}
		}
		if err != nil && err.Limit {
			// Beyond this reader's bounds, not the shell's.
			env.errors = append(env.errors, newGrubError(file, err.Line, "%s", err.Msg))
			env.makeOpaque(fmt.Sprintf("may be set after line %d, where reading stopped", err.Line), err.Line)
			env.opaque.reported = true
			return false
		}
		if err != nil && !err.Stop && err.Lang == "bash" {
			// dash (/bin/sh on Debian and Ubuntu) exits at it, bash (/bin/sh
			// on RHEL and SUSE) runs it: what the line sets is unknown, and
			// the rest is read.
			env.errors = append(env.errors, newGrubError(file, err.Line, "%s", err.Msg))
			unk := &ShellUnknown{Why: "line is not POSIX shell", At: env.origin(err.Line), reported: true}
			for _, name := range err.Names {
				env.vars[name] = ShellValue{Set: true, Unknown: unk, AssignedAt: unk.At}
			}
			continue
		}
		if err != nil {
			// The shell runs the file command by command and exits at the
			// first syntax error: what came before ran, nothing after, and
			// grub-mkconfig stops.
			e := newGrubError(file, err.Line, "%s; %s", err.Msg, grubAborts)
			env.errors = append(env.errors, e)
			env.aborted = e
			env.makeOpaque(fmt.Sprintf("grub-mkconfig exits at line %d, a syntax error", err.Line), err.Line)
			env.opaque.reported = true
			return true
		}
		if cmd == nil {
			return false
		}
		env.cmd = cmd
		mode := shMode{kind: modeApply}
		switch {
		case env.allCond != "":
			mode = shMode{modeCond, env.allCond}
		case env.fileCond != "":
			mode = shMode{modeCond, env.fileCond}
		}
		switch env.evalStmts(cmd.Stmts, mode) {
		case ctlReturn:
			return false
		case ctlExit:
			return true
		}
	}
}

func (env *shellEnv) line(n syntax.Node) int { return env.cmd.Line(n.Pos()) }

func (env *shellEnv) evalStmts(stmts []*syntax.Stmt, mode shMode) shControl {
	for _, st := range stmts {
		m := mode
		if st.Background {
			m = shMode{kind: modeNone}
		}
		if ctl := env.evalAndOr(st, m); ctl != ctlNext {
			return ctl
		}
	}
	return ctlNext
}

// andOr splits "a && b || c" into its pipelines and the operators between
// them; the library nests the list to the left.
func andOr(st *syntax.Stmt) (pipes []*syntax.Stmt, ops []syntax.BinCmdOperator) {
	for {
		b, ok := st.Cmd.(*syntax.BinaryCmd)
		if !ok || st.Negated || (b.Op != syntax.AndStmt && b.Op != syntax.OrStmt) {
			break
		}
		pipes, ops = append(pipes, b.Y), append(ops, b.Op)
		st = b.X
	}
	pipes = append(pipes, st)
	slices.Reverse(pipes)
	slices.Reverse(ops)
	return pipes, ops
}

// pipeline lists the commands of "a | b | c".
func pipeline(st *syntax.Stmt) []*syntax.Stmt {
	var cmds []*syntax.Stmt
	stack := []*syntax.Stmt{st}
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		// The negation of "! a | b" is the whole pipeline's.
		if b, ok := s.Cmd.(*syntax.BinaryCmd); ok && (s == st || !s.Negated) && (b.Op == syntax.Pipe || b.Op == syntax.PipeAll) {
			stack = append(stack, b.Y, b.X)
			continue
		}
		cmds = append(cmds, s)
	}
	return cmds
}

func (env *shellEnv) evalAndOr(st *syntax.Stmt, mode shMode) shControl {
	pipes, _ := andOr(st)
	for i, p := range pipes {
		m := mode
		if i > 0 {
			m = mode.cond(fmt.Sprintf("after && or || at line %d", env.line(p)))
		}
		if ctl := env.evalPipeline(p, m); ctl != ctlNext {
			return ctl
		}
	}
	return ctlNext
}

func (env *shellEnv) evalPipeline(p *syntax.Stmt, mode shMode) shControl {
	cmds := pipeline(p)
	if len(cmds) > 1 {
		// Every part of a pipeline runs in a subshell (dash, and bash
		// without lastpipe).
		mode = shMode{kind: modeNone}
	}
	for _, c := range cmds {
		if ctl := env.evalCmd(c.Cmd, mode); ctl != ctlNext {
			return ctl
		}
	}
	return ctlNext
}

func (env *shellEnv) evalCmd(c syntax.Command, mode shMode) shControl {
	var lists [][]*syntax.Stmt
	m := mode
	switch c := c.(type) {
	case *syntax.CallExpr:
		return env.evalSimple(c, mode)
	case *syntax.FuncDecl:
		if mode.kind != modeNone && c.Name != nil {
			env.funcs[c.Name.Value] = true
		}
		return ctlNext
	case *syntax.IfClause:
		return env.evalIf(c, mode)
	case *syntax.Subshell:
		m, lists = shMode{kind: modeNone}, [][]*syntax.Stmt{c.Stmts}
	case *syntax.Block:
		lists = [][]*syntax.Stmt{c.Stmts}
	case *syntax.WhileClause:
		kind := "while"
		if c.Until {
			kind = "until"
		}
		m, lists = mode.cond(fmt.Sprintf("inside %s at line %d", kind, env.line(c))), [][]*syntax.Stmt{c.Cond, c.Do}
	case *syntax.ForClause:
		m, lists = mode.cond(fmt.Sprintf("inside for at line %d", env.line(c))), [][]*syntax.Stmt{c.Do}
		if it, ok := c.Loop.(*syntax.WordIter); ok && it.Name != nil {
			env.assignValue(it.Name.Value, nil, m, env.line(c))
		}
	case *syntax.CaseClause:
		m = mode.cond(fmt.Sprintf("inside case at line %d", env.line(c)))
		for _, item := range c.Items {
			lists = append(lists, item.Stmts)
		}
	}
	for _, l := range lists {
		ctl := env.evalStmts(l, m)
		if ctl != ctlNext && m.kind == modeApply {
			return ctl
		}
	}
	return ctlNext
}

// evalIf takes the branch the shell would when the conditions can be decided,
// and otherwise treats every branch from the undecided condition on as
// conditional.
func (env *shellEnv) evalIf(c *syntax.IfClause, mode shMode) shControl {
	branchMode := mode
	line := env.line(c)
	for clause := c; clause != nil; clause = clause.Else {
		if !clause.ThenPos.IsValid() {
			// else: reached when every condition was false (or undecided).
			return env.evalBody(clause.Then, branchMode)
		}
		if ctl := env.evalStmts(clause.Cond, branchMode); ctl != ctlNext && branchMode.kind == modeApply {
			return ctl
		}
		switch env.listStatus(clause.Cond) {
		case triTrue:
			return env.evalBody(clause.Then, branchMode)
		case triUnknown:
			branchMode = branchMode.cond(fmt.Sprintf("inside if at line %d", line))
			if ctl := env.evalBody(clause.Then, branchMode); ctl != ctlNext {
				return ctl
			}
		}
	}
	return ctlNext
}

func (env *shellEnv) evalBody(l []*syntax.Stmt, mode shMode) shControl {
	ctl := env.evalStmts(l, mode)
	if mode.kind == modeApply {
		return ctl
	}
	return ctlNext
}

// specialBuiltins keep prefix assignments (VAR=x :) in the shell, per POSIX.
var specialBuiltins = map[string]bool{
	":": true, ".": true, "break": true, "continue": true, "eval": true, "exec": true,
	"exit": true, "export": true, "readonly": true, "return": true, "set": true,
	"shift": true, "times": true, "trap": true, "unset": true,
}

func (env *shellEnv) evalSimple(c *syntax.CallExpr, mode shMode) shControl {
	if mode.kind == modeNone {
		return ctlNext
	}
	line := env.line(c)
	if len(c.Args) == 0 {
		for _, a := range c.Assigns {
			env.assign(a, mode)
		}
		return ctlNext
	}
	words := c.Args
	name, known := env.wordText(words[0], mode)
	for known && (name == "command" || name == "builtin") && len(words) > 1 {
		words = words[1:]
		for len(words) > 1 && strings.HasPrefix(words[0].Lit(), "-") {
			words = words[1:]
		}
		name, known = env.wordText(words[0], mode)
	}
	if !known {
		env.makeOpaque(fmt.Sprintf("may be set by a command whose name is computed at line %d", line), line)
		return ctlNext
	}
	if specialBuiltins[name] {
		for _, a := range c.Assigns {
			env.assign(a, mode)
		}
	}
	args := words[1:]
	switch name {
	case "export", "readonly":
		for _, w := range args {
			env.declare(w, mode)
		}
	case "unset":
		for _, w := range args {
			text, ok := env.wordText(w, mode)
			switch {
			case !ok:
				env.makeOpaque(fmt.Sprintf("may be unset by name computed at line %d", env.line(w)), env.line(w))
			case text == "-f":
				return ctlNext
			case strings.HasPrefix(text, "-"):
			case shellparse.ValidName(text):
				env.unset(text, mode, env.line(w))
			}
		}
	case ".", "source":
		env.makeOpaque(fmt.Sprintf("may be set by the file sourced at line %d", line), line)
	case "eval":
		env.makeOpaque(fmt.Sprintf("may be set by eval at line %d", line), line)
	case "read", "getopts", "local", "declare", "typeset":
		for i, w := range args {
			if name == "getopts" && i == 0 {
				continue
			}
			text, ok := env.wordText(w, mode)
			if !ok {
				continue
			}
			text, _, _ = strings.Cut(text, "=")
			if shellparse.ValidName(text) {
				env.markUnknown(text, fmt.Sprintf("set by %s at line %d", name, env.line(w)), env.line(w))
			}
		}
	case "exit":
		return env.control(ctlExit, mode, line)
	case "return":
		return env.control(ctlReturn, mode, line)
	case "exec":
		if len(args) > 0 {
			return env.control(ctlExit, mode, line)
		}
	default:
		if env.funcs[name] {
			env.makeOpaque(fmt.Sprintf("may be set by shell function %s, called at line %d", name, line), line)
			return ctlNext
		}
		// Arguments are expanded for their side effects: ": ${VAR:=default}".
		for _, w := range args {
			env.expand(env.cmd.Pieces(w), mode)
		}
	}
	return ctlNext
}

func (env *shellEnv) assign(a *syntax.Assign, mode shMode) {
	if a.Name == nil {
		return
	}
	env.assignParts(a.Name.Value, env.cmd.Pieces(a.Value), mode, env.line(a))
}

// control turns return and exit into a stop, or, when they may or may not
// run, into a condition on everything after them.
func (env *shellEnv) control(ctl shControl, mode shMode, line int) shControl {
	if mode.kind == modeApply {
		return ctl
	}
	why := fmt.Sprintf("after a conditional %s at line %d", map[shControl]string{ctlReturn: "return", ctlExit: "exit"}[ctl], line)
	if ctl == ctlExit {
		if env.allCond == "" {
			env.allCond = why + " of " + env.file
		}
	} else if env.fileCond == "" {
		env.fileCond = why
	}
	return ctlNext
}

// declare handles one argument of export or readonly.
func (env *shellEnv) declare(w *syntax.Word, mode shMode) {
	pieces := env.cmd.Pieces(w)
	if name, value, ok := shellparse.SplitAssign(pieces); ok {
		env.assignParts(name, value, mode, env.line(w))
		return
	}
	segs, unk := env.expand(pieces, mode)
	if unk != nil {
		return
	}
	text := joinSegments(segs)
	name, _, found := strings.Cut(text, "=")
	if !found || !shellparse.ValidName(name) {
		return
	}
	env.assignValue(name, dropPrefix(segs, len(name)+1), mode, env.line(w))
}

func (env *shellEnv) assignParts(name string, parts []shellparse.Piece, mode shMode, line int) {
	switch mode.kind {
	case modeApply:
		segs, unk := env.expand(parts, mode)
		env.vars[name] = ShellValue{Set: true, Segments: segs, Unknown: unk, AssignedAt: env.origin(line)}
	case modeCond:
		env.markUnknown(name, "set only conditionally, "+mode.why, line)
	}
}

func (env *shellEnv) assignValue(name string, segs []ShellSegment, mode shMode, line int) {
	switch mode.kind {
	case modeApply:
		env.vars[name] = ShellValue{Set: true, Segments: segs, AssignedAt: env.origin(line)}
	case modeCond:
		env.markUnknown(name, "set only conditionally, "+mode.why, line)
	}
}

func (env *shellEnv) unset(name string, mode shMode, line int) {
	switch mode.kind {
	case modeApply:
		env.vars[name] = ShellValue{AssignedAt: env.origin(line)}
	case modeCond:
		env.markUnknown(name, "unset only conditionally, "+mode.why, line)
	}
}

// markUnknown keeps the value the variable had: it is what the shell holds
// when the uncertain assignment does not run, and the best the snapshot can
// show beside the error that says it may be otherwise.
func (env *shellEnv) markUnknown(name, why string, line int) {
	at := env.origin(line)
	prev := env.lookup(name)
	env.vars[name] = ShellValue{Set: true, Segments: prev.Segments, Unknown: &ShellUnknown{Why: why, At: at}, AssignedAt: at}
}

func (env *shellEnv) makeOpaque(why string, line int) {
	env.vars = map[string]ShellValue{}
	env.opaque = &ShellUnknown{Why: why, At: env.origin(line)}
}

func (env *shellEnv) lookup(name string) ShellValue {
	if v, ok := env.vars[name]; ok {
		return v
	}
	if env.opaque != nil {
		return ShellValue{Set: true, Unknown: env.opaque}
	}
	if env.runtime[name] {
		return ShellValue{Set: true, Unknown: &ShellUnknown{Why: "reads " + name + ", which grub-mkconfig sets at run time"}}
	}
	return ShellValue{}
}

// wordText expands a word that must be known, such as a command name.
func (env *shellEnv) wordText(w *syntax.Word, mode shMode) (string, bool) {
	segs, unk := env.expand(env.cmd.Pieces(w), mode)
	return joinSegments(segs), unk == nil
}

// Values are capped: no useful command line comes near, and doubling
// assignments (A=$A$A) must not exhaust memory.
const (
	maxShellValueBytes    = 16 << 10
	maxShellValueSegments = 256
)

// expand performs parameter expansion and quote removal on a word. As in an
// assignment, there is no field splitting or pathname expansion.
func (env *shellEnv) expand(parts []shellparse.Piece, mode shMode) ([]ShellSegment, *ShellUnknown) {
	if len(parts) == 1 && parts[0].Kind == shellparse.Param && parts[0].Op == "" {
		// A plain $VAR shares the variable's segments, which are never
		// modified in place.
		return env.expandParam(parts[0], mode)
	}
	var pieces []ShellSegment
	size := 0
	for _, p := range parts {
		switch p.Kind {
		case shellparse.Text:
			pieces = append(pieces, ShellSegment{Text: p.Text, Origin: env.origin(p.Line)})
			size += len(p.Text)
		case shellparse.Unknown:
			return nil, &ShellUnknown{Why: p.Text + " at line " + strconv.Itoa(p.Line), At: env.origin(p.Line)}
		case shellparse.Param:
			more, unk := env.expandParam(p, mode)
			if unk != nil {
				return nil, unk
			}
			pieces = append(pieces, more...)
			for _, s := range more {
				size += len(s.Text)
			}
		}
		if size > maxShellValueBytes || len(pieces) > 4*maxShellValueSegments {
			return nil, &ShellUnknown{Why: fmt.Sprintf("value at line %d is too long to evaluate", p.Line), At: env.origin(p.Line)}
		}
	}
	segs := mergeSegments(pieces)
	if len(segs) > maxShellValueSegments {
		return nil, &ShellUnknown{Why: fmt.Sprintf("value at line %d is pieced from too many places", parts[0].Line), At: env.origin(parts[0].Line)}
	}
	return segs, nil
}

func (env *shellEnv) expandParam(p shellparse.Piece, mode shMode) ([]ShellSegment, *ShellUnknown) {
	at := env.origin(p.Line)
	if !shellparse.ValidName(p.Name) {
		return nil, &ShellUnknown{Why: fmt.Sprintf("uses $%s at line %d, which only the running shell knows", p.Name, p.Line), At: at}
	}
	if p.Op == "pattern" {
		return nil, &ShellUnknown{Why: fmt.Sprintf("uses pattern removal on %s at line %d", p.Name, p.Line), At: at}
	}
	v := env.lookup(p.Name)
	if v.Unknown != nil {
		u := *v.Unknown
		if u.At.File == "" {
			u.At = at
			u.Why += fmt.Sprintf(" (line %d)", p.Line)
		}
		return nil, &u
	}
	nonEmpty := v.String() != ""
	word := func() ([]ShellSegment, *ShellUnknown) { return env.expand(p.Word, mode) }
	switch p.Op {
	case "":
		return v.Segments, nil
	case "#":
		return []ShellSegment{{Text: strconv.Itoa(len(v.String())), Origin: at}}, nil
	case "-", ":-":
		if v.Set && (nonEmpty || p.Op == "-") {
			return v.Segments, nil
		}
		return word()
	case "=", ":=":
		if v.Set && (nonEmpty || p.Op == "=") {
			return v.Segments, nil
		}
		segs, unk := word()
		if unk == nil {
			env.assignValue(p.Name, segs, mode, p.Line)
		}
		return segs, unk
	case "+", ":+":
		if v.Set && (nonEmpty || p.Op == "+") {
			return word()
		}
		return nil, nil
	case "?", ":?":
		if v.Set && (nonEmpty || p.Op == "?") {
			return v.Segments, nil
		}
		return nil, &ShellUnknown{Why: fmt.Sprintf("aborts the shell: %s is unset at line %d", p.Name, p.Line), At: at}
	}
	return nil, &ShellUnknown{Why: "unsupported expansion at line " + strconv.Itoa(p.Line), At: at}
}

// mergeSegments joins neighbouring pieces written at the same place.
func mergeSegments(pieces []ShellSegment) []ShellSegment {
	var segs []ShellSegment
	for i := 0; i < len(pieces); {
		j := i + 1
		for j < len(pieces) && pieces[j].Origin == pieces[i].Origin {
			j++
		}
		if j == i+1 {
			if pieces[i].Text != "" {
				segs = append(segs, pieces[i])
			}
		} else {
			var b strings.Builder
			for _, p := range pieces[i:j] {
				b.WriteString(p.Text)
			}
			if b.Len() > 0 {
				segs = append(segs, ShellSegment{Text: b.String(), Origin: pieces[i].Origin})
			}
		}
		i = j
	}
	return segs
}

func joinSegments(segs []ShellSegment) string {
	var b strings.Builder
	for _, s := range segs {
		b.WriteString(s.Text)
	}
	return b.String()
}

// dropPrefix removes the first n bytes of a segmented value.
func dropPrefix(segs []ShellSegment, n int) []ShellSegment {
	var out []ShellSegment
	for _, s := range segs {
		if n >= len(s.Text) {
			n -= len(s.Text)
			continue
		}
		s.Text = s.Text[n:]
		n = 0
		out = append(out, s)
	}
	return out
}
