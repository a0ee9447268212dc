// Package shellparse reads shell configuration files (GRUB defaults,
// profile.d scripts) with mvdan.cc/sh/v3/syntax, one complete command at a
// time. A shell that sources such a file runs what it has read before it
// meets a syntax error; the collectors want that too, and more: the
// commands after a broken line are still read, so one typo costs the
// variables of its own command and not the whole file. The package parses
// only; what a command does is the caller's evaluator's business.
package shellparse

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// MaxDepth bounds the nesting of brackets and compound commands. The
// parser recurses per level; hostile input (a megabyte of "$((") would
// otherwise cost seconds and gigabytes.
const MaxDepth = 1000

// Command is a complete command: the statements of one line, or of several
// when a compound command or a quote spans lines.
type Command struct {
	Stmts []*syntax.Stmt
	s     *Script
	base  int // offset in the file of the parse the nodes come from
}

// Line is the line in the file of a position in the command's nodes.
func (c *Command) Line(p syntax.Pos) int { return c.s.lineOf(c.base + int(p.Offset())) }

// Raw is the source text from one position of the command to another.
func (c *Command) Raw(from, to syntax.Pos) string {
	a, b := c.base+int(from.Offset()), c.base+int(to.Offset())
	if a < 0 || b > len(c.s.src) || a > b {
		return ""
	}
	return c.s.src[a:b]
}

// Offset is the offset in the file of a position in the command's nodes.
func (c *Command) Offset(p syntax.Pos) int { return c.base + int(p.Offset()) }

// Error is a syntax error: the command it is in is not run.
type Error struct {
	Line int
	Msg  string
	// Names are the variables the broken command assigns, as far as it
	// could be read: after the error they hold what no one can know.
	Names []string
	// Stop is set when nothing after the error is read.
	Stop bool
	// Lang is the shell whose feature the line uses ("bash", "mksh"), ""
	// for an error in every shell.
	Lang string
	// Limit is set when the file exceeds this parser's bounds: a shell may
	// read it.
	Limit bool
}

func (e *Error) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

// Script reads one file command by command.
type Script struct {
	src string
	// parsed is src with bytes that are not UTF-8 replaced, one for one:
	// the library refuses them, a shell takes them as word characters
	// (a Latin-1 comment is no error). Text is taken from src.
	parsed string
	lang   syntax.LangVariant
	lines  []int // offset where each line starts
	off    int   // where the next parse starts
	end    int   // what is read: the file, or up to a line nested too deeply
	deep   *Error
	queue  []*Command
	err    *Error // ends the queue
	done   bool
}

// New prepares src for reading as the given shell language.
func New(src []byte, lang syntax.LangVariant) *Script {
	s := &Script{src: string(src), parsed: validUTF8(src), lang: lang, lines: []int{0}}
	for i := 0; i < len(s.src); i++ {
		if s.src[i] == '\n' {
			s.lines = append(s.lines, i+1)
		}
	}
	s.end = len(s.src)
	if off := tooDeep(s.src); off >= 0 {
		line := s.lineOf(off)
		s.end = s.lines[line-1]
		s.deep = &Error{Line: line, Msg: "nested too deeply; the rest of the file is not read", Stop: true, Limit: true}
	}
	return s
}

// validUTF8 replaces each byte that is not part of a UTF-8 character with
// ',', which is a word character and nothing else in every position.
func validUTF8(src []byte) string {
	if utf8.Valid(src) {
		return string(src)
	}
	b := []byte(string(src))
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			b[i] = ','
		}
		i += size
	}
	return string(b)
}

// lineOf is the line (from 1) holding offset off.
func (s *Script) lineOf(off int) int {
	return sort.Search(len(s.lines), func(i int) bool { return s.lines[i] > off })
}

// lineStart is the offset of line n, or the end of the file.
func (s *Script) lineStart(n int) int {
	if n-1 < len(s.lines) && n >= 1 {
		return s.lines[n-1]
	}
	return len(s.src)
}

