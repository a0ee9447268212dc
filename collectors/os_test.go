package collectors

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

// Real os-release files, as shipped.
const (
	ubuntuJammyOSRelease = `PRETTY_NAME="Ubuntu 22.04.4 LTS"
NAME="Ubuntu"
VERSION_ID="22.04"
VERSION="22.04.4 LTS (Jammy Jellyfish)"
VERSION_CODENAME=jammy
ID=ubuntu
ID_LIKE=debian
HOME_URL="https://www.ubuntu.com/"
SUPPORT_URL="https://help.ubuntu.com/"
BUG_REPORT_URL="https://bugs.launchpad.net/ubuntu/"
PRIVACY_POLICY_URL="https://www.ubuntu.com/legal/terms-and-policies/privacy-policy"
UBUNTU_CODENAME=jammy
`
	rockyOSRelease = `NAME="Rocky Linux"
VERSION="9.4 (Blue Onyx)"
ID="rocky"
ID_LIKE="rhel centos fedora"
VERSION_ID="9.4"
PLATFORM_ID="platform:el9"
PRETTY_NAME="Rocky Linux 9.4 (Blue Onyx)"
ANSI_COLOR="0;32"
`
	debianOSRelease = `PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"
NAME="Debian GNU/Linux"
VERSION_ID="12"
VERSION="12 (bookworm)"
VERSION_CODENAME=bookworm
ID=debian
HOME_URL="https://www.debian.org/"
`
)

// osVars flattens parseOSRelease's result for comparison.
func osVars(vars map[string]osReleaseVar) map[string]string {
	out := map[string]string{}
	for k, v := range vars {
		out[k] = v.Value
	}
	return out
}

func TestParseOSRelease(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    map[string]string
		wantErr []string // substrings, one per error, in order
	}{
		{
			name: "ubuntu",
			in:   ubuntuJammyOSRelease,
			want: map[string]string{
				"PRETTY_NAME": "Ubuntu 22.04.4 LTS", "NAME": "Ubuntu", "VERSION_ID": "22.04",
				"VERSION": "22.04.4 LTS (Jammy Jellyfish)", "VERSION_CODENAME": "jammy", "ID": "ubuntu",
				"ID_LIKE": "debian", "HOME_URL": "https://www.ubuntu.com/", "SUPPORT_URL": "https://help.ubuntu.com/",
				"BUG_REPORT_URL":     "https://bugs.launchpad.net/ubuntu/",
				"PRIVACY_POLICY_URL": "https://www.ubuntu.com/legal/terms-and-policies/privacy-policy",
				"UBUNTU_CODENAME":    "jammy",
			},
		},
		{
			name: "comments, blank lines, CRLF and a BOM",
			in:   "\ufeff# vendor file\r\n\r\n  # indented comment\r\nID=fedora\r\n",
			want: map[string]string{"ID": "fedora"},
		},
		{
			name: "single quotes keep backslashes",
			in:   `NAME='a\b "c"'`,
			want: map[string]string{"NAME": `a\b "c"`},
		},
		{
			name: "double quote escapes only the shell specials",
			in:   `NAME="a \"b\" \$c \` + "`" + `d\` + "`" + ` \\ \n"`,
			want: map[string]string{"NAME": `a "b" $c ` + "`d`" + ` \ \n`},
		},
		{
			name: "unquoted backslash escapes",
			in:   `NAME=Foo\ Linux`,
			want: map[string]string{"NAME": "Foo Linux"},
		},
		{
			name: "concatenation is unquoted as sh does",
			in:   `NAME="Foo"' Linux'!`,
			want: map[string]string{"NAME": "Foo Linux!"},
		},
		{
			name: "trailing comment after a value",
			in:   "ID=arch # rolling\nBUILD_ID=rolling",
			want: map[string]string{"ID": "arch", "BUILD_ID": "rolling"},
		},
		{
			name: "later assignment wins",
			in:   "ID=a\nID=b\n",
			want: map[string]string{"ID": "b"},
		},
		{
			name: "empty value",
			in:   "VARIANT=\nVARIANT_ID=\"\"",
			want: map[string]string{"VARIANT": "", "VARIANT_ID": ""},
		},
		{
			name:    "malformed lines are skipped and named",
			in:      "ID=ok\njunk\n1ID=x\nNAME=\"open\nPRETTY='open\nID_LIKE=rhel fedora\nVERSION_ID=9",
			want:    map[string]string{"ID": "ok", "VERSION_ID": "9"},
			wantErr: []string{"line 2: no '='", "line 3: invalid variable name", "line 4: NAME: unterminated double quote", "line 5: PRETTY: unterminated single quote", "line 6: ID_LIKE: unquoted space"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vars, errs := parseOSRelease([]byte(tt.in))
			if diff := cmp.Diff(tt.want, osVars(vars)); diff != "" {
				t.Errorf("vars (-want +got):\n%s", diff)
			}
			versionsCheckErrors(t, errs, tt.wantErr)
		})
	}
}

