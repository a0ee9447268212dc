package collectors

import (
	"fmt"
	"strconv"
	"strings"
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
	// Errors are syntax errors, and a command-line variable that cannot be
	// evaluated. Other unknown variables (GRUB_DISTRIBUTOR=`lsb_release ...`)
	// are not errors.
	Errors []*GrubError
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

// maxGrubErrorsPerFile stops reading a file that is not shell at all.
const maxGrubErrorsPerFile = 10

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
		Errors:       env.errors,
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

	// files answers file tests in conditions; nil makes them unknown.
	files GrubFileTester

	file string
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
	p := newShParser(file, string(data))
	errs := 0
	for {
		list, err := p.nextCommand()
		if err != nil {
			if errs++; errs > maxGrubErrorsPerFile {
				env.errors = append(env.errors, newGrubError(file, err.Line,
					"more than %d syntax errors; the rest of the file is not read", maxGrubErrorsPerFile))
				env.makeOpaque(fmt.Sprintf("may be set after line %d, where reading stopped", err.Line), err.Line)
				env.opaque.reported = true
				return false
			}
			env.errors = append(env.errors, err)
			unk := &ShellUnknown{Why: "line is not valid shell", At: env.origin(err.Line), reported: true}
			for _, name := range p.assignNames {
				env.vars[name] = ShellValue{Set: true, Unknown: unk, AssignedAt: unk.At}
			}
			if !p.resync(err.Line) {
				return false
			}
			continue
		}
		if list == nil {
			return false
		}
		mode := shMode{kind: modeApply}
		switch {
		case env.allCond != "":
			mode = shMode{modeCond, env.allCond}
		case env.fileCond != "":
			mode = shMode{modeCond, env.fileCond}
		}
		switch env.evalList(list, mode) {
		case ctlReturn:
			return false
		case ctlExit:
			return true
		}
	}
}

func (env *shellEnv) evalList(l *shList, mode shMode) shControl {
	for _, item := range l.items {
		m := mode
		if item.background {
			m = shMode{kind: modeNone}
		}
		if ctl := env.evalAndOr(item.andOr, m); ctl != ctlNext {
			return ctl
		}
	}
	return ctlNext
}

func (env *shellEnv) evalAndOr(ao *shAndOr, mode shMode) shControl {
	for i, p := range ao.pipes {
		m := mode
		if i > 0 {
			m = mode.cond(fmt.Sprintf("after && or || at line %d", p.line))
		}
		if ctl := env.evalPipeline(p, m); ctl != ctlNext {
			return ctl
		}
	}
	return ctlNext
}

func (env *shellEnv) evalPipeline(p *shPipeline, mode shMode) shControl {
	if len(p.cmds) > 1 {
		// Every part of a pipeline runs in a subshell (dash, and bash
		// without lastpipe).
		mode = shMode{kind: modeNone}
	}
	for _, c := range p.cmds {
		if ctl := env.evalCmd(c, mode); ctl != ctlNext {
			return ctl
		}
	}
	return ctlNext
}

func (env *shellEnv) evalCmd(c shCmd, mode shMode) shControl {
	switch c := c.(type) {
	case *shSimple:
		return env.evalSimple(c, mode)
	case *shFunc:
		if mode.kind != modeNone {
			env.funcs[c.name] = true
		}
	case *shCompound:
		if c.kind == "if" {
			return env.evalIf(c, mode)
		}
		m := mode
		switch {
		case c.kind == "(":
			m = shMode{kind: modeNone}
		case c.kind != "{":
			m = mode.cond(fmt.Sprintf("inside %s at line %d", c.kind, c.line))
		}
		for _, name := range c.loopVars {
			env.assignValue(name, nil, m, c.line)
		}
		for _, l := range c.lists {
			ctl := env.evalList(l, m)
			if ctl != ctlNext && m.kind == modeApply {
				return ctl
			}
		}
	}
	return ctlNext
}

