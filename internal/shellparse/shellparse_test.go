package shellparse

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"mvdan.cc/sh/v3/syntax"
)

// Real-world samples, as shipped or as sites write them.
const (
	// Ubuntu 24.04 /etc/default/grub (grub2-common 2.12).
	ubuntuGrub = `# If you change this file or any /etc/default/grub.d/*.cfg file,
# run 'update-grub' afterwards to update /boot/grub/grub.cfg.
# For full documentation of the options in these files, see:
#   info -f grub -n 'Simple configuration'

GRUB_DEFAULT=0
GRUB_TIMEOUT_STYLE=hidden
GRUB_TIMEOUT=0
GRUB_DISTRIBUTOR=` + "`( . /etc/os-release; echo ${NAME:-Ubuntu} ) 2>/dev/null || echo Ubuntu`" + `
GRUB_CMDLINE_LINUX_DEFAULT="quiet splash"
GRUB_CMDLINE_LINUX=""

# If your computer has multiple operating systems installed, then you
# probably want to run os-prober. However, if your computer is a host
# for guest OSes installed via LVM or raw disk devices, running
# os-prober can cause damage to those guest OSes as it mounts them.
#GRUB_DISABLE_OS_PROBER=false

# Uncomment to disable graphical terminal
#GRUB_TERMINAL=console
`
	hugetlbDropIn = `# /etc/default/grub.d/60-hugetlb.cfg: reserve CMA for 1G hugepages.
GRUB_CMDLINE_LINUX_DEFAULT="$GRUB_CMDLINE_LINUX_DEFAULT hugetlb_cma=6G"
`
	etcEnvironment = `PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/usr/games:/usr/local/games:/snap/bin"
# NCCL for the whole host
NCCL_DEBUG="WARN"
NCCL_SOCKET_IFNAME='bond0'   # management network
`
	profileNCCL = `# /etc/profile.d/nccl.sh
export NCCL_IB_HCA=mlx5_0,mlx5_1
export NCCL_SOCKET_IFNAME=bond0 NCCL_DEBUG=INFO
if [ -d /opt/hpcx ]; then
    . /opt/hpcx/hpcx-init.sh
fi
`
)

// render shows what a script yields: each command as the lines of its
// statements, each error with its line, message and names.
func render(src string, lang syntax.LangVariant) []string {
	var out []string
	s := New([]byte(src), lang)
	for {
		cmd, err := s.Next()
		switch {
		case err != nil:
			out = append(out, fmt.Sprintf("error %d: %s %v stop=%v", err.Line, err.Msg, err.Names, err.Stop))
		case cmd == nil:
			return out
		default:
			var lines []string
			for _, st := range cmd.Stmts {
				lines = append(lines, fmt.Sprintf("%d-%d", cmd.Line(st.Pos()), cmd.Line(st.End())))
			}
			out = append(out, "cmd "+strings.Join(lines, " "))
		}
	}
}