func TestParseOSReleaseLines(t *testing.T) {
	vars, _ := parseOSRelease([]byte(rockyOSRelease))
	for key, line := range map[string]int{"NAME": 1, "ID": 3, "ID_LIKE": 4, "VERSION_ID": 5, "PRETTY_NAME": 7} {
		if vars[key].Line != line {
			t.Errorf("%s: line %d, want %d", key, vars[key].Line, line)
		}
	}
}

// versionsCheckErrors asserts one error per wanted substring, each wrapping ErrParse.
func versionsCheckErrors(t *testing.T, errs []error, want []string) {
	t.Helper()
	if len(errs) != len(want) {
		t.Fatalf("got %d errors %v, want %d", len(errs), errs, len(want))
	}
	for i, err := range errs {
		if !errors.Is(err, ErrParse) {
			t.Errorf("error %d %q does not wrap ErrParse", i, err)
		}
		if !strings.Contains(err.Error(), want[i]) {
			t.Errorf("error %d is %q, want it to contain %q", i, err, want[i])
		}
	}
}

func TestCollectOSFallback(t *testing.T) {
	tests := []struct {
		name       string
		fsys       fstest.MapFS
		wantID     string
		wantSource string
		wantErrors int
	}{
		{
			name: "etc wins",
			fsys: fstest.MapFS{
				"etc/os-release":     {Data: []byte(debianOSRelease)},
				"usr/lib/os-release": {Data: []byte(ubuntuJammyOSRelease)},
			},
			wantID: "debian", wantSource: "/etc/os-release:6",
		},
		{
			name:   "usr/lib when etc is missing",
			fsys:   fstest.MapFS{"usr/lib/os-release": {Data: []byte(rockyOSRelease)}},
			wantID: "rocky", wantSource: "/usr/lib/os-release:3",
		},
		{
			name: "usr/lib when etc is unreadable",
			fsys: fstest.MapFS{
				"etc/os-release/x":   {Data: nil},
				"usr/lib/os-release": {Data: []byte(rockyOSRelease)},
			},
			wantID: "rocky", wantSource: "/usr/lib/os-release:3", wantErrors: 1,
		},
		{name: "neither", fsys: fstest.MapFS{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := versionsTestCollection(FS(tt.fsys))
			collectOS(c)
			if c.snap.OS.ID != tt.wantID || c.snap.Sources["os.id"].String() != tt.wantSource {
				t.Errorf("os.id = %q from %q, want %q from %q", c.snap.OS.ID, c.snap.Sources["os.id"].String(), tt.wantID, tt.wantSource)
			}
			if len(c.snap.Errors) != tt.wantErrors {
				t.Errorf("errors: %v, want %d", c.snap.Errors, tt.wantErrors)
			}
		})
	}
}

func FuzzOSRelease(f *testing.F) {
	for _, s := range []string{
		ubuntuJammyOSRelease, rockyOSRelease, debianOSRelease,
		"ID=\"unterminated\n", `NAME='a'"b"\c`, "\x7fELF\x02\x01=\x00", "A=\\", "A= # c", "=x\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		vars, errs := parseOSRelease(data)
		lines := strings.Count(string(data), "\n") + 1
		for k, v := range vars {
			if !isShellName(k) {
				t.Errorf("key %q is not a shell name", k)
			}
			if v.Line < 1 || v.Line > lines {
				t.Errorf("%s: line %d outside 1..%d", k, v.Line, lines)
			}
		}
		for _, err := range errs {
			if !errors.Is(err, ErrParse) {
				t.Errorf("%v does not wrap ErrParse", err)
			}
		}
	})
}