// evalIf takes the branch the shell would when the conditions can be decided,
// and otherwise treats every branch from the undecided condition on as
// conditional. lists are cond, body pairs and an optional else body.
func (env *shellEnv) evalIf(c *shCompound, mode shMode) shControl {
	branchMode := mode
	for i := 0; i < len(c.lists); i += 2 {
		if i+1 == len(c.lists) {
			// else: reached when every condition was false (or undecided).
			return env.evalBody(c.lists[i], branchMode)
		}
		cond, body := c.lists[i], c.lists[i+1]
		if ctl := env.evalList(cond, branchMode); ctl != ctlNext && branchMode.kind == modeApply {
			return ctl
		}
		switch env.listStatus(cond) {
		case triTrue:
			return env.evalBody(body, branchMode)
		case triUnknown:
			branchMode = branchMode.cond(fmt.Sprintf("inside if at line %d", c.line))
			if ctl := env.evalBody(body, branchMode); ctl != ctlNext {
				return ctl
			}
		}
	}
	return ctlNext
}

func (env *shellEnv) evalBody(l *shList, mode shMode) shControl {
	ctl := env.evalList(l, mode)
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

func (env *shellEnv) evalSimple(c *shSimple, mode shMode) shControl {
	if mode.kind == modeNone {
		return ctlNext
	}
	if len(c.words) == 0 {
		for _, a := range c.assigns {
			env.assignParts(a.name, a.value, mode, a.line)
		}
		return ctlNext
	}
	words := c.words
	name, known := env.wordText(words[0], mode)
	for known && (name == "command" || name == "builtin") && len(words) > 1 {
		words = words[1:]
		for len(words) > 1 {
			if opt, ok := words[0].literal(); !ok || !strings.HasPrefix(opt, "-") {
				break
			}
			words = words[1:]
		}
		name, known = env.wordText(words[0], mode)
	}
	if !known {
		env.makeOpaque(fmt.Sprintf("may be set by a command whose name is computed at line %d", c.line), c.line)
		return ctlNext
	}
	if specialBuiltins[name] {
		for _, a := range c.assigns {
			env.assignParts(a.name, a.value, mode, a.line)
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
				env.makeOpaque(fmt.Sprintf("may be unset by name computed at line %d", w.line), w.line)
			case text == "-f":
				return ctlNext
			case strings.HasPrefix(text, "-"):
			case validShellName(text):
				env.unset(text, mode, w.line)
			}
		}
	case ".", "source":
		env.makeOpaque(fmt.Sprintf("may be set by the file sourced at line %d", c.line), c.line)
	case "eval":
		env.makeOpaque(fmt.Sprintf("may be set by eval at line %d", c.line), c.line)
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
			if validShellName(text) {
				env.markUnknown(text, fmt.Sprintf("set by %s at line %d", name, w.line), w.line)
			}
		}
	case "exit":
		return env.control(ctlExit, mode, c.line)
	case "return":
		return env.control(ctlReturn, mode, c.line)
	case "exec":
		if len(args) > 0 {
			return env.control(ctlExit, mode, c.line)
		}
	default:
		if env.funcs[name] {
			env.makeOpaque(fmt.Sprintf("may be set by shell function %s, called at line %d", name, c.line), c.line)
			return ctlNext
		}
		// Arguments are expanded for their side effects: ": ${VAR:=default}".
		for _, w := range args {
			env.expand(w.parts, mode)
		}
	}
	return ctlNext
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
func (env *shellEnv) declare(w *shWord, mode shMode) {
	if w.assignName != "" {
		env.assignParts(w.assignName, w.parts[w.valueStart:], mode, w.line)
		return
	}
	segs, unk := env.expand(w.parts, mode)
	if unk != nil {
		return
	}
	text := joinSegments(segs)
	name, _, found := strings.Cut(text, "=")
	if !found || !validShellName(name) {
		return
	}
	env.assignValue(name, dropPrefix(segs, len(name)+1), mode, w.line)
}

