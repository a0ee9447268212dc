package collectors

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseKernelCmdline(t *testing.T) {
	type arg struct {
		Name, Value string
		HasValue    bool
		Offset      int
	}
	tests := []struct {
		name     string
		in       string
		args     []arg
		initArgs []string
		params   map[string]string
		err      string
	}{
		{
			name: "ubuntu",
			in:   "BOOT_IMAGE=/boot/vmlinuz-5.15.0-105-generic root=UUID=7c3e1a52 ro quiet splash vt.handoff=7",
			params: map[string]string{
				"BOOT_IMAGE": "/boot/vmlinuz-5.15.0-105-generic", "root": "UUID=7c3e1a52",
				"ro": "", "quiet": "", "splash": "", "vt.handoff": "7",
			},
		},
		{
			name: "rhel crashkernel ranges",
			in:   "BOOT_IMAGE=(hd0,gpt2)/vmlinuz-5.14.0-427.13.1.el9_4.x86_64 root=/dev/mapper/rl-root ro crashkernel=1G-4G:192M,4G-64G:256M,64G-:512M rd.lvm.lv=rl/root rd.lvm.lv=rl/swap",
			params: map[string]string{
				"BOOT_IMAGE": "(hd0,gpt2)/vmlinuz-5.14.0-427.13.1.el9_4.x86_64", "root": "/dev/mapper/rl-root", "ro": "",
				"crashkernel": "1G-4G:192M,4G-64G:256M,64G-:512M", "rd.lvm.lv": "rl/swap",
			},
		},
		{
			name: "firecracker microVM with init arguments, from a real host",
			in:   "mitigations=auto,no_guest_host,no_guest_guest console=ttyS0 quiet reboot=k panic=1 pci=realloc=off fc_dmapin=0xeebe0000,0x3000,0xeebf0000 -- --firecracker-init --addr 0.0.0.0:2024 --max-ws-buffer-size 32768 --auth-required\n",
			params: map[string]string{
				"mitigations": "auto,no_guest_host,no_guest_guest", "console": "ttyS0", "quiet": "", "reboot": "k",
				"panic": "1", "pci": "realloc=off", "fc_dmapin": "0xeebe0000,0x3000,0xeebf0000",
			},
			initArgs: []string{"--firecracker-init", "--addr", "0.0.0.0:2024", "--max-ws-buffer-size", "32768", "--auth-required"},
		},
		{
			name: "flag and empty value are both empty",
			in:   "nosmt mitigations=",
			args: []arg{{"nosmt", "", false, 0}, {"mitigations", "", true, 6}},
		},
		{
			name: "quoted value groups spaces",
			in:   `dyndbg="file drivers/usb/* +p" ro`,
			args: []arg{{"dyndbg", "file drivers/usb/* +p", true, 0}, {"ro", "", false, 31}},
		},
		{
			name: "fully quoted parameter",
			in:   `"acpi_osi=Windows 2020" quiet`,
			args: []arg{{"acpi_osi", "Windows 2020", true, 0}, {"quiet", "", false, 24}},
		},
		{
			name: "quoted flag",
			in:   `"two words"`,
			args: []arg{{"two words", "", false, 0}},
		},
		{
			name: "quotes inside a value stay",
			in:   `foo=a"b c"d bar="x"y`,
			args: []arg{{"foo", `a"b c"d`, true, 0}, {"bar", `x"y`, true, 12}},
		},
		{
			name: "the closing quote is dropped once",
			in:   `"foo="a""`,
			args: []arg{{"foo", `a"`, true, 0}},
		},
		{
			name: "unterminated quote runs to the end",
			in:   `console="ttyS0 quiet`,
			args: []arg{{"console", "ttyS0 quiet", true, 0}},
		},
		{
			name: "name ends at the first equals sign",
			in:   "a==b =x",
			args: []arg{{"a", "=b", true, 0}, {"=x", "", false, 5}},
		},
		{
			name:   "last occurrence wins",
			in:     "console=tty1 console=ttyS0,115200n8 hugetlb_cma=2G hugetlb_cma=0",
			params: map[string]string{"console": "ttyS0,115200n8", "hugetlb_cma": "0"},
		},
		{
			name:     "everything after -- goes to init",
			in:       `ro -- single "x=a b" --verbose -- dropped`,
			args:     []arg{{"ro", "", false, 0}},
			initArgs: []string{"single", "x=a b", "--verbose"},
		},
		{
			name:     "a quoted -- also ends the kernel's part",
			in:       `quiet "--" emergency`,
			params:   map[string]string{"quiet": ""},
			initArgs: []string{"emergency"},
		},
		{
			name:   "--=x is an ordinary parameter",
			in:     "--=x",
			params: map[string]string{"--": "x"},
		},
		{
			name: "kernel whitespace includes tabs, newlines and Latin-1 NBSP",
			in:   "\t a=1\nb=2\xa0c\r\n",
			args: []arg{{"a", "1", true, 2}, {"b", "2", true, 6}, {"c", "", false, 10}},
		},
		{
			name:   "empty",
			in:     "   ",
			params: map[string]string{},
		},
		{
			name: "NUL ends the C string",
			in:   "ro quiet\x00junk=1",
			args: []arg{{"ro", "", false, 0}, {"quiet", "", false, 3}},
			err:  "parse error: line 1: NUL byte at offset 8",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseKernelCmdline(tt.in)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
				if !errors.Is(err, ErrParse) {
					t.Errorf("error %v does not wrap ErrParse", err)
				}
			}
			if gotErr != tt.err {
				t.Errorf("error = %q, want %q", gotErr, tt.err)
			}
			if tt.args != nil {
				var args []arg
				for _, a := range got.Args {
					args = append(args, arg{a.Name, a.Value, a.HasValue, a.Offset})
				}
				if diff := cmp.Diff(tt.args, args); diff != "" {
					t.Errorf("args (-want +got):\n%s", diff)
				}
			}
			if tt.params != nil {
				if diff := cmp.Diff(tt.params, got.Params()); diff != "" {
					t.Errorf("params (-want +got):\n%s", diff)
				}
			}
			if diff := cmp.Diff(tt.initArgs, got.InitArgs); diff != "" {
				t.Errorf("init args (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseKernelCmdlineFile(t *testing.T) {
	type arg struct {
		Name, Value string
		Line        int
	}
	tests := []struct {
		name string
		in   string
		text string
		args []arg
		err  string
	}{
		{
			name: "one line with a trailing newline",
			in:   "root=/dev/mapper/rl-root ro crashkernel=1G-4G:192M,4G-64G:256M,64G-:512M\n",
			text: "root=/dev/mapper/rl-root ro crashkernel=1G-4G:192M,4G-64G:256M,64G-:512M",
			args: []arg{{"root", "/dev/mapper/rl-root", 1}, {"ro", "", 1}, {"crashkernel", "1G-4G:192M,4G-64G:256M,64G-:512M", 1}},
		},
		{
			name: "lines join and # is not a comment",
			in:   "root=LABEL=root ro\n\n# debug\n\tquiet  splash\n",
			text: "root=LABEL=root ro # debug quiet splash",
			args: []arg{{"root", "LABEL=root", 1}, {"ro", "", 1}, {"#", "", 3}, {"debug", "", 3}, {"quiet", "", 4}, {"splash", "", 4}},
		},
		{
			name: "a quoted value may span lines and is squeezed",
			in:   "foo=\"a  \n b\" ro",
			text: `foo="a b" ro`,
			args: []arg{{"foo", "a b", 1}, {"ro", "", 2}},
		},
		{
			name: "NUL byte",
			in:   "ro\nquiet\x00x",
			text: "ro quiet",
			args: []arg{{"ro", "", 1}, {"quiet", "", 2}},
			err:  "parse error: line 2: NUL byte",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, got, err := ParseKernelCmdlineFile([]byte(tt.in))
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if gotErr != tt.err {
				t.Errorf("error = %q, want %q", gotErr, tt.err)
			}
			if text != tt.text {
				t.Errorf("text = %q, want %q", text, tt.text)
			}
			var args []arg
			for _, a := range got.Args {
				args = append(args, arg{a.Name, a.Value, a.Line})
			}
			if diff := cmp.Diff(tt.args, args); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
		})
	}
}

// Real command lines: Ubuntu desktop and server, an Ubuntu cloud image, RHEL
// 9 with crashkernel ranges and LVM, a Firecracker microVM passing init
// arguments after "--", quoted values.
var kernelCmdlineSeeds = []string{
	"BOOT_IMAGE=/boot/vmlinuz-5.15.0-105-generic root=UUID=7c3e1a52-9b1f-4d7e-a0c4-2f6b8e91d3a5 ro quiet splash vt.handoff=7\n",
	"BOOT_IMAGE=/vmlinuz-6.8.0-45-generic root=/dev/mapper/ubuntu--vg-ubuntu--lv ro\n",
	"BOOT_IMAGE=/boot/vmlinuz-5.15.0-1019-aws root=PARTUUID=5d1a0b2f-01 ro console=tty1 console=ttyS0 nvme_core.io_timeout=4294967295 panic=-1\n",
	"BOOT_IMAGE=(hd0,gpt2)/vmlinuz-5.14.0-427.13.1.el9_4.x86_64 root=/dev/mapper/rl-root ro crashkernel=1G-4G:192M,4G-64G:256M,64G-:512M resume=/dev/mapper/rl-swap rd.lvm.lv=rl/root rd.lvm.lv=rl/swap\n",
	`dyndbg="file drivers/usb/* +p" "acpi_osi=Windows 2020" console="ttyS0 -- init=/bin/sh -- single "x=a b"` + "\n",
	"mitigations=auto,no_guest_host,no_guest_guest console=ttyS0 quiet reboot=k panic=1 random.trust_cpu=1 swiotlb=noforce psi=1 page_reporting.page_reporting_order=11 deferred_init=lazy nested_pvm=1 rdinit=/process_api pci=realloc=off driver_async_probe=mlx5_core memhp_default_state=online_kernel fc_dmapin=0xeebe0000,0x3000,0xeebf0000 -- --firecracker-init --addr 0.0.0.0:2024 --max-ws-buffer-size 32768 --block-local-connections --log-vsock-port 5002 --control-vsock-port 5001 --listen-vsock-port 2024 --tcp-readiness-only --auth-required\n",
	"ro\x00", "\"", "\"\"", "=", "a=\"", "\xa0\"=\"\xa0",
}

func FuzzKernelCmdline(f *testing.F) {
	for _, s := range kernelCmdlineSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, _ := ParseKernelCmdline(in)
		last := -1
		for _, a := range got.Args {
			if a.Offset <= last || a.Offset >= len(in) {
				t.Fatalf("offset %d out of order or outside the input (%d bytes)", a.Offset, len(in))
			}
			if kernelSpace(in[a.Offset]) {
				t.Fatalf("argument at %d starts with a space", a.Offset)
			}
			if !a.HasValue && a.Value != "" {
				t.Fatalf("flag %q has a value", a.Name)
			}
			last = a.Offset
		}
		params := got.Params()
		for name, value := range params {
			if a, ok := got.Last(name); !ok || a.Value != value {
				t.Fatalf("params[%q] = %q, not the last occurrence", name, value)
			}
		}

		lines := strings.Count(in, "\n") + 1
		_, fromFile, _ := ParseKernelCmdlineFile([]byte(in))
		for _, a := range fromFile.Args {
			if a.Line < 1 || a.Line > lines {
				t.Fatalf("line %d outside the input's %d lines", a.Line, lines)
			}
		}
	})
}
