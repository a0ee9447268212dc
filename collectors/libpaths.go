package collectors

import (
	"io/fs"
	"strconv"
	"strings"
)

// realPathIn resolves every symbolic link in name inside src, as realpath(3)
// would after chroot, so that two names of one file or directory compare
// equal. Missing components are errors (fs.ErrNotExist).
func realPathIn(src Source, name string) (string, error) {
	// No lexical clean first: ".." after a link climbs from the link's target.
	pending := strings.Split(name, "/")
	var resolved []string
	links := 0
	for len(pending) > 0 {
		part := pending[0]
		pending = pending[1:]
		switch part {
		case "", ".":
			continue
		case "..":
			if len(resolved) > 0 {
				resolved = resolved[:len(resolved)-1]
			}
			continue
		}
		candidate := "/" + strings.Join(append(resolved[:len(resolved):len(resolved)], part), "/")
		info, err := src.Lstat(rel(candidate))
		if err != nil {
			return "", err
		}
		if info.Mode()&fs.ModeSymlink == 0 {
			resolved = append(resolved, part)
			continue
		}
		if links++; links > maxSymlinks {
			return "", &fs.PathError{Op: "realpath", Path: name, Err: errTooManyLinks}
		}
		target, err := src.ReadLink(rel(candidate))
		if err != nil {
			return "", err
		}
		if strings.HasPrefix(target, "/") {
			resolved = nil
		}
		pending = append(strings.Split(target, "/"), pending...)
	}
	return "/" + strings.Join(resolved, "/"), nil
}

// compareDottedVersions orders "2.9.1" before "2.18.3": dot-separated parts
// compare as numbers when both are numeric, as text otherwise.
func compareDottedVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) && i < len(bs); i++ {
		x, errX := strconv.ParseUint(as[i], 10, 64)
		y, errY := strconv.ParseUint(bs[i], 10, 64)
		switch {
		case errX == nil && errY == nil && x != y:
			if x < y {
				return -1
			}
			return 1
		case (errX != nil || errY != nil) && as[i] != bs[i]:
			return strings.Compare(as[i], bs[i])
		}
	}
	return len(as) - len(bs)
}
