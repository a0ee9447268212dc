package collectors

import (
	"strings"
)

// The shell reader for GRUB defaults: a lexer that keeps quoting and the
// line of every character, and a recursive-descent parser for the POSIX
// grammar down to simple commands. Compound commands are parsed only so
// their extent and the assignments inside them are known; they are never
// run.

// shPart is a piece of a word: literal text, a parameter expansion, or
// something that cannot be evaluated (command substitution).
type shPart struct {
	kind   shPartKind
	text   string // literal text, or why it cannot be evaluated
	line   int
	quoted bool
	param  *shParam
}

type shPartKind int

const (
	partText shPartKind = iota
	partParam
	partUnknown
)

// shParam is $NAME or ${NAME op word}. op is "", "-", ":-", "=", ":=", "+",
// ":+", "?", ":?", "#" (length) or "pattern" (%, %%, #, ##).
type shParam struct {
	name string
	op   string
	word []shPart
	line int
}

type shWord struct {
	parts []shPart
	line  int
	// assignName is NAME when the word is NAME=value with NAME unquoted;
	// the value is parts[valueStart:].
	assignName string
	valueStart int
	ioNumber   bool
	// pending is literal text not yet closed into a part, so that a long
	// run of characters costs linear time.
	pending       []byte
	pendingLine   int
	pendingQuoted bool
}

// literal returns the word's text when it has no quoting or expansion, as
// reserved words must be.
func (w *shWord) literal() (string, bool) {
	var b strings.Builder
	for _, p := range w.parts {
		if p.kind != partText || p.quoted {
			return "", false
		}
		b.WriteString(p.text)
	}
	return b.String(), true
}

func (w *shWord) addText(text string, line int, quoted bool) {
	if text == "" {
		return
	}
	if len(w.pending) > 0 && (w.pendingLine != line || w.pendingQuoted != quoted) {
		w.flush()
	}
	if len(w.pending) == 0 {
		w.pendingLine, w.pendingQuoted = line, quoted
	}
	w.pending = append(w.pending, text...)
}

// flush closes the pending literal text into a part.
func (w *shWord) flush() {
	if len(w.pending) > 0 {
		w.parts = append(w.parts, shPart{kind: partText, text: string(w.pending), line: w.pendingLine, quoted: w.pendingQuoted})
		w.pending = w.pending[:0]
	}
}

func (w *shWord) addPart(p shPart) {
	w.flush()
	w.parts = append(w.parts, p)
}

// splitAssignment recognises NAME=value: the name and "=" must be unquoted.
// The word keeps its full text; the value is parts[valueStart:].
func (w *shWord) splitAssignment() {
	var name strings.Builder
	for i, p := range w.parts {
		if p.kind != partText || p.quoted {
			return
		}
		before, after, found := strings.Cut(p.text, "=")
		name.WriteString(before)
		if !found {
			continue
		}
		if !validShellName(name.String()) {
			return
		}
		w.assignName = name.String()
		parts := []shPart{{kind: partText, text: w.assignName + "=", line: w.line}}
		if after != "" {
			parts = append(parts, shPart{kind: partText, text: after, line: p.line})
		}
		w.parts = append(parts, w.parts[i+1:]...)
		w.valueStart = 1
		return
	}
}

// ---- lexer ----

type shTokKind int

const (
	tokEOF shTokKind = iota
	tokWord
	tokOp
	tokNewline
)

type shToken struct {
	kind shTokKind
	op   string
	word *shWord
	line int
}

type shHeredoc struct {
	delim string
	strip bool
}

type shLexer struct {
	src      string
	pos      int
	line     int
	heredocs []shHeredoc
	depth    int
	lines    []int // offset of each line, computed on the first resync
}

// maxShellDepth bounds nesting so hostile input cannot exhaust the stack.
const maxShellDepth = 100

type shSyntaxError struct {
	line int
	msg  string
	// assignName is the variable whose assignment the error cut short.
	assignName string
}

func (lx *shLexer) fail(line int, msg string) *shSyntaxError {
	return &shSyntaxError{line: line, msg: msg}
}

// enter guards recursion into nested quotes and expansions; leave undoes it.
func (lx *shLexer) enter() *shSyntaxError {
	lx.depth++
	if lx.depth > maxShellDepth {
		return lx.fail(lx.line, "quotes and expansions nested too deeply")
	}
	return nil
}