// Next returns the next command, or a syntax error, or (nil, nil) at the
// end of the file. After an error, reading goes on past the broken command
// unless the error says Stop.
func (s *Script) Next() (*Command, *Error) {
	for {
		if len(s.queue) > 0 {
			c := s.queue[0]
			s.queue = s.queue[1:]
			return c, nil
		}
		if s.err != nil {
			e := s.err
			s.err = nil
			return nil, e
		}
		if s.done {
			return nil, nil
		}
		s.parse()
	}
}

// parse reads from s.off to the next syntax error, queueing the complete
// commands before it and the error.
func (s *Script) parse() {
	if s.off >= s.end {
		s.done = true
		if s.deep != nil {
			s.err, s.deep = s.deep, nil
		}
		return
	}
	base := s.off
	text := s.parsed[base:s.end]
	var group []*syntax.Stmt
	groupStart := base // where the command being grouped starts
	flush := func(at int) {
		if len(group) > 0 {
			s.queue = append(s.queue, &Command{Stmts: group, s: s, base: base})
		}
		group = nil
		groupStart = at
	}
	p := syntax.NewParser(syntax.Variant(s.lang))
	var err error
	// The iterator is run to its end: it may yield more than one error, and
	// stopping it early makes it panic.
	for st, e := range p.StmtsSeq(strings.NewReader(text)) {
		if err != nil {
			continue
		}
		if e != nil {
			err = e
			continue
		}
		group = append(group, st)
		end := base + int(st.End().Offset())
		if rest, ok := restOfLine(s.src[end:s.end]); ok {
			flush(end + rest)
		}
	}
	if err == nil {
		flush(s.end)
		s.off = s.end
		return
	}
	// The statements grouped with the broken one share its line: they are
	// not run either.
	group = nil
	e, resume := s.syntaxError(err, base, groupStart)
	s.err = e
	s.off = resume
}

// restOfLine reports whether only blanks or a comment follow up to the end
// of the line, and the length of that rest.
func restOfLine(s string) (int, bool) {
	i := 0
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r') {
		i++
	}
	if i < len(s) && s[i] == '#' {
		for i < len(s) && s[i] != '\n' {
			i++
		}
	}
	if i == len(s) {
		return i, true
	}
	return i + 1, s[i] == '\n'
}

var (
	reReserved = regexp.MustCompile("^`([^`]+)` can only be used")
	reMatching = regexp.MustCompile("without matching `([^`]+)` with")
)

// syntaxError turns the library's error into one in the words of a shell
// (the messages the collectors have always given) and says where reading
// goes on: after the line of an unclosed quote or expansion, as a shell
// reading line by line reports it; nowhere after a compound command left
// open at the end of the file, which swallows the rest.
func (s *Script) syntaxError(err error, base, start int) (*Error, int) {
	var pos syntax.Pos
	var msg, featureOf string
	incomplete := false
	switch e := err.(type) {
	case syntax.ParseError:
		pos, msg, incomplete = e.Pos, e.Text, e.Incomplete
	case syntax.LangError:
		pos = e.Pos
		lang := "bash"
		if len(e.Langs) > 0 {
			lang = e.Langs[0].String()
		}
		featureOf = lang
		msg = fmt.Sprintf("%s: a %s feature; /bin/sh does not accept it", e.Feature, lang)
		if e.Feature == "arrays" {
			msg = `"(" unexpected`
		}
	default:
		return &Error{Line: s.lineOf(start), Msg: err.Error(), Stop: true}, s.end
	}
	off := base + int(pos.Offset())
	if off < start {
		off = start
	}
	line := s.lineOf(off)
	resume := s.lineStart(line + 1)
	cut := off
	switch {
	case strings.Contains(msg, "without closing quote"):
		switch s.src[min(off, len(s.src)-1)] {
		case '"':
			msg = "unterminated double quote"
		case '\'':
			msg = "unterminated single quote"
		case '`':
			msg = "unterminated backquote"
		}
	case reReserved.MatchString(msg):
		msg = fmt.Sprintf("%q unexpected", reReserved.FindStringSubmatch(msg)[1])
	case strings.Contains(msg, "parameter expansion") || strings.Contains(msg, "parameter name") ||
		strings.Contains(msg, "cannot be followed by a word"):
		msg = "bad substitution"
	case incomplete:
		if open := s.unclosed(start); open != nil {
			line, msg = open.line, fmt.Sprintf("%q is not closed (expecting %q)", open.word, open.want)
			cut, resume = s.end, s.end
			break
		}
		if m := reMatching.FindStringSubmatch(msg); m != nil {
			msg = "unterminated " + m[1]
		}
	}
	return &Error{Line: line, Msg: msg, Names: s.names(start, cut), Lang: featureOf}, resume
}

