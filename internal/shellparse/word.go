package shellparse

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// PieceKind says what a piece of a word is.
type PieceKind int

const (
	Text    PieceKind = iota // literal text, quotes removed
	Param                    // a parameter expansion
	Unknown                  // command substitution or arithmetic: known only by running it
)

// Piece is a part of a word after quote removal, with the line it was
// written on: what an evaluator that tracks provenance needs. The library
// keeps literal text as written (escapes and escaped newlines included);
// pieces are made from that raw source so every character keeps its line.
type Piece struct {
	Kind   PieceKind
	Text   string // Text: the characters; Unknown: what the expansion is
	Line   int
	Quoted bool
	// Param: ${Name Op Word}. Op is "" ($NAME), "#" (length), one of
	// - :- = := + :+ ? :?, "pattern" (% %% # ##) or "unsupported".
	Name, Op string
	Word     []Piece
}

type quoting int

const (
	unquoted quoting = iota
	inDouble
	inBrace // the word of ${NAME op word}
)

// Pieces splits a word into pieces.
func (c *Command) Pieces(w *syntax.Word) []Piece {
	if w == nil {
		return nil
	}
	return c.pieces(nil, w.Parts, unquoted)
}

func (c *Command) pieces(out []Piece, parts []syntax.WordPart, q quoting) []Piece {
	for _, part := range parts {
		switch p := part.(type) {
		case *syntax.Lit:
			out = c.unescape(out, c.Offset(p.ValuePos), c.Raw(p.ValuePos, p.ValueEnd), q)
		case *syntax.SglQuoted:
			from := c.Offset(p.Left) + 1
			if p.Dollar {
				from++
			}
			out = c.literal(out, from, c.s.src[from:max(from, c.Offset(p.Right))])
		case *syntax.DblQuoted:
			out = c.pieces(out, p.Parts, inDouble)
		case *syntax.ParamExp:
			out = append(out, c.param(p))
		case *syntax.CmdSubst:
			why := "command substitution $(...)"
			if p.Backquotes {
				why = "command substitution `...`"
			}
			out = append(out, Piece{Kind: Unknown, Text: why, Line: c.Line(p.Left)})
		case *syntax.ArithmExp:
			out = append(out, Piece{Kind: Unknown, Text: "arithmetic expansion $((...))", Line: c.Line(p.Left)})
		default:
			out = append(out, Piece{Kind: Unknown, Text: "an expansion /bin/sh does not have", Line: c.Line(part.Pos())})
		}
	}
	return out
}

func (c *Command) param(p *syntax.ParamExp) Piece {
	piece := Piece{Kind: Param, Line: c.Line(p.Dollar)}
	if p.Param != nil {
		piece.Name = p.Param.Value
	}
	switch {
	case p.Excl || p.Width || p.IsSet || p.Index != nil || p.Slice != nil || p.Repl != nil ||
		p.Names != 0 || p.NestedParam != nil || len(p.Modifiers) > 0:
		piece.Op = "unsupported"
	case p.Length:
		piece.Op = "#"
	case p.Exp != nil:
		switch op := p.Exp.Op.String(); op {
		case "-", ":-", "=", ":=", "+", ":+", "?", ":?":
			piece.Op = op
			if p.Exp.Word != nil {
				piece.Word = c.pieces(nil, p.Exp.Word.Parts, inBrace)
			}
		case "%", "%%", "#", "##":
			piece.Op = "pattern"
		default:
			piece.Op = "unsupported"
		}
	}
	return piece
}

// add appends text written on line, joining it to the last piece when that
// one is alike.
func add(out []Piece, text string, line int, quoted bool) []Piece {
	if n := len(out); n > 0 && out[n-1].Kind == Text && out[n-1].Line == line && out[n-1].Quoted == quoted {
		out[n-1].Text += text
		return out
	}
	return append(out, Piece{Kind: Text, Text: text, Line: line, Quoted: quoted})
}

// literal adds single-quoted text, which may span lines.
func (c *Command) literal(out []Piece, off int, raw string) []Piece {
	line := c.s.lineOf(off)
	for raw != "" {
		i := strings.IndexByte(raw, '\n')
		if i < 0 {
			return add(out, raw, line, true)
		}
		out = add(out, raw[:i+1], line, true)
		raw = raw[i+1:]
		line++
	}
	return out
}

// unescape removes backslashes as the shell does where the text stands:
// unquoted, a backslash quotes the next character; in double quotes only
// before $ ` " \ and a newline; in ${NAME op word}, before anything.
func (c *Command) unescape(out []Piece, off int, raw string, q quoting) []Piece {
	line := c.s.lineOf(off)
	start := 0 // of the run not yet added
	flush := func(end int) {
		if end > start {
			out = add(out, raw[start:end], line, q != unquoted)
		}
	}
	for i := 0; i < len(raw); i++ {
		switch raw[i] {
		case '\n':
			flush(i + 1)
			start = i + 1
			line++
		case '\\':
			if i+1 >= len(raw) {
				// The library ends a literal before an escaped newline.
				if at := off + i + 1; at < len(c.s.src) && c.s.src[at] == '\n' {
					flush(i)
					start = len(raw)
				}
				continue
			}
			next := raw[i+1]
			if next == '\n' {
				flush(i)
				i++
				start = i + 1
				line++
				continue
			}
			if q == inDouble && strings.IndexByte("$`\"\\", next) < 0 {
				continue
			}
			flush(i)
			out = add(out, raw[i+1:i+2], line, true)
			i++
			start = i + 1
		}
	}
	flush(len(raw))
	return out
}

// SplitAssign recognises NAME=value in an argument (export A=b): the name
// and "=" unquoted. value is the pieces after the "=".
func SplitAssign(pieces []Piece) (name string, value []Piece, ok bool) {
	var b strings.Builder
	for i, p := range pieces {
		if p.Kind != Text || p.Quoted {
			return "", nil, false
		}
		before, after, found := strings.Cut(p.Text, "=")
		b.WriteString(before)
		if !found {
			continue
		}
		if !ValidName(b.String()) {
			return "", nil, false
		}
		if after != "" {
			value = append(value, Piece{Kind: Text, Text: after, Line: p.Line})
		}
		return b.String(), append(value, pieces[i+1:]...), true
	}
	return "", nil, false
}