func (lx *shLexer) leave() { lx.depth-- }

func isShellBlank(c byte) bool { return c == ' ' || c == '\t' }

func isShellOpChar(c byte) bool {
	switch c {
	case ';', '&', '|', '(', ')', '<', '>':
		return true
	}
	return false
}

var shellOps = []string{"<<-", ";;", "&&", "||", "<<", ">>", "<&", ">&", "<>", ">|", ";", "&", "|", "(", ")", "<", ">"}

func (lx *shLexer) next() (shToken, *shSyntaxError) {
	for lx.pos < len(lx.src) {
		c := lx.src[lx.pos]
		if isShellBlank(c) {
			lx.pos++
		} else if c == '\\' && lx.pos+1 < len(lx.src) && lx.src[lx.pos+1] == '\n' {
			lx.pos += 2
			lx.line++
		} else {
			break
		}
	}
	if lx.pos >= len(lx.src) {
		return shToken{kind: tokEOF, line: lx.line}, nil
	}
	c := lx.src[lx.pos]
	switch {
	case c == '#':
		for lx.pos < len(lx.src) && lx.src[lx.pos] != '\n' {
			lx.pos++
		}
		return lx.next()
	case c == '\n':
		tok := shToken{kind: tokNewline, line: lx.line}
		lx.pos++
		lx.line++
		lx.readHeredocs()
		return tok, nil
	case isShellOpChar(c):
		for _, op := range shellOps {
			if strings.HasPrefix(lx.src[lx.pos:], op) {
				lx.pos += len(op)
				return shToken{kind: tokOp, op: op, line: lx.line}, nil
			}
		}
	}
	w, err := lx.readWord()
	w.flush()
	if err != nil {
		w.splitAssignment()
		err.assignName = w.assignName
		return shToken{}, err
	}
	if lit, ok := w.literal(); ok && lit != "" && strings.Trim(lit, "0123456789") == "" &&
		lx.pos < len(lx.src) && (lx.src[lx.pos] == '<' || lx.src[lx.pos] == '>') {
		w.ioNumber = true
	}
	w.splitAssignment()
	return shToken{kind: tokWord, word: w, line: w.line}, nil
}

// readHeredocs skips the bodies of here-documents started on the line just
// ended. A missing delimiter ends the body at end of file, as bash allows.
func (lx *shLexer) readHeredocs() {
	for _, h := range lx.heredocs {
		for lx.pos < len(lx.src) {
			end := strings.IndexByte(lx.src[lx.pos:], '\n')
			var text string
			if end < 0 {
				text = lx.src[lx.pos:]
				lx.pos = len(lx.src)
			} else {
				text = lx.src[lx.pos : lx.pos+end]
				lx.pos += end + 1
				lx.line++
			}
			if h.strip {
				text = strings.TrimLeft(text, "\t")
			}
			if text == h.delim {
				break
			}
		}
	}
	lx.heredocs = nil
}