type openCompound struct {
	word, want string
	line       int
}

// unclosed finds the innermost compound command the file leaves open, by
// parsing from start again with the library's recovery of missing closing
// words.
func (s *Script) unclosed(start int) *openCompound {
	p := syntax.NewParser(syntax.Variant(s.lang), syntax.RecoverErrors(MaxDepth))
	f, err := p.Parse(strings.NewReader(s.parsed[start:s.end]), "")
	if err != nil || f == nil {
		return nil
	}
	var found *openCompound
	at := func(p syntax.Pos, word, want string) {
		found = &openCompound{word, want, s.lineOf(start + int(p.Offset()))}
	}
	eachCommand(f.Stmts, func(c syntax.Command) {
		switch n := c.(type) {
		case *syntax.IfClause:
			if n.ThenPos.IsRecovered() {
				at(n.Position, "if", "then")
			} else if n.FiPos.IsRecovered() && n.ThenPos.IsValid() {
				at(n.Position, "if", "fi")
			}
		case *syntax.WhileClause:
			word := "while"
			if n.Until {
				word = "until"
			}
			if n.DoPos.IsRecovered() {
				at(n.WhilePos, word, "do")
			} else if n.DonePos.IsRecovered() {
				at(n.WhilePos, word, "done")
			}
		case *syntax.ForClause:
			if n.DoPos.IsRecovered() {
				at(n.ForPos, "for", "do")
			} else if n.DonePos.IsRecovered() {
				at(n.ForPos, "for", "done")
			}
		case *syntax.CaseClause:
			if n.Esac.IsRecovered() {
				at(n.Case, "case", "esac")
			}
		case *syntax.Block:
			if n.Rbrace.IsRecovered() {
				at(n.Lbrace, "{", "}")
			}
		case *syntax.Subshell:
			if n.Rparen.IsRecovered() {
				at(n.Lparen, "(", ")")
			}
		}
	})
	return found
}

// names lists the variables assigned in src[start:cut], the readable part
// of a broken command: the text is cut at each error until it parses.
func (s *Script) names(start, cut int) []string {
	text := s.parsed[start:min(cut, s.end)]
	for range 8 {
		p := syntax.NewParser(syntax.Variant(s.lang), syntax.RecoverErrors(MaxDepth))
		f, err := p.Parse(strings.NewReader(text), "")
		if err == nil {
			return AssignedNames(f.Stmts)
		}
		var pos syntax.Pos
		switch e := err.(type) {
		case syntax.ParseError:
			pos = e.Pos
		case syntax.LangError:
			pos = e.Pos
		default:
			return nil
		}
		n := int(pos.Offset())
		if n >= len(text) {
			n = len(text) - 1
		}
		if n < 0 {
			return nil
		}
		text = text[:n]
	}
	return nil
}

