package snapshot

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// FileExt ends a snapshot file's name in a directory of snapshots.
const FileExt = ".json"

// maxNameBytes keeps HOST.json within NAME_MAX (255 bytes).
const maxNameBytes = 255 - len(FileExt)

// ErrBadHostName is wrapped when a host name cannot name a file.
var ErrBadHostName = errors.New("not a safe file name")

// CheckHostName fails when name cannot be a single file name in a
// directory: every place a host name becomes a file name goes through it,
// so a name like ../../etc/cron.d/x never writes outside its directory.
func CheckHostName(name string) error {
	why := ""
	switch {
	case name == "":
		why = "empty"
	case name == "." || name == "..":
		why = "a relative directory"
	case strings.ContainsAny(name, `/\`):
		why = "it contains a path separator"
	case strings.ContainsFunc(name, func(r rune) bool { return r < ' ' || r == 0x7f }):
		why = "it contains a control character"
	case !utf8.ValidString(name):
		why = "it is not UTF-8"
	case len(name) > maxNameBytes:
		why = fmt.Sprintf("longer than %d bytes", maxNameBytes)
	default:
		return nil
	}
	return fmt.Errorf("host name %q: %w: %s", name, ErrBadHostName, why)
}

// FileName is host's snapshot file name in a directory: host + FileExt,
// or an error when the host name is not one safe path element.
func FileName(host string) (string, error) {
	if err := CheckHostName(host); err != nil {
		return "", err
	}
	return host + FileExt, nil
}
