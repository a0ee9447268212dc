package reports

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/mattn/go-runewidth"
	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// DefaultWidth is what text wraps to when Options.Width is not set.
const DefaultWidth = 80

// Escape makes one value from a host, a repo or a policy safe to print on a
// terminal: control characters (C0 including newline and tab, DEL, C1),
// characters that reorder or split lines (bidi controls, U+2028/9) and bytes
// that are not UTF-8 are written as Go escapes (\x1b, \u0085), so content
// cannot retitle a window, clear the screen, hide text or fake a line.
func Escape(s string) string { return escape(s, false) }

// EscapeText is Escape for text whose line breaks are meant: newlines stay.
func EscapeText(s string) string { return escape(s, true) }

func escape(s string, keepNewline bool) string {
	if !needsEscape(s, keepNewline) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n' && keepNewline:
			b.WriteByte('\n')
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func needsEscape(s string, keepNewline bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 {
			return true // decoded in escape; rare in reports
		}
		if (c < 0x20 && !(c == '\n' && keepNewline)) || c == 0x7f {
			return true
		}
	}
	return false
}

// unsafeRune: C1 controls (0x9b is CSI on some terminals) and the format
// characters that reorder or break text (Trojan Source).
func unsafeRune(r rune) bool {
	switch {
	case r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r == 0x2028, r == 0x2029, r == 0xfeff:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// Wrap breaks text into lines at most width columns wide: at spaces where it
// can, inside a word (after a / or another separator when there is one) only
// when the word alone is wider than width. It never drops a character; runs of
// spaces become one. Newlines in text start new lines.
func Wrap(text string, width int) []string {
	if width < 1 {
		width = 1
	}
	var lines []string
	for _, para := range strings.Split(text, "\n") {
		var line strings.Builder
		lineWidth := 0
		flush := func() {
			lines = append(lines, line.String())
			line.Reset()
			lineWidth = 0
		}
		words := strings.Fields(para)
		if len(words) == 0 {
			flush()
			continue
		}
		for _, word := range words {
			w := runewidth.StringWidth(word)
			if lineWidth > 0 && lineWidth+1+w <= width {
				line.WriteByte(' ')
				line.WriteString(word)
				lineWidth += 1 + w
				continue
			}
			if lineWidth > 0 && (w <= width || width-lineWidth-1 < width/4) {
				flush()
			}
			if lineWidth > 0 {
				// The word is split anyway: start it on this line.
				line.WriteByte(' ')
				lineWidth++
			}
			for w > width-lineWidth {
				head, rest := splitWord(word, width-lineWidth)
				line.WriteString(head)
				flush()
				word, w = rest, runewidth.StringWidth(rest)
			}
			for w > width {
				head, rest := splitWord(word, width)
				line.WriteString(head)
				flush()
				word, w = rest, runewidth.StringWidth(rest)
			}
			line.WriteString(word)
			lineWidth = w
		}
		flush()
	}
	return lines
}

// splitWord cuts word after at most width columns: after its last / past a
// third of that stretch, else after another separator past half of it, else
// at the edge; so a path breaks between its directories.
func splitWord(word string, width int) (string, string) {
	cut, cols, slash, sep := 0, 0, 0, 0
	for i, r := range word {
		rw := runewidth.RuneWidth(r)
		if cols+rw > width {
			break
		}
		cols += rw
		cut = i + utf8.RuneLen(r)
		switch {
		case r == '/' && cols > width/3:
			slash = cut
		case strings.ContainsRune("-.:=,_", r) && cols > width/2:
			sep = cut
		}
	}
	switch {
	case cut == 0: // one rune wider than the column
		_, cut = utf8.DecodeRuneInString(word)
	case slash > 0 && slash < len(word):
		cut = slash
	case sep > 0 && sep < len(word):
		cut = sep
	}
	return word[:cut], word[cut:]
}

// hanging writes text wrapped to width, its first line after indent and
// the others after indent and two spaces more.
func hanging(out *bytes.Buffer, text, indent string, width int) {
	w := max(width-len(indent)-2, 20)
	for i, line := range Wrap(text, w) {
		if i == 0 {
			out.WriteString(indent + line + "\n")
		} else {
			out.WriteString(indent + "  " + line + "\n")
		}
	}
}

// Columns lays out a table for a terminal: each column but the last is as
// wide as its widest cell, the last takes the rest of Width, and a cell
// wider than its column wraps (never truncates). Cells are escaped with
// EscapeText; a newline in a cell starts a new line in it.
type Columns struct {
	Header []string
	Rows   [][]string
	// Width is the whole line's width, Indent included (DefaultWidth when 0).
	Width int
	// Indent starts every line; Gap separates columns (2 when 0).
	Indent string
	Gap    int
	// MinWidths are widths columns keep before the last column gets less
	// than MinLast; never more than a column's widest cell. When 0: a
	// narrow column (a quarter of the line or less) keeps its width, a wider
	// one its longest word, up to a quarter of the line.
	MinWidths []int
	// Unbroken columns never break a word, even on a narrow terminal: ids
	// and names people copy (the last column may then run over).
	Unbroken []bool
	// MinLast is what the last column gets before earlier ones wrap (half
	// the line when 0).
	MinLast int
}

// minLast is the least the last column keeps before earlier columns wrap.
const minLast = 30

// Write writes the header and rows, each line without trailing spaces.
func (c Columns) Write(w io.Writer) error {
	width := c.Width
	if width <= 0 {
		width = DefaultWidth
	}
	gap := c.Gap
	if gap <= 0 {
		gap = 2
	}
	ncol := len(c.Header)
	for _, row := range c.Rows {
		ncol = max(ncol, len(row))
	}
	if ncol == 0 {
		return nil
	}
	cells := make([][][]string, 0, len(c.Rows)+1) // row, column, line
	for _, row := range append([][]string{c.Header}, c.Rows...) {
		if row == nil {
			continue
		}
		r := make([][]string, ncol)
		for i := range ncol {
			if i < len(row) {
				r[i] = strings.Split(EscapeText(row[i]), "\n")
			}
		}
		cells = append(cells, r)
	}
	avail := width - runewidth.StringWidth(c.Indent) - gap*(ncol-1)
	widths := make([]int, ncol)
	floor := make([]int, ncol) // what a column never shrinks below
	longest := make([]int, ncol)
	for _, r := range cells {
		for i, lines := range r {
			for _, l := range lines {
				widths[i] = max(widths[i], runewidth.StringWidth(l))
				for _, word := range strings.Fields(l) {
					floor[i] = max(floor[i], runewidth.StringWidth(word))
				}
				longest[i] = floor[i]
			}
		}
	}
	for i := range ncol {
		switch {
		case i < len(c.MinWidths) && c.MinWidths[i] > 0:
			floor[i] = c.MinWidths[i]
		case widths[i] <= avail/4:
			floor[i] = widths[i]
		default:
			floor[i] = max(min(floor[i], avail/4), 8)
			if i < len(c.Header) {
				floor[i] = max(floor[i], runewidth.StringWidth(c.Header[i]))
			}
		}
		floor[i] = min(floor[i], widths[i])
	}
	last := ncol - 1
	used := func() int {
		n := 0
		for _, w := range widths[:last] {
			n += w
		}
		return n
	}
	// Narrow the widest earlier column, one column at a time, until the
	// last keeps its share or nothing can give; on a narrow terminal, past
	// the floors down to 8 columns (or the header), so the last column
	// keeps minLast. Only then does a line run over.
	narrow := func(lastMin int, floor []int) {
		for avail-used() < lastMin {
			widest := -1
			for i := range last {
				if widths[i] > floor[i] && (widest < 0 || widths[i] > widths[widest]) {
					widest = i
				}
			}
			if widest < 0 {
				return
			}
			widths[widest]--
		}
	}
	lastMin := c.MinLast
	if lastMin <= 0 {
		lastMin = max(minLast, avail/2)
	}
	narrow(min(lastMin, widths[last]), floor)
	hard := make([]int, ncol)
	for i := range ncol {
		hard[i] = 8
		if i < len(c.Header) {
			hard[i] = max(hard[i], runewidth.StringWidth(c.Header[i]))
		}
		if i < len(c.Unbroken) && c.Unbroken[i] {
			hard[i] = max(hard[i], longest[i])
		}
	}
	hardLast := minLast
	if c.MinLast > 0 {
		hardLast = min(c.MinLast, minLast)
	}
	narrow(min(hardLast, widths[last]), hard)
	widths[last] = max(avail-used(), min(hardLast, widths[last]))

	return c.render(w, cells, widths, gap)
}

// render hands the wrapped cells to tablewriter, which lays out the grid
// (borderless, left-aligned, gap spaces between columns); cells arrive
// wrapped to their widths, so tablewriter's own wrapping is off.
func (c Columns) render(w io.Writer, cells [][][]string, widths []int, gap int) error {
	ncol := len(widths)
	last := ncol - 1
	pad := make([]tw.Padding, ncol)
	colWidths := tw.NewMapper[int, int]()
	for i := range ncol {
		pad[i] = tw.Padding{Overwrite: true}
		colWidths.Set(i, widths[i])
		if i < last {
			pad[i].Right = strings.Repeat(" ", gap)
			colWidths.Set(i, widths[i]+gap)
		}
	}
	var buf bytes.Buffer
	t := tablewriter.NewTable(&buf,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders: tw.BorderNone,
			Symbols: tw.NewSymbols(tw.StyleNone),
			Settings: tw.Settings{
				Separators: tw.Separators{BetweenRows: tw.Off, BetweenColumns: tw.Off},
				Lines:      tw.Lines{ShowHeaderLine: tw.Off},
			},
		})),
		tablewriter.WithColumnWidths(colWidths),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithRowAutoFormat(tw.Off),
		tablewriter.WithRowAlignment(tw.AlignLeft),
		tablewriter.WithRowPaddingPerColumn(pad),
		tablewriter.WithTrimSpace(tw.Off),
	)
	for _, r := range cells {
		row := make([]string, ncol)
		for i, lines := range r {
			var wrapped []string
			for _, l := range lines {
				wrapped = append(wrapped, Wrap(l, widths[i])...)
			}
			row[i] = strings.Join(wrapped, "\n")
		}
		if err := t.Append(row); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimRight(buf.String(), "\n"), "\n") {
		b.WriteString(strings.TrimRight(c.Indent+line, " "))
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// EscapeJSON writes DEL and C1 controls in encoded JSON as \u escapes:
// encoding/json escapes C0 (and U+2028/9) but passes these through, and
// some terminals take U+009B for CSI when the file is printed. The JSON
// means the same; such runes can only be inside strings.
func EscapeJSON(b []byte) []byte {
	if !bytes.ContainsFunc(b, func(r rune) bool { return r == 0x7f || (r >= 0x80 && r <= 0x9f) }) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			out = fmt.Appendf(out, `\u%04x`, r)
		} else {
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	return out
}
