package collectors

import (
	"fmt"
	"strings"
)

// KernelArg is one parameter of a kernel command line, split the way the
// kernel's next_arg() (lib/cmdline.c) splits it.
type KernelArg struct {
	Name  string
	Value string
	// HasValue is false for a flag written without "=".
	HasValue bool
	// Offset is where the argument starts in the parsed text.
	Offset int
	// Line is the line of a multi-line file the argument starts on (1 for
	// /proc/cmdline).
	Line int
}

// KernelCmdline is a parsed kernel command line.
type KernelCmdline struct {
	// Args are the kernel's parameters in order, up to a bare "--".
	Args []KernelArg
	// InitArgs are the words after "--", which the kernel hands to init
	// without interpreting them.
	InitArgs []string
}

// Params folds Args into a map where the last occurrence wins, as it does
// for the kernel's own handlers. Empty names, which no handler can match,
// are left out.
func (k KernelCmdline) Params() map[string]string {
	params := make(map[string]string, len(k.Args))
	for _, a := range k.Args {
		if a.Name != "" {
			params[a.Name] = a.Value
		}
	}
	return params
}

// Last returns the last argument named name, the one that takes effect.
func (k KernelCmdline) Last(name string) (KernelArg, bool) {
	for i := len(k.Args) - 1; i >= 0; i-- {
		if k.Args[i].Name == name {
			return k.Args[i], true
		}
	}
	return KernelArg{}, false
}

// kernelSpace is the kernel's isspace(): its ctype table also marks Latin-1
// NBSP (0xa0) as space, so a UTF-8 NBSP splits an argument in two.
func kernelSpace(b byte) bool {
	switch b {
	case ' ', '\t', '\n', '\v', '\f', '\r', 0xa0:
		return true
	}
	return false
}

// ParseKernelCmdline splits a kernel command line such as /proc/cmdline.
// It accepts whatever the kernel accepts (an unterminated quote runs to the
// end), so the only error is a NUL byte, which cannot occur in the kernel's
// C string: parsing stops there.
func ParseKernelCmdline(text string) (KernelCmdline, error) {
	var err error
	if i := strings.IndexByte(text, 0); i >= 0 {
		err = fmt.Errorf("%w: line 1: NUL byte at offset %d", ErrParse, i)
		text = text[:i]
	}
	return splitKernelArgs(text, nil), err
}

// ParseKernelCmdlineFile parses /etc/kernel/cmdline the way kernel-install's
// 90-loaderentry.install reads it: every run of spaces, tabs and newlines
// becomes one space (tr -s "$IFS" ' ') and one trailing space is dropped, so
// lines join into one command line and "#" is not a comment. It returns that
// command line and its arguments, each with the line it starts on.
func ParseKernelCmdlineFile(data []byte) (string, KernelCmdline, error) {
	var (
		b     strings.Builder
		lines []int // line of each byte written to b
		err   error
	)
	line := 1
	for i := 0; i < len(data); i++ {
		c := data[i]
		if c == 0 {
			err = fmt.Errorf("%w: line %d: NUL byte", ErrParse, line)
			break
		}
		if c == ' ' || c == '\t' || c == '\n' {
			if b.Len() == 0 || !strings.HasSuffix(b.String(), " ") {
				b.WriteByte(' ')
				lines = append(lines, line)
			}
			if c == '\n' {
				line++
			}
			continue
		}
		b.WriteByte(c)
		lines = append(lines, line)
	}
	text := strings.TrimSuffix(b.String(), " ")
	return text, splitKernelArgs(text, lines), err
}

// splitKernelArgs follows parse_args(): skip leading space, take arguments
// with next_arg() until a bare "--", and hand the rest to init the way
// init/main.c does (parsed again, stopping at a second "--").
func splitKernelArgs(text string, lines []int) KernelCmdline {
	var k KernelCmdline
	pos := skipKernelSpace(text, 0)
	for pos < len(text) {
		arg, next := nextKernelArg(text, pos)
		pos = next
		if !arg.HasValue && arg.Name == "--" {
			break
		}
		arg.Line = 1
		if arg.Offset < len(lines) {
			arg.Line = lines[arg.Offset]
		}
		k.Args = append(k.Args, arg)
	}
	for pos < len(text) {
		arg, next := nextKernelArg(text, pos)
		pos = next
		if !arg.HasValue && arg.Name == "--" {
			break
		}
		if arg.HasValue {
			k.InitArgs = append(k.InitArgs, arg.Name+"="+arg.Value)
		} else {
			k.InitArgs = append(k.InitArgs, arg.Name)
		}
	}
	return k
}

func skipKernelSpace(text string, pos int) int {
	for pos < len(text) && kernelSpace(text[pos]) {
		pos++
	}
	return pos
}

// nextKernelArg is next_arg(): double quotes group spaces and cannot be
// escaped; a leading quote on the argument or on its value is dropped, and
// so is the closing quote at the very end of the argument. The name ends at
// the first "=" after the first character.
func nextKernelArg(text string, start int) (KernelArg, int) {
	arg := KernelArg{Offset: start}
	args := text[start:]
	quoted := false
	if strings.HasPrefix(args, `"`) {
		args = args[1:]
		quoted = true
	}
	inQuote := quoted
	equals := 0
	i := 0
	for ; i < len(args); i++ {
		if kernelSpace(args[i]) && !inQuote {
			break
		}
		if equals == 0 && args[i] == '=' {
			equals = i
		}
		if args[i] == '"' {
			inQuote = !inQuote
		}
	}
	token := args[:i]
	// The kernel NULs the closing quote in place, at most once.
	closing := i > 0 && token[i-1] == '"'
	if equals == 0 {
		arg.Name = token
		if quoted && closing {
			arg.Name = token[:i-1]
		}
	} else {
		arg.Name = token[:equals]
		arg.Value = token[equals+1:]
		arg.HasValue = true
		valueQuoted := strings.HasPrefix(arg.Value, `"`)
		if valueQuoted {
			arg.Value = arg.Value[1:]
		}
		if (valueQuoted || quoted) && closing && arg.Value != "" {
			arg.Value = arg.Value[:len(arg.Value)-1]
		}
	}
	next := start + len(text[start:]) - len(args) + i
	if next < len(text) {
		next++ // the kernel overwrites the separator with NUL
	}
	return arg, skipKernelSpace(text, next)
}