func (env *shellEnv) assignParts(name string, parts []shPart, mode shMode, line int) {
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
func (env *shellEnv) wordText(w *shWord, mode shMode) (string, bool) {
	segs, unk := env.expand(w.parts, mode)
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
func (env *shellEnv) expand(parts []shPart, mode shMode) ([]ShellSegment, *ShellUnknown) {
	if len(parts) == 1 && parts[0].kind == partParam && parts[0].param.op == "" {
		// A plain $VAR shares the variable's segments, which are never
		// modified in place.
		return env.expandParam(parts[0].param, mode)
	}
	var pieces []ShellSegment
	size := 0
	for _, p := range parts {
		switch p.kind {
		case partText:
			pieces = append(pieces, ShellSegment{Text: p.text, Origin: env.origin(p.line)})
			size += len(p.text)
		case partUnknown:
			return nil, &ShellUnknown{Why: p.text + " at line " + strconv.Itoa(p.line), At: env.origin(p.line)}
		case partParam:
			more, unk := env.expandParam(p.param, mode)
			if unk != nil {
				return nil, unk
			}
			pieces = append(pieces, more...)
			for _, s := range more {
				size += len(s.Text)
			}
		}
		if size > maxShellValueBytes || len(pieces) > 4*maxShellValueSegments {
			return nil, &ShellUnknown{Why: fmt.Sprintf("value at line %d is too long to evaluate", p.line), At: env.origin(p.line)}
		}
	}
	segs := mergeSegments(pieces)
	if len(segs) > maxShellValueSegments {
		return nil, &ShellUnknown{Why: fmt.Sprintf("value at line %d is pieced from too many places", parts[0].line), At: env.origin(parts[0].line)}
	}
	return segs, nil
}

func (env *shellEnv) expandParam(p *shParam, mode shMode) ([]ShellSegment, *ShellUnknown) {
	at := env.origin(p.line)
	if !validShellName(p.name) {
		return nil, &ShellUnknown{Why: fmt.Sprintf("uses $%s at line %d, which only the running shell knows", p.name, p.line), At: at}
	}
	if p.op == "pattern" {
		return nil, &ShellUnknown{Why: fmt.Sprintf("uses pattern removal on %s at line %d", p.name, p.line), At: at}
	}
	v := env.lookup(p.name)
	if v.Unknown != nil {
		u := *v.Unknown
		if u.At.File == "" {
			u.At = at
			u.Why += fmt.Sprintf(" (line %d)", p.line)
		}
		return nil, &u
	}
	nonEmpty := v.String() != ""
	word := func() ([]ShellSegment, *ShellUnknown) { return env.expand(p.word, mode) }
	switch p.op {
	case "":
		return v.Segments, nil
	case "#":
		return []ShellSegment{{Text: strconv.Itoa(len(v.String())), Origin: at}}, nil
	case "-", ":-":
		if v.Set && (nonEmpty || p.op == "-") {
			return v.Segments, nil
		}
		return word()
	case "=", ":=":
		if v.Set && (nonEmpty || p.op == "=") {
			return v.Segments, nil
		}
		segs, unk := word()
		if unk == nil {
			env.assignValue(p.name, segs, mode, p.line)
		}
		return segs, unk
	case "+", ":+":
		if v.Set && (nonEmpty || p.op == "+") {
			return word()
		}
		return nil, nil
	case "?", ":?":
		if v.Set && (nonEmpty || p.op == "?") {
			return v.Segments, nil
		}
		return nil, &ShellUnknown{Why: fmt.Sprintf("aborts the shell: %s is unset at line %d", p.name, p.line), At: at}
	}
	return nil, &ShellUnknown{Why: "unsupported expansion at line " + strconv.Itoa(p.line), At: at}
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

func validShellName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (i > 0 && c >= '0' && c <= '9') {
			continue
		}
		return false
	}
	return true
}
