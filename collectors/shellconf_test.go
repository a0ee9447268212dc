package collectors

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Shell the hand-written reader got wrong, read now by a real shell parser.
func TestEvalGrubDefaultsShellSyntax(t *testing.T) {
	tests := []struct {
		name  string
		main  string
		linux string
		errs  []string
	}{
		{
			name:  "a case pattern's ) inside $( ) does not end the substitution",
			main:  "GRUB_DISTRIBUTOR=$(case x in a) echo A;; esac)\nGRUB_CMDLINE_LINUX=ro\n",
			linux: `[/etc/default/grub:2 "ro"]`,
		},
		{
			name:  "a ) in a comment inside $( ) does not end the substitution",
			main:  "GRUB_DISTRIBUTOR=$(lsb_release -i -s # (Ubuntu)\n)\nGRUB_CMDLINE_LINUX=ro\n",
			linux: `[/etc/default/grub:3 "ro"]`,
		},
		{
			name:  "a Latin-1 comment is no error",
			main:  "# R\xe9glages du d\xe9marrage\nGRUB_CMDLINE_LINUX=\"ro caf\xe9\"\n",
			linux: `[/etc/default/grub:2 "ro caf\xe9"]`,
		},
		{
			name:  "a bash-only construct is an error: grub-mkconfig sources with /bin/sh",
			main:  "GRUB_CMDLINE_LINUX=ro\nfunction f { :; }\nGRUB_CMDLINE_LINUX=\"$GRUB_CMDLINE_LINUX quiet\"\n",
			linux: `[/etc/default/grub:1 "ro", /etc/default/grub:3 " quiet"]`,
			errs:  []string{`/etc/default/grub: parse error: line 2: the "function" builtin: a bash feature; /bin/sh does not accept it`},
		},
		{
			name:  "nesting beyond the bound stops reading the file",
			main:  "GRUB_CMDLINE_LINUX=ro\nX=" + strings.Repeat("$(", 2000) + "\nGRUB_CMDLINE_LINUX=rw\n",
			linux: "unknown at /etc/default/grub:2: may be set after line 2, where reading stopped",
			errs:  []string{"/etc/default/grub: parse error: line 2: nested too deeply; the rest of the file is not read"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := EvalGrubDefaults(grubFiles(gd, tt.main), nil)
			if diff := cmp.Diff(tt.linux, renderShellValue(got.Linux)); diff != "" {
				t.Errorf("GRUB_CMDLINE_LINUX (-want +got):\n%s", diff)
			}
			var errs []string
			for _, e := range got.Errors {
				errs = append(errs, e.File+": "+e.Error())
			}
			if diff := cmp.Diff(tt.errs, errs); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseProfileScriptShell(t *testing.T) {
	ev := func(name, value string, line int, export, assign bool) profileEvent {
		return profileEvent{Var: ncclAssignment{Name: name, Value: value, Line: line}, Export: export, Assign: assign}
	}
	tests := []struct {
		name string
		in   string
		want []profileEvent
		errs []string
	}{
		{
			name: "two statements on a line",
			in:   "export NCCL_A=1; export NCCL_B=2\n",
			want: []profileEvent{ev("NCCL_A", "1", 1, true, true), ev("NCCL_B", "2", 1, true, true)},
		},
		{
			name: "a statement continued on the next line is one export",
			in:   "export NCCL_C=3 \\\n  NCCL_D=4\n",
			want: []profileEvent{ev("NCCL_C", "3", 1, true, true), ev("NCCL_D", "4", 2, true, true)},
		},
		{
			name: "a function body runs only when called",
			in:   "nccl() {\n  export NCCL_E=5\n}\n",
		},
		{
			name: "a branch is read, on one line or several",
			in:   "if [ -d /opt/x ]; then export NCCL_F=6; fi\ncase $HOSTNAME in\n  gpu*) export NCCL_G=7 ;;\nesac\n",
			want: []profileEvent{ev("NCCL_F", "6", 1, true, true), ev("NCCL_G", "7", 3, true, true)},
		},
		{
			name: "a quoted value over two lines is valid shell, not a value to report",
			in:   "export NCCL_H=\"a\nb\"\nexport NCCL_I=8\n",
			want: []profileEvent{ev("NCCL_I", "8", 3, true, true)},
		},
		{
			name: "a syntax error other than a quote is reported; the next line is read",
			in:   "export NCCL_J=9 )\nexport NCCL_K=10\n",
			want: []profileEvent{ev("NCCL_K", "10", 2, true, true)},
			errs: []string{"parse error: line 1: statements must be separated by &, ; or a newline"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, errs := parseProfileScript([]byte(tt.in))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.errs, hwErrorStrings(t, errs)); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}