func TestScript(t *testing.T) {
	tests := []struct {
		name string
		src  string
		lang syntax.LangVariant
		want []string
	}{
		{
			name: "commands, one per line or spanning lines",
			src:  "A=1; B=2\nif x; then\n  C=3\nfi\ncat <<EOF\nbody\nEOF\nD=4 # done\n",
			want: []string{"cmd 1-1 1-1", "cmd 2-4", "cmd 5-7", "cmd 8-8"},
		},
		{
			name: "an unterminated quote costs its line; reading goes on after it",
			src:  "A=1\nB=\"x\nC=3\n",
			want: []string{"cmd 1-1", "error 2: unterminated double quote [B] stop=false", "cmd 3-3"},
		},
		{
			name: "statements before an error on the same line are not run and their names are reported",
			src:  "A=1; fi\nB=2\n",
			want: []string{`error 1: "fi" unexpected [A] stop=false`, "cmd 2-2"},
		},
		{
			name: "a compound command left open swallows the rest of the file",
			src:  "A=1\nif x; then\n  B=2\n  while y; do\n    C=3\n",
			want: []string{"cmd 1-1", `error 4: "while" is not closed (expecting "done") [B C] stop=false`},
		},
		{
			name: "the library's words in the shell's vocabulary",
			src:  "X=${a b}\nY=(a b)\nZ=`x\n",
			want: []string{
				"error 1: bad substitution [X] stop=false",
				`error 2: "(" unexpected [Y] stop=false`,
				"error 3: unterminated backquote [Z] stop=false",
			},
		},
		{
			name: "a loop variable that is no name is not reported",
			src:  "for 0 in a; do :; done; fi\n",
			lang: syntax.LangBash,
			want: []string{`error 1: "fi" unexpected [] stop=false`},
		},
		{
			name: "arrays are bash",
			src:  "Y=(a b)\n",
			lang: syntax.LangBash,
			want: []string{"cmd 1-1"},
		},
		{
			name: "a Latin-1 comment and value are no error",
			src:  "# R\xe9glages du d\xe9marrage\nA=caf\xe9\n",
			want: []string{"cmd 2-2"},
		},
		{
			name: "a case pattern's ) inside $( ) does not end it",
			src:  "A=$(case x in a) echo 1;; esac)\nB=2\n",
			want: []string{"cmd 1-1", "cmd 2-2"},
		},
		{
			name: "nesting beyond MaxDepth stops reading at its line",
			src:  "A=1\nB=2\n" + strings.Repeat("(", MaxDepth+1) + "\nC=3\n",
			want: []string{"cmd 1-1", "cmd 2-2", "error 3: nested too deeply; the rest of the file is not read [] stop=true"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lang := tt.lang
			if lang == 0 {
				lang = syntax.LangPOSIX
			}
			if diff := cmp.Diff(tt.want, render(tt.src, lang)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// renderPieces shows a word's pieces.
func renderPieces(ps []Piece) string {
	var out []string
	for _, p := range ps {
		switch p.Kind {
		case Text:
			q := ""
			if p.Quoted {
				q = "q"
			}
			out = append(out, fmt.Sprintf("%d%s%q", p.Line, q, p.Text))
		case Param:
			out = append(out, fmt.Sprintf("%d${%s%s%s}", p.Line, p.Name, p.Op, renderPieces(p.Word)))
		case Unknown:
			out = append(out, fmt.Sprintf("%d<%s>", p.Line, p.Text))
		}
	}
	return strings.Join(out, " ")
}

func TestPieces(t *testing.T) {
	tests := []struct{ src, want string }{
		{`x=a\ b`, `1"a" 1q" " 1"b"`},
		{"x=\"a \\\n  b\"", `1q"a " 2q"  b"`},
		{"x=a\\\nb", `1"a" 2"b"`},
		{"x='a\nb'", `1q"a\n" 2q"b"`},
		{`x="\$V \q \" \\"`, `1q"$V \\q \" \\"`},
		{`x=$A${B:-"d"}${#C}${D%%x}`, `1${A} 1${B:-1q"d"} 1${C#} 1${Dpattern}`},
		{"x=`a`$(b)$((1+2))", "1<command substitution `...`> 1<command substitution $(...)> 1<arithmetic expansion $((...))>"},
		{`x=$'a'`, `1"$" 1q"a"`},
		{`x=caf` + "\xe9", "1\"caf\\xe9\""},
		{`x=a\`, `1"a\\"`},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			s := New([]byte(tt.src), syntax.LangPOSIX)
			cmd, err := s.Next()
			if err != nil || cmd == nil {
				t.Fatalf("Next = %v, %v", cmd, err)
			}
			a := cmd.Stmts[0].Cmd.(*syntax.CallExpr).Assigns[0]
			if diff := cmp.Diff(tt.want, renderPieces(cmd.Pieces(a.Value))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestSplitAssign(t *testing.T) {
	s := New([]byte(`export A=b"c" 'D=e' F${x}=1 G`), syntax.LangPOSIX)
	cmd, _ := s.Next()
	var got []string
	for _, w := range cmd.Stmts[0].Cmd.(*syntax.CallExpr).Args[1:] {
		name, value, ok := SplitAssign(cmd.Pieces(w))
		got = append(got, fmt.Sprintf("%s=%s %v", name, renderPieces(value), ok))
	}
	want := []string{`A=1"b" 1q"c" true`, "= false", "= false", "= false"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// Hostile input ends, and quickly: the parser recurses per nesting level,
// so a megabyte of openers would cost seconds and gigabytes without the
// bound. The deadline is only a hang guard.
func TestHostileInput(t *testing.T) {
	for _, unit := range []string{"(", "$((", "${x:-", "\"$(", "if a; then ", "{ ", "`", "'", "\"", "a && ", "x| ", "\\\n", "fi\n", "+1", "&& a ", "-"} {
		t.Run(unit, func(t *testing.T) {
			src := strings.Repeat(unit, (1<<20)/len(unit)) // the collectors' cap on a file
			lang := syntax.LangPOSIX
			switch unit {
			case "+1":
				src = "x=$((1" + src + "))\n"
			case "&& a ":
				src, lang = "[[ a "+src+"]]\n", syntax.LangBash
			case "-":
				src = "x=$((" + src + "1))\n"
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				s := New([]byte(src), lang)
				for range 1000 {
					cmd, err := s.Next()
					if cmd == nil && err == nil {
						break
					}
					if cmd != nil {
						eachCommand(cmd.Stmts, func(c syntax.Command) {
							if c, ok := c.(*syntax.CallExpr); ok {
								for _, w := range c.Args {
									cmd.Pieces(w)
								}
							}
						})
					}
				}
			}()
			select {
			case <-done:
			case <-time.After(time.Minute):
				t.Fatal("still reading after a minute")
			}
		})
	}
}

func FuzzScript(f *testing.F) {
	for _, seed := range []string{ubuntuGrub, hugetlbDropIn, etcEnvironment, profileNCCL,
		"A=1; fi\nB=\"x\nC=`y\nif a; then\n  D=$(case x in a) ;; esac)\n",
		"x=\"a \\\n  b\" y=a\\ b z='c\nd' ${A:-${B#x}} $'q' $((1+(2)))\n"} {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	f.Fuzz(func(t *testing.T, src string, bash bool) {
		lang := syntax.LangPOSIX
		if bash {
			lang = syntax.LangBash
		}
		lines := strings.Split(src, "\n")
		inside := func(what string, line int) {
			if line < 1 || line > len(lines) {
				t.Fatalf("%s at line %d, outside 1..%d", what, line, len(lines))
			}
		}
		var checkPieces func([]Piece)
		checkPieces = func(ps []Piece) {
			for _, p := range ps {
				inside("piece", p.Line)
				if p.Kind == Text {
					// Every character was written on the line cited.
					for i := 0; i < len(p.Text); i++ {
						if c := p.Text[i]; c != '\n' && strings.IndexByte(lines[p.Line-1], c) < 0 {
							t.Fatalf("piece %q cites line %d, %q, which lacks %q", p.Text, p.Line, lines[p.Line-1], c)
						}
					}
				}
				checkPieces(p.Word)
			}
		}
		s := New([]byte(src), lang)
		last := 0
		for {
			cmd, err := s.Next()
			if err != nil {
				inside("error", err.Line)
				for _, n := range err.Names {
					if !ValidName(n) {
						t.Fatalf("error names %q", n)
					}
				}
				continue
			}
			if cmd == nil {
				break
			}
			for _, st := range cmd.Stmts {
				if l := cmd.Line(st.Pos()); l < last {
					t.Fatalf("statement at line %d after one at line %d", l, last)
				} else {
					last = l
				}
				inside("statement", cmd.Line(st.Pos()))
				syntax.Walk(st, func(n syntax.Node) bool {
					if w, ok := n.(*syntax.Word); ok {
						checkPieces(cmd.Pieces(w))
					}
					return true
				})
			}
		}
	})
}