// AssignedNames lists every variable the statements may assign in this
// shell: assignments, words shaped NAME=value in any position (export and
// readonly take them), for loop variables. It over-approximates on
// purpose: it is for making variables unknown.
func AssignedNames(stmts []*syntax.Stmt) []string {
	var names []string
	add := func(name string) {
		// The library takes "for 0 in" and recovered nodes; the shell does not.
		if ValidName(name) {
			names = append(names, name)
		}
	}
	assigns := func(as []*syntax.Assign) {
		for _, a := range as {
			if a.Name != nil {
				add(a.Name.Value)
			}
		}
	}
	eachCommand(stmts, func(c syntax.Command) {
		switch n := c.(type) {
		case *syntax.CallExpr:
			assigns(n.Assigns)
			for _, w := range n.Args {
				if len(w.Parts) == 0 {
					continue
				}
				if lit, ok := w.Parts[0].(*syntax.Lit); ok {
					if name, _, found := strings.Cut(lit.Value, "="); found {
						add(name)
					}
				}
			}
		case *syntax.DeclClause:
			assigns(n.Args)
		case *syntax.ForClause:
			if it, ok := n.Loop.(*syntax.WordIter); ok && it.Name != nil {
				add(it.Name.Value)
			}
		}
	})
	return names
}

// eachCommand calls fn for every command in stmts and in the compound
// commands among them, in order, without descending into words. It keeps
// its own stack: "a && b && ..." nests as deep as it is long.
func eachCommand(stmts []*syntax.Stmt, fn func(syntax.Command)) {
	var stack []*syntax.Stmt
	push := func(l []*syntax.Stmt) {
		for i := len(l) - 1; i >= 0; i-- {
			stack = append(stack, l[i])
		}
	}
	push(stmts)
	for len(stack) > 0 {
		st := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if st == nil || st.Cmd == nil {
			continue
		}
		fn(st.Cmd)
		switch n := st.Cmd.(type) {
		case *syntax.BinaryCmd:
			push([]*syntax.Stmt{n.X, n.Y})
		case *syntax.IfClause:
			var l []*syntax.Stmt
			for c := n; c != nil; c = c.Else {
				l = append(append(l, c.Cond...), c.Then...)
			}
			push(l)
		case *syntax.WhileClause:
			push(append(append([]*syntax.Stmt(nil), n.Cond...), n.Do...))
		case *syntax.ForClause:
			push(n.Do)
		case *syntax.CaseClause:
			var l []*syntax.Stmt
			for _, item := range n.Items {
				l = append(l, item.Stmts...)
			}
			push(l)
		case *syntax.Block:
			push(n.Stmts)
		case *syntax.Subshell:
			push(n.Stmts)
		case *syntax.FuncDecl:
			push([]*syntax.Stmt{n.Body})
		}
	}
}

// ValidName reports whether s is a shell variable name.
func ValidName(s string) bool {
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

// tooDeep returns the offset where brackets and compound commands nest
// deeper than MaxDepth, or -1. It over-counts (quotes are not followed),
// which is safe: real configuration does not nest a hundredth as deep.
func tooDeep(src string) int {
	depth := 0
	wordStart := true
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case c == '#' && wordStart:
			for i < len(src) && src[i] != '\n' {
				i++
			}
			wordStart = true
			continue
		case c == '(' || c == '{':
			depth++
		case c == ')' || c == '}':
			depth = max(depth-1, 0)
		case wordStart && isLetter(c):
			j := i
			for j < len(src) && isLetter(src[j]) {
				j++
			}
			if j == len(src) || strings.IndexByte(" \t\n;&|()", src[j]) >= 0 {
				switch src[i:j] {
				case "if", "while", "until", "for", "case":
					depth++
				case "fi", "done", "esac":
					depth = max(depth-1, 0)
				}
			}
			i = j - 1
			c = src[i]
		}
		if depth > MaxDepth {
			return i
		}
		wordStart = strings.IndexByte(" \t\n;&|(){}`", c) >= 0
	}
	return -1
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' }
