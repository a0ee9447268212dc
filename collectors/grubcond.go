package collectors

import (
	"errors"
	"io/fs"
	"strconv"

	"mvdan.cc/sh/v3/syntax"
)

// Conditions in GRUB defaults files are evaluated with three-valued logic:
// a test the collector can decide from the root (a file test, a string or
// number comparison) takes the branch the shell would take; anything else
// (command substitution, other commands) is unknown. Stock Ubuntu ships
// /etc/default/grub.d/init-select.cfg, whose conditional append must not
// make every Ubuntu host's command line unknown.

type tri int8

const (
	triUnknown tri = iota
	triFalse
	triTrue
)

func triOf(b bool) tri {
	if b {
		return triTrue
	}
	return triFalse
}

func (t tri) not() tri {
	switch t {
	case triTrue:
		return triFalse
	case triFalse:
		return triTrue
	}
	return triUnknown
}

// GrubFileTester answers file tests ([ -e /sbin/upstart ]) against the
// host's root. Names are absolute paths inside the root.
type GrubFileTester interface {
	Stat(name string) (fs.FileInfo, error)
	Lstat(name string) (fs.FileInfo, error)
}

// sourceFileTester adapts a Source, whose names are root-relative.
type sourceFileTester struct{ src Source }

func (s sourceFileTester) Stat(name string) (fs.FileInfo, error)  { return s.src.Stat(rel(name)) }
func (s sourceFileTester) Lstat(name string) (fs.FileInfo, error) { return s.src.Lstat(rel(name)) }

// listStatus is the exit status of a compound list: that of its last item.
func (env *shellEnv) listStatus(l []*syntax.Stmt) tri {
	if len(l) == 0 {
		return triTrue
	}
	last := l[len(l)-1]
	if last.Background {
		return triTrue
	}
	return env.andOrStatus(last)
}

// andOrStatus short-circuits as the shell does: "false && x" is false and
// "true || x" is true whatever x is.
func (env *shellEnv) andOrStatus(st *syntax.Stmt) tri {
	pipes, ops := andOr(st)
	status := env.pipelineStatus(pipes[0])
	for i, op := range ops {
		next := env.pipelineStatus(pipes[i+1])
		switch op {
		case syntax.AndStmt:
			switch {
			case status == triFalse || next == triFalse:
				status = triFalse
			case status == triTrue:
				status = next
			}
		case syntax.OrStmt:
			switch {
			case status == triTrue || next == triTrue:
				status = triTrue
			case status == triFalse:
				status = next
			}
		}
	}
	return status
}

func (env *shellEnv) pipelineStatus(p *syntax.Stmt) tri {
	cmds := pipeline(p)
	if len(cmds) != 1 {
		return triUnknown
	}
	status := triUnknown
	switch c := cmds[0].Cmd.(type) {
	case *syntax.CallExpr:
		status = env.simpleStatus(c)
	case *syntax.Block:
		status = env.listStatus(c.Stmts)
	case *syntax.Subshell:
		status = env.listStatus(c.Stmts)
	}
	if p.Negated {
		return status.not()
	}
	return status
}

func (env *shellEnv) simpleStatus(c *syntax.CallExpr) tri {
	if len(c.Args) == 0 {
		return triTrue
	}
	args := make([]string, 0, len(c.Args))
	for _, w := range c.Args {
		text, ok := env.wordText(w, shMode{kind: modeNone})
		if !ok {
			return triUnknown
		}
		args = append(args, text)
	}
	switch args[0] {
	case "true", ":":
		return triTrue
	case "false":
		return triFalse
	case "test":
		return env.testExpr(args[1:])
	case "[":
		if args[len(args)-1] != "]" {
			return triUnknown
		}
		return env.testExpr(args[1 : len(args)-1])
	}
	return triUnknown
}

// testExpr evaluates test(1) arguments: "-o" binds looser than "-a", "!"
// negates the primary after it.
func (env *shellEnv) testExpr(args []string) tri {
	if len(args) == 0 {
		return triFalse
	}
	for i := len(args) - 1; i > 0; i-- {
		if args[i] == "-o" && i < len(args)-1 {
			l, r := env.testExpr(args[:i]), env.testExpr(args[i+1:])
			return triOr(l, r)
		}
	}
	for i := len(args) - 1; i > 0; i-- {
		if args[i] == "-a" && i < len(args)-1 {
			l, r := env.testExpr(args[:i]), env.testExpr(args[i+1:])
			return triAnd(l, r)
		}
	}
	if args[0] == "!" && len(args) > 1 {
		return env.testExpr(args[1:]).not()
	}
	return env.testPrimary(args)
}

func triOr(l, r tri) tri {
	if l == triTrue || r == triTrue {
		return triTrue
	}
	if l == triFalse && r == triFalse {
		return triFalse
	}
	return triUnknown
}

func triAnd(l, r tri) tri {
	if l == triFalse || r == triFalse {
		return triFalse
	}
	if l == triTrue && r == triTrue {
		return triTrue
	}
	return triUnknown
}

func (env *shellEnv) testPrimary(args []string) tri {
	switch len(args) {
	case 1:
		return triOf(args[0] != "")
	case 2:
		switch args[0] {
		case "-n":
			return triOf(args[1] != "")
		case "-z":
			return triOf(args[1] == "")
		case "-e", "-f", "-d", "-x", "-s", "-r", "-L", "-h":
			return env.fileTest(args[0], args[1])
		}
	case 3:
		a, op, b := args[0], args[1], args[2]
		switch op {
		case "=", "==":
			return triOf(a == b)
		case "!=":
			return triOf(a != b)
		case "-eq", "-ne", "-lt", "-le", "-gt", "-ge":
			x, errA := strconv.ParseInt(a, 10, 64)
			y, errB := strconv.ParseInt(b, 10, 64)
			if errA != nil || errB != nil {
				return triUnknown
			}
			return triOf(map[string]bool{
				"-eq": x == y, "-ne": x != y, "-lt": x < y, "-le": x <= y, "-gt": x > y, "-ge": x >= y,
			}[op])
		}
	}
	return triUnknown
}

func (env *shellEnv) fileTest(op, name string) tri {
	if env.files == nil || len(name) == 0 || name[0] != '/' {
		// Relative paths depend on grub-mkconfig's working directory.
		return triUnknown
	}
	stat := env.files.Stat
	if op == "-L" || op == "-h" {
		stat = env.files.Lstat
	}
	info, err := stat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return triFalse
	}
	if err != nil {
		return triUnknown
	}
	switch op {
	case "-f":
		return triOf(info.Mode().IsRegular())
	case "-d":
		return triOf(info.IsDir())
	case "-x":
		// grub-mkconfig runs as root: any execute bit, or a directory.
		return triOf(info.IsDir() || info.Mode()&0o111 != 0)
	case "-s":
		return triOf(info.Size() > 0)
	case "-L", "-h":
		return triOf(info.Mode()&fs.ModeSymlink != 0)
	}
	return triTrue
}