func (lx *shLexer) readWord() (*shWord, *shSyntaxError) {
	w := &shWord{line: lx.line}
	for lx.pos < len(lx.src) {
		c := lx.src[lx.pos]
		switch {
		case isShellBlank(c) || c == '\n' || isShellOpChar(c):
			return w, nil
		case c == '\\':
			if lx.pos+1 >= len(lx.src) {
				w.addText(`\`, lx.line, false)
				lx.pos++
			} else if lx.src[lx.pos+1] == '\n' {
				lx.pos += 2
				lx.line++
			} else {
				w.addText(lx.src[lx.pos+1:lx.pos+2], lx.line, true)
				lx.pos += 2
			}
		case c == '\'':
			if err := lx.readSingle(w); err != nil {
				return w, err
			}
		case c == '"':
			if err := lx.readDouble(w); err != nil {
				return w, err
			}
		case c == '$':
			if err := lx.readDollar(w, false); err != nil {
				return w, err
			}
		case c == '`':
			if err := lx.readBacktick(w); err != nil {
				return w, err
			}
		default:
			w.addText(lx.src[lx.pos:lx.pos+1], lx.line, false)
			lx.pos++
		}
	}
	return w, nil
}

// addQuotedLines adds quoted text that may span lines, each line with its
// own number.
func (lx *shLexer) addQuotedLines(w *shWord, text string) {
	for text != "" {
		i := strings.IndexByte(text, '\n')
		if i < 0 {
			w.addText(text, lx.line, true)
			return
		}
		w.addText(text[:i+1], lx.line, true)
		lx.line++
		text = text[i+1:]
	}
}

func (lx *shLexer) readSingle(w *shWord) *shSyntaxError {
	start := lx.line
	end := strings.IndexByte(lx.src[lx.pos+1:], '\'')
	if end < 0 {
		return lx.fail(start, "unterminated single quote")
	}
	text := lx.src[lx.pos+1 : lx.pos+1+end]
	lx.pos += end + 2
	lx.addQuotedLines(w, text)
	return nil
}

func (lx *shLexer) readDouble(w *shWord) *shSyntaxError {
	defer lx.leave()
	if err := lx.enter(); err != nil {
		return err
	}
	start := lx.line
	lx.pos++
	for lx.pos < len(lx.src) {
		c := lx.src[lx.pos]
		switch c {
		case '"':
			lx.pos++
			return nil
		case '\\':
			if lx.pos+1 >= len(lx.src) {
				return lx.fail(start, "unterminated double quote")
			}
			switch n := lx.src[lx.pos+1]; n {
			case '$', '`', '"', '\\':
				w.addText(lx.src[lx.pos+1:lx.pos+2], lx.line, true)
				lx.pos += 2
			case '\n':
				lx.pos += 2
				lx.line++
			default:
				w.addText(`\`, lx.line, true)
				lx.pos++
			}
		case '$':
			if err := lx.readDollar(w, true); err != nil {
				return err
			}
		case '`':
			if err := lx.readBacktick(w); err != nil {
				return err
			}
		case '\n':
			w.addText("\n", lx.line, true)
			lx.line++
			lx.pos++
		default:
			w.addText(lx.src[lx.pos:lx.pos+1], lx.line, true)
			lx.pos++
		}
	}
	return lx.fail(start, "unterminated double quote")
}

func (lx *shLexer) readBacktick(w *shWord) *shSyntaxError {
	start := lx.line
	for i := lx.pos + 1; i < len(lx.src); i++ {
		switch lx.src[i] {
		case '\\':
			if i+1 < len(lx.src) && lx.src[i+1] == '\n' {
				lx.line++
			}
			i++
		case '\n':
			lx.line++
		case '`':
			lx.pos = i + 1
			w.addPart(shPart{kind: partUnknown, text: "command substitution `...`", line: start})
			return nil
		}
	}
	return lx.fail(start, "unterminated backquote")
}

// skipParens skips a $( ... ) or $(( ... )) body starting at the "(",
// honouring quotes; the text is never evaluated.
func (lx *shLexer) skipParens() *shSyntaxError {
	defer lx.leave()
	if err := lx.enter(); err != nil {
		return err
	}
	start := lx.line
	depth := 0
	for lx.pos < len(lx.src) {
		c := lx.src[lx.pos]
		switch c {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				lx.pos++
				return nil
			}
		case '\\':
			if lx.pos+1 < len(lx.src) && lx.src[lx.pos+1] == '\n' {
				lx.line++
			}
			lx.pos++
		case '\n':
			lx.line++
		case '\'':
			end := strings.IndexByte(lx.src[lx.pos+1:], '\'')
			if end < 0 {
				return lx.fail(start, "unterminated $(")
			}
			lx.line += strings.Count(lx.src[lx.pos+1:lx.pos+1+end], "\n")
			lx.pos += end + 1
		case '"':
			var scratch shWord
			if err := lx.readDouble(&scratch); err != nil {
				return lx.fail(start, "unterminated $(")
			}
			continue
		}
		lx.pos++
	}
	return lx.fail(start, "unterminated $(")
}

func isNameStart(c byte) bool { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }
func isNameChar(c byte) bool  { return isNameStart(c) || (c >= '0' && c <= '9') }

func (lx *shLexer) readName() string {
	start := lx.pos
	for lx.pos < len(lx.src) && isNameChar(lx.src[lx.pos]) {
		lx.pos++
	}
	return lx.src[start:lx.pos]
}

// readDollar reads an expansion starting at "$".
func (lx *shLexer) readDollar(w *shWord, inDouble bool) *shSyntaxError {
	line := lx.line
	if lx.pos+1 >= len(lx.src) {
		w.addText("$", line, inDouble)
		lx.pos++
		return nil
	}
	c := lx.src[lx.pos+1]
	switch {
	case c == '(':
		why := "command substitution $(...)"
		if strings.HasPrefix(lx.src[lx.pos+1:], "((") {
			why = "arithmetic expansion $((...))"
		}
		lx.pos++
		if err := lx.skipParens(); err != nil {
			return err
		}
		w.addPart(shPart{kind: partUnknown, text: why, line: line})
	case c == '{':
		p, err := lx.readBraced(inDouble)
		if err != nil {
			return err
		}
		w.addPart(shPart{kind: partParam, param: p, line: line})
	case isNameStart(c):
		lx.pos++
		w.addPart(shPart{kind: partParam, param: &shParam{name: lx.readName(), line: line}, line: line})
	case (c >= '0' && c <= '9') || strings.IndexByte("@*#?-$!", c) >= 0:
		lx.pos += 2
		w.addPart(shPart{kind: partParam, param: &shParam{name: string(c), line: line}, line: line})
	default:
		w.addText("$", line, inDouble)
		lx.pos++
	}
	return nil
}

// readBraced reads ${...} starting at "$".
func (lx *shLexer) readBraced(inDouble bool) (*shParam, *shSyntaxError) {
	start := lx.line
	defer lx.leave()
	if err := lx.enter(); err != nil {
		return nil, err
	}
	lx.pos += 2
	p := &shParam{line: start}
	if lx.pos >= len(lx.src) {
		return nil, lx.fail(start, "unterminated ${")
	}
	if lx.src[lx.pos] == '#' && lx.pos+1 < len(lx.src) && lx.src[lx.pos+1] != '}' {
		lx.pos++
		p.op = "#"
	}
	switch c := lx.src[lx.pos]; {
	case isNameStart(c):
		p.name = lx.readName()
	case c >= '0' && c <= '9':
		for lx.pos < len(lx.src) && lx.src[lx.pos] >= '0' && lx.src[lx.pos] <= '9' {
			lx.pos++
		}
		p.name = "1" // any positional parameter: only the running shell knows it
	case strings.IndexByte("@*#?-$!", c) >= 0:
		p.name = string(c)
		lx.pos++
	default:
		return nil, lx.fail(start, "bad substitution")
	}
	if lx.pos >= len(lx.src) {
		return nil, lx.fail(start, "unterminated ${")
	}
	if p.op == "#" {
		if lx.src[lx.pos] != '}' {
			return nil, lx.fail(start, "bad substitution")
		}
		lx.pos++
		return p, nil
	}
	rest := lx.src[lx.pos:]
	switch {
	case rest[0] == '}':
		lx.pos++
		return p, nil
	case strings.HasPrefix(rest, ":") && len(rest) > 1 && strings.IndexByte("-=+?", rest[1]) >= 0:
		p.op = rest[:2]
		lx.pos += 2
	case strings.IndexByte("-=+?", rest[0]) >= 0:
		p.op = rest[:1]
		lx.pos++
	case rest[0] == '%' || rest[0] == '#':
		p.op = "pattern"
		lx.pos++
		if lx.pos < len(lx.src) && lx.src[lx.pos] == rest[0] {
			lx.pos++
		}
	default:
		return nil, lx.fail(start, "bad substitution")
	}
	word, err := lx.readBraceWord(start, inDouble)
	if err != nil {
		return nil, err
	}
	p.word = word
	return p, nil
}

// readBraceWord reads the word of ${NAME op word} up to the closing brace.
// Inside double quotes a single quote is an ordinary character.
func (lx *shLexer) readBraceWord(start int, inDouble bool) ([]shPart, *shSyntaxError) {
	w := &shWord{line: lx.line}
	for lx.pos < len(lx.src) {
		c := lx.src[lx.pos]
		switch {
		case c == '}':
			lx.pos++
			w.flush()
			return w.parts, nil
		case c == '\\':
			if lx.pos+1 >= len(lx.src) {
				return nil, lx.fail(start, "unterminated ${")
			}
			if lx.src[lx.pos+1] == '\n' {
				lx.line++
			} else {
				w.addText(lx.src[lx.pos+1:lx.pos+2], lx.line, true)
			}
			lx.pos += 2
		case c == '\'' && !inDouble:
			if err := lx.readSingle(w); err != nil {
				return nil, err
			}
		case c == '"':
			if err := lx.readDouble(w); err != nil {
				return nil, err
			}
		case c == '$':
			if err := lx.readDollar(w, true); err != nil {
				return nil, err
			}
		case c == '`':
			if err := lx.readBacktick(w); err != nil {
				return nil, err
			}
		case c == '\n':
			w.addText("\n", lx.line, true)
			lx.line++
			lx.pos++
		default:
			w.addText(lx.src[lx.pos:lx.pos+1], lx.line, true)
			lx.pos++
		}
	}
	return nil, lx.fail(start, "unterminated ${")
}

// ---- parser ----

type shList struct{ items []shListItem }

type shListItem struct {
	andOr      *shAndOr
	background bool
}

type shAndOr struct {
	pipes []*shPipeline
	// ops[i] joins pipes[i] and pipes[i+1]: "&&" or "||".
	ops []string
}

type shPipeline struct {
	cmds   []shCmd
	line   int
	negate bool
}

// shCmd is *shSimple, *shCompound or *shFunc.
type shCmd any

type shSimple struct {
	assigns []shAssign
	words   []*shWord
	line    int
}

type shAssign struct {
	name  string
	value []shPart
	line  int
}

// shCompound is if, for, while, until, case, a { } group or a ( ) subshell.
type shCompound struct {
	kind     string
	lists    []*shList
	loopVars []string
	line     int
}

type shFunc struct {
	name string
	line int
}

type shParser struct {
	file  string
	lx    *shLexer
	tok   shToken
	err   *shSyntaxError
	depth int
	// assignNames are the variables assigned anywhere in the command being
	// parsed, so a syntax error can make them unknown.
	assignNames []string
	// open are the compound commands being parsed, innermost last.
	open []shOpen
}

type shOpen struct {
	word string
	line int
}

// opened records a compound command until closed is called.
func (p *shParser) opened(word string, line int) { p.open = append(p.open, shOpen{word, line}) }
func (p *shParser) closed()                      { p.open = p.open[:len(p.open)-1] }

func newShParser(file, src string) *shParser {
	p := &shParser{file: file, lx: &shLexer{src: src, line: 1}}
	p.advance()
	return p
}

func (p *shParser) advance() {
	if p.err != nil {
		return
	}
	tok, err := p.lx.next()
	if err != nil {
		p.err = err
		p.tok = shToken{kind: tokEOF, line: err.line}
		if err.assignName != "" {
			p.assignNames = append(p.assignNames, err.assignName)
		}
		return
	}
	if tok.kind == tokWord && tok.word.assignName != "" {
		p.assignNames = append(p.assignNames, tok.word.assignName)
	}
	p.tok = tok
}

// peekOp reports whether the token after the current one is op, without
// consuming anything.
func (p *shParser) peekOp(op string) bool {
	saved := *p.lx
	saved.heredocs = append([]shHeredoc(nil), p.lx.heredocs...)
	tok, err := p.lx.next()
	*p.lx = saved
	return err == nil && tok.kind == tokOp && tok.op == op
}

func (p *shParser) isOp(op string) bool { return p.tok.kind == tokOp && p.tok.op == op }

// isWord reports whether the current token is the unquoted word w, as a
// reserved word must be.
func (p *shParser) isWord(words ...string) bool {
	if p.tok.kind != tokWord {
		return false
	}
	lit, ok := p.tok.word.literal()
	if !ok {
		return false
	}
	for _, w := range words {
		if lit == w {
			return true
		}
	}
	return false
}

func (p *shParser) syntaxError(format string, args ...any) *GrubError {
	if p.err != nil {
		return newGrubError(p.file, p.err.line, "%s", p.err.msg)
	}
	return newGrubError(p.file, p.tok.line, format, args...)
}

func (p *shParser) unexpected() *GrubError {
	switch p.tok.kind {
	case tokEOF:
		return p.syntaxError("unexpected end of file")
	case tokNewline:
		return p.syntaxError("unexpected newline")
	case tokOp:
		return p.syntaxError("%q unexpected", p.tok.op)
	}
	lit, _ := p.tok.word.literal()
	return p.syntaxError("%q unexpected", lit)
}

// nextCommand parses the next complete command: one line, or more when a
// compound command or quote spans lines. It returns nil at end of file.
func (p *shParser) nextCommand() (*shList, *GrubError) {
	// The current token was read ahead and belongs to this command.
	p.assignNames = nil
	if p.tok.kind == tokWord && p.tok.word.assignName != "" {
		p.assignNames = append(p.assignNames, p.tok.word.assignName)
	}
	if p.err != nil && p.err.assignName != "" {
		p.assignNames = append(p.assignNames, p.err.assignName)
	}
	for p.tok.kind == tokNewline {
		p.advance()
	}
	if p.err != nil {
		return nil, p.syntaxError("")
	}
	if p.tok.kind == tokEOF {
		return nil, nil
	}
	list := &shList{}
	for {
		ao, err := p.parseAndOr()
		if err != nil {
			return nil, err
		}
		item := shListItem{andOr: ao}
		separated := p.isOp(";") || p.isOp("&")
		if separated {
			item.background = p.tok.op == "&"
			p.advance()
		}
		list.items = append(list.items, item)
		if p.err != nil {
			return nil, p.syntaxError("")
		}
		if p.tok.kind == tokNewline || p.tok.kind == tokEOF {
			return list, nil
		}
		if !separated {
			return nil, p.unexpected()
		}
	}
}

// resync skips past the line of a syntax error so the rest of the file is
// still read. It reports false when nothing is left.
func (p *shParser) resync(line int) bool {
	lx := p.lx
	if p.err != nil {
		// The lexer stopped inside a construct that started on line; go
		// back to the line after it.
		lx.pos, lx.line = lx.lineStart(line+1), line+1
	} else if lx.line <= line {
		for lx.pos < len(lx.src) && lx.src[lx.pos] != '\n' {
			lx.pos++
		}
	}
	lx.heredocs = nil
	lx.depth = 0
	p.err = nil
	p.depth = 0
	p.open = nil
	p.tok = shToken{kind: tokNewline, line: lx.line}
	return lx.pos < len(lx.src)
}

// lineStart is the offset where line n (1-based) begins.
func (lx *shLexer) lineStart(n int) int {
	if lx.lines == nil {
		lx.lines = []int{0}
		for i := 0; i < len(lx.src); i++ {
			if lx.src[i] == '\n' {
				lx.lines = append(lx.lines, i+1)
			}
		}
	}
	if n-1 >= len(lx.lines) {
		return len(lx.src)
	}
	return lx.lines[n-1]
}

func (p *shParser) skipNewlines() {
	for p.tok.kind == tokNewline {
		p.advance()
	}
}

func (p *shParser) parseAndOr() (*shAndOr, *GrubError) {
	ao := &shAndOr{}
	for {
		pl, err := p.parsePipeline()
		if err != nil {
			return nil, err
		}
		ao.pipes = append(ao.pipes, pl)
		if !p.isOp("&&") && !p.isOp("||") {
			return ao, nil
		}
		if p.isOp("&&") {
			ao.ops = append(ao.ops, "&&")
		} else {
			ao.ops = append(ao.ops, "||")
		}
		p.advance()
		p.skipNewlines()
	}
}

func (p *shParser) parsePipeline() (*shPipeline, *GrubError) {
	pl := &shPipeline{line: p.tok.line}
	if p.isWord("!") {
		pl.negate = true
		p.advance()
	}
	for {
		c, err := p.parseCommand()
		if err != nil {
			return nil, err
		}
		pl.cmds = append(pl.cmds, c)
		if !p.isOp("|") {
			return pl, nil
		}
		p.advance()
		p.skipNewlines()
	}
}

func (p *shParser) parseCommand() (shCmd, *GrubError) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxShellDepth {
		return nil, p.syntaxError("commands nested too deeply")
	}
	if p.err != nil {
		return nil, p.syntaxError("")
	}
	line := p.tok.line
	var c *shCompound
	var err *GrubError
	switch {
	case p.isOp("("):
		p.advance()
		c = &shCompound{kind: "(", line: line}
		p.opened("(", line)
		err = p.body(c, ")")
		p.closed()
	case p.isWord("{"):
		p.advance()
		c = &shCompound{kind: "{", line: line}
		p.opened("{", line)
		err = p.body(c, "}")
		p.closed()
	case p.isWord("if"):
		c, err = p.parseIf()
	case p.isWord("while", "until"):
		c, err = p.parseLoop()
	case p.isWord("for"):
		c, err = p.parseFor()
	case p.isWord("case"):
		c, err = p.parseCase()
	case p.isWord("then", "else", "elif", "fi", "do", "done", "esac", "}"):
		return nil, p.unexpected()
	case p.tok.kind == tokWord:
		if lit, ok := p.tok.word.literal(); ok && validFuncName(lit) && p.peekOp("(") {
			return p.parseFunc(lit)
		}
		return p.parseSimple()
	default:
		if p.tok.kind == tokOp && isRedirect(p.tok.op) {
			return p.parseSimple()
		}
		return nil, p.unexpected()
	}
	if err != nil {
		return nil, err
	}
	return c, p.redirects()
}

func validFuncName(s string) bool {
	return validShellName(s) && !reservedWords[s]
}

var reservedWords = map[string]bool{
	"if": true, "then": true, "else": true, "elif": true, "fi": true, "do": true, "done": true,
	"case": true, "esac": true, "while": true, "until": true, "for": true, "in": true,
	"{": true, "}": true, "!": true,
}

func isRedirect(op string) bool {
	switch op {
	case "<", ">", ">>", "<&", ">&", "<>", ">|", "<<", "<<-":
		return true
	}
	return false
}

// redirects consumes redirections after a command; here-document bodies
// are skipped by the lexer at the end of the line.
func (p *shParser) redirects() *GrubError {
	for {
		if p.tok.kind == tokWord && p.tok.word.ioNumber {
			p.advance()
			continue
		}
		if p.tok.kind != tokOp || !isRedirect(p.tok.op) {
			return nil
		}
		op := p.tok.op
		p.advance()
		if p.tok.kind != tokWord {
			return p.unexpected()
		}
		if op == "<<" || op == "<<-" {
			var delim strings.Builder
			for _, part := range p.tok.word.parts {
				if part.kind == partParam {
					delim.WriteString("$" + part.param.name)
				} else {
					delim.WriteString(part.text)
				}
			}
			p.lx.heredocs = append(p.lx.heredocs, shHeredoc{delim: delim.String(), strip: op == "<<-"})
		}
		p.advance()
	}
}

func (p *shParser) parseSimple() (*shSimple, *GrubError) {
	s := &shSimple{line: p.tok.line}
	for {
		if err := p.redirects(); err != nil {
			return nil, err
		}
		if p.tok.kind != tokWord {
			break
		}
		w := p.tok.word
		if len(s.words) == 0 && w.assignName != "" {
			s.assigns = append(s.assigns, shAssign{name: w.assignName, value: w.parts[w.valueStart:], line: w.line})
		} else {
			s.words = append(s.words, w)
		}
		p.advance()
	}
	if p.err != nil {
		return nil, p.syntaxError("")
	}
	if len(s.words) == 0 && len(s.assigns) == 0 && !(p.tok.kind == tokNewline || p.tok.kind == tokEOF || p.isOp(";") || p.isOp("&") || p.isOp("|") || p.isOp("&&") || p.isOp("||") || p.isOp(")")) {
		return nil, p.unexpected()
	}
	if p.isOp("(") {
		// NAME=(a b) is a bash array, a syntax error for /bin/sh.
		return nil, p.unexpected()
	}
	return s, nil
}

func (p *shParser) parseFunc(name string) (shCmd, *GrubError) {
	line := p.tok.line
	p.advance() // name
	p.advance() // (
	if !p.isOp(")") {
		return nil, p.unexpected()
	}
	p.advance()
	p.skipNewlines()
	body, err := p.parseCommand()
	if err != nil {
		return nil, err
	}
	if _, ok := body.(*shCompound); !ok {
		return nil, newGrubError(p.file, line, "function %s has no compound body", name)
	}
	return &shFunc{name: name, line: line}, nil
}

// compoundList parses commands until one of the reserved words (or ")"),
// which is left as the current token.
func (p *shParser) compoundList(stops ...string) (*shList, *GrubError) {
	list := &shList{}
	p.skipNewlines()
	for {
		if p.err != nil {
			return nil, p.syntaxError("")
		}
		if p.tok.kind == tokEOF {
			if n := len(p.open); n > 0 {
				o := p.open[n-1]
				return nil, newGrubError(p.file, o.line, "%q is not closed (expecting %q)", o.word, stops[0])
			}
			return nil, p.syntaxError("unexpected end of file (expecting %q)", stops[0])
		}
		if p.atStop(stops) {
			return list, nil
		}
		ao, err := p.parseAndOr()
		if err != nil {
			return nil, err
		}
		item := shListItem{andOr: ao}
		switch {
		case p.isOp(";"), p.isOp("&"), p.tok.kind == tokNewline:
			item.background = p.isOp("&")
			p.advance()
		case p.atStop(stops):
		default:
			return nil, p.unexpected()
		}
		list.items = append(list.items, item)
		p.skipNewlines()
	}
}

func (p *shParser) atStop(stops []string) bool {
	for _, s := range stops {
		if (s == ")" || s == ";;") && p.isOp(s) {
			return true
		}
		if p.isWord(s) {
			return true
		}
	}
	return false
}

func (p *shParser) expect(word string) *GrubError {
	if word == ")" && p.isOp(")") || p.isWord(word) {
		p.advance()
		return nil
	}
	return p.unexpected()
}

// body parses a list closed by end into c.
func (p *shParser) body(c *shCompound, end string) *GrubError {
	l, err := p.compoundList(end)
	if err != nil {
		return err
	}
	c.lists = append(c.lists, l)
	return p.expect(end)
}

func (p *shParser) parseIf() (*shCompound, *GrubError) {
	c := &shCompound{kind: "if", line: p.tok.line}
	p.opened("if", c.line)
	defer p.closed()
	p.advance()
	for {
		cond, err := p.compoundList("then")
		if err != nil {
			return nil, err
		}
		if err := p.expect("then"); err != nil {
			return nil, err
		}
		body, err := p.compoundList("fi", "elif", "else")
		if err != nil {
			return nil, err
		}
		c.lists = append(c.lists, cond, body)
		if p.isWord("elif") {
			p.advance()
			continue
		}
		if p.isWord("else") {
			p.advance()
			if err := p.body(c, "fi"); err != nil {
				return nil, err
			}
			return c, nil
		}
		return c, p.expect("fi")
	}
}

func (p *shParser) parseLoop() (*shCompound, *GrubError) {
	lit, _ := p.tok.word.literal()
	c := &shCompound{kind: lit, line: p.tok.line}
	p.opened(lit, c.line)
	defer p.closed()
	p.advance()
	cond, err := p.compoundList("do")
	if err != nil {
		return nil, err
	}
	c.lists = append(c.lists, cond)
	if err := p.expect("do"); err != nil {
		return nil, err
	}
	return c, p.body(c, "done")
}

func (p *shParser) parseFor() (*shCompound, *GrubError) {
	c := &shCompound{kind: "for", line: p.tok.line}
	p.opened("for", c.line)
	defer p.closed()
	p.advance()
	name, ok := "", p.tok.kind == tokWord
	if ok {
		name, ok = p.tok.word.literal()
	}
	if !ok || !validShellName(name) {
		return nil, p.unexpected()
	}
	c.loopVars = []string{name}
	p.assignNames = append(p.assignNames, name)
	p.advance()
	p.skipNewlines()
	if p.isWord("in") {
		p.advance()
		for p.tok.kind == tokWord {
			p.advance()
		}
		if !p.isOp(";") && p.tok.kind != tokNewline {
			return nil, p.unexpected()
		}
		p.advance()
	} else if p.isOp(";") {
		p.advance()
	}
	p.skipNewlines()
	if err := p.expect("do"); err != nil {
		return nil, err
	}
	return c, p.body(c, "done")
}

func (p *shParser) parseCase() (*shCompound, *GrubError) {
	c := &shCompound{kind: "case", line: p.tok.line}
	p.opened("case", c.line)
	defer p.closed()
	p.advance()
	if p.tok.kind != tokWord {
		return nil, p.unexpected()
	}
	p.advance()
	p.skipNewlines()
	if err := p.expect("in"); err != nil {
		return nil, err
	}
	p.skipNewlines()
	for !p.isWord("esac") {
		if p.isOp("(") {
			p.advance()
		}
		for {
			if p.tok.kind != tokWord {
				return nil, p.unexpected()
			}
			p.advance()
			if !p.isOp("|") {
				break
			}
			p.advance()
		}
		if err := p.expect(")"); err != nil {
			return nil, err
		}
		l, err := p.compoundList("esac", ";;")
		if err != nil {
			return nil, err
		}
		c.lists = append(c.lists, l)
		if p.isOp(";;") {
			p.advance()
		}
		p.skipNewlines()
	}
	p.advance()
	return c, nil
}
