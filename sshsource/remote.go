package sshsource

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/fleetaudit/fleetaudit/collectors"
)

// The remote side is one POSIX sh script run through env -i (no login
// shell, no rc files, nothing written): GNU find walks the tree under the
// root without ever following a symbolic link (-P) and prints every entry's
// type, mode, size and link target; then one head process prints the
// contents of the files the collectors read, each after head's own
// "==> name <==" header. Links are resolved on this side, as after chroot,
// by collectors.Chroot over the tree the stream builds: the remote host
// never resolves a link, so a remote root other than "/" cannot be escaped.
//
// The listing is authoritative: a name under a directory it lists whole
// exists as listed or not at all, and a listed file it was to stream that
// has no contents went away in between (a process that exited). A name
// outside it is fetched when a collector asks for it (see tree.spend),
// within a small per-host budget, so a collector added later reads the same
// facts, one round trip slower, and TestFixtureRootsNeedNoMiss says which
// rule to add (TestStreamCoversBootPaths checks BootPaths without a
// fixture). Processes are listed by the read of their comm, in one pass.

// descend are the directories whose every entry is listed (anchored
// POSIX-extended regular expressions over "./path", as find -regex takes
// them). A directory outside them is listed as an entry of its parent only.
var descend = []string{
	`\.`,
	`\./etc(/.*)?`,
	`\./(usr/lib|lib|usr/local/lib|run)`,
	`\./(usr/lib|lib|usr/local/lib|run)/(sysctl\.d|modprobe\.d|modules-load\.d|systemd|systemd/logind\.conf\.d|kernel)`,
	`\./usr/lib/firewalld(/zones)?`,
	`\./(usr|usr/local|usr/lib64|usr/local/lib64|usr/lib/x86_64-linux-gnu|usr/lib/aarch64-linux-gnu|usr/bin|sbin|usr/sbin|opt|opt/[^/]+|opt/conda/envs|opt/conda/lib)`,
	`\./usr/local/cuda[^/]*(/targets(/[^/]+(/lib)?)?|/lib64)?`,
	pythonLib + `(/(dist|site)-packages(/nvidia(/[^/]+(/lib)?)?|/nvidia_[^/]*\.dist-info)?)?`,
	`\./opt/[^/]+/[^/]+(/lib(64)?)?`,
	`\./opt/conda/envs/[^/]+(/lib)?`,
	`\./var(/lib(/dpkg)?)?`,
	`\./dev(/infiniband)?`,
	`\./proc(/driver(/.*)?|/sys(/.*)?)?`,
	`\./sys(/bus(/pci(/devices)?)?|/class(/infiniband|/iommu|/net|/dmi)?|/module(/nvidia)?|/hypervisor|/kernel(/mm(/transparent_hugepage)?|/iommu_groups(/[^/]+)?)?)?`,
	// /sys/class/net's links land on the interface under its PCI function
	// (under virtioN for virtio-net) or under devices/virtual.
	`\./sys/devices(/pci[^/]*(/[0-9a-f]{4}:[^/]*)*(/infiniband(/[^/]+(/ports(/[^/]+)?)?)?|(/virtio[0-9]+)?(/net(/[^/]+)?)?)?)?`,
	`\./sys/devices/virtual(/net(/[^/]+)?|/dmi(/id)?)?`,
	`\./sys/firmware(/efi(/efivars)?)?`,
	`\./(boot|efi|boot/efi)(/loader(/entries)?|/EFI(/[^/]+)?|/grub2?)?`,
	`\./` + unitDirs + `/systemd(/system(/` + jobUnits + `\.d)?|/system\.conf\.d)`,
}

// read are the files whose contents are streamed; the rest are read when a
// collector opens them.
var read = []string{
	`\./etc/(default/grub(\.d/.*)?|kernel/cmdline|sysctl\.conf|sysctl\.d/.*|security/limits\.(conf|d/.*)|systemd/logind\.conf(\.d/.*)?|modprobe\.d/.*|modules|modules-load\.d/.*|ld\.so\.conf(\.d/.*)?|profile\.d/.*|environment|os-release|hostname|nccl\.conf|ufw/(ufw\.conf|(user|before)6?\.rules)|default/ufw|firewalld/(firewalld\.conf|zones/[^/]+\.xml)|(sysconfig/)?nftables\.conf|nftables/[^/]+)`,
	`\./usr/lib/firewalld/zones/[^/]+\.xml`,
	`\./(usr/lib|lib|usr/local/lib|run)/((sysctl|modprobe|modules-load)\.d/.*|systemd/logind\.conf\.d/.*|os-release|kernel/cmdline)`,
	`\./proc/(cmdline|cpuinfo|meminfo|modules|driver/.*|sys/.*)`,
	`\./sys/(module/nvidia/version|hypervisor/type|devices/virtual/dmi/id/(sys_vendor|product_name)|kernel/mm/transparent_hugepage/enabled|kernel/iommu_groups/[^/]+/type)`,
	`\./sys/devices/pci[^/]*(/[0-9a-f]{4}:[^/]*)+/(vendor|device|class|config|resource|infiniband/[^/]+/ports/[^/]+/(link_layer|rate|state))`,
	`\./sys/devices/(pci[^/]*(/[0-9a-f]{4}:[^/]*)+(/virtio[0-9]+)?|virtual)/net/[^/]+/(operstate|mtu|type)`,
	`\./` + unitDirs + `/systemd/(system\.conf(\.d/[^/]+)?|system/` + jobUnits + `(\.d/[^/]+)?)`,
	`\./var/lib/dpkg/status`,
	`\./(boot|efi|boot/efi)/(loader/(loader\.conf|entries/[^/]+)|grub2?/(grub\.cfg|grubenv)|EFI/[^/]+/grub\.cfg)`,
	`\./sys/firmware/efi/efivars/Loader[^/]*`,
	`.*\.dist-info/(METADATA|RECORD)`,
}

// readRE and procFile say which listed files the stream carries.
var (
	readRE   = regexp.MustCompile(`^` + alternation(read) + `$`)
	procFile = regexp.MustCompile(`^proc/([0-9]+)/(comm|limits)$`)
)

// streamed says whether the snapshot script sends name's contents when the
// listing has it as a readable regular file.
func streamed(name string) bool {
	return procFile.MatchString(name) || readRE.MatchString("./"+name)
}

// unitDirs are where systemd looks for units and system.conf (/etc is
// listed whole by the rule above).
const unitDirs = `(etc|run|usr/local/lib|usr/lib|lib)`

// jobUnits matches the units the services and firewall collectors read
// and the service.d drop-ins that apply to all of them.
var jobUnits = func() string {
	units, _ := collectors.JobServiceNames()
	units = append(units, collectors.FirewallUnits()...)
	res := []string{"service"}
	for _, u := range units {
		res = append(res, regexp.QuoteMeta(u))
	}
	return alternation(res)
}()

// jobComms is a sh case pattern of the services' process names: their
// /proc/<pid> is listed and its limits streamed.
var jobComms = func() string {
	_, comms := collectors.JobServiceNames()
	quoted := make([]string, len(comms))
	for i, c := range comms {
		quoted[i] = shellQuote(c)
	}
	return strings.Join(quoted, "|")
}()

// pythonLib are the python3.X directories the library scan looks in.
const pythonLib = `\./(usr/local/lib|usr/lib|opt/[^/]+/lib|opt/[^/]+/[^/]+/lib|opt/conda/envs/[^/]+/lib)/python3[^/]*`

func alternation(res []string) string { return `(` + strings.Join(res, `|`) + `)` }

// remoteEnv is the whole environment of the remote command: no variable of
// the login session reaches it.
const remoteEnv = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/usr/local/nvidia/bin LC_ALL=C"

// Stream markers. streamStart comes first: whatever a login shell's rc
// file printed before the script ran is skipped, never read as the host's.
const (
	streamStart = "fleetaudit-stream-start"
	metaEnd     = "fleetaudit-meta-end"
	contentsEnd = "fleetaudit-contents-end"
)

// startMarker is what the scripts print before anything else.
const startMarker = streamStart + "\x00"

// afterStart drops what came before the start marker.
func afterStart(out []byte) ([]byte, error) {
	i := bytes.Index(out, []byte(startMarker))
	if i < 0 {
		return nil, fmt.Errorf("%w: no start marker (did the command run?)", errStream)
	}
	return out[i+len(startMarker):], nil
}

// metaFormat is find's -printf record after a flag (F: a directory whose
// entries are all listed; U: not readable by the remote user; else -): type, octal mode, size, path, then the link target.
const metaFormat = `%y %#m %s %p\0%l\0`

// snapshotScript is the script that streams what a snapshot reads from the
// tree under root; capBytes caps each file. After the contents it runs cmds
// (see execTrailer), so they cost no exec of their own.
func snapshotScript(root string, capBytes int64, cmds ...[]string) string {
	d, r := shellQuote(`^`+alternation(descend)+`$`), shellQuote(`^`+alternation(read)+`$`)
	return strings.Join(append([]string{
		`cd -- ` + shellQuote(root) + ` || exit 3`,
		`printf '%s\0' ` + streamStart,
		// A process is listed by the read of its comm (below), not here:
		// one that exits between a listing and a read is simply not there.
		`find -P . -regextype posix-extended \( -regex '\./proc/[0-9]+' -prune \) -o \( -type d -readable -regex ` + d + ` -printf 'F ` + metaFormat + `' \) -o \( -readable -printf '- ` + metaFormat + `' -prune \) -o \( -printf 'U ` + metaFormat + `' -prune \)`,
		// The job services' /proc/<pid> is listed whole (its limits file,
		// or that there is none); PIDs are digits, so $svc splits safely.
		// A process whose entry or comm is not a plain directory and file
		// (a link, in a tree that is not a live /proc) is listed here.
		`svc=; odd=; [ -d ./proc ] && [ ! -L ./proc ] && for d in ./proc/[0-9]*; do`,
		`  case ${d#./proc/} in *[!0-9]*) continue;; esac`,
		`  if [ -L "$d" ] || [ ! -d "$d" ]; then odd="$odd $d"; continue; fi`,
		`  if [ -L "$d/comm" ] || { [ -e "$d/comm" ] && [ ! -f "$d/comm" ]; }; then odd="$odd $d $d/comm"; continue; fi`,
		`  [ -d "$d" ] && [ ! -L "$d" ] && [ -r "$d" ] && [ -x "$d" ] && [ -f "$d/comm" ] && [ ! -L "$d/comm" ] && [ -r "$d/comm" ] || continue`,
		`  c=; read -r c < "$d/comm"; case $c in ` + jobComms + `) svc="$svc $d";; esac`,
		`done`,
		`[ -n "$odd" ] && find -P $odd -maxdepth 0 \( -readable -printf '- ` + metaFormat + `' \) -o -printf 'U ` + metaFormat + `'`,
		`[ -n "$svc" ] && find -P $svc -maxdepth 1 -regextype posix-extended \( -regex '\./proc/[0-9]+' -printf 'F ` + metaFormat + `' \) -o \( -readable -printf '- ` + metaFormat + `' \) -o -printf 'U ` + metaFormat + `'`,
		// The library directories ld.so.conf names are listed too (an
		// exec each otherwise), with each directory on the way: plain
		// names under the root, never through a link. One that is not
		// there has its nearest parent listed whole, so it is known absent.
		`on=; dirs=; n=0; for f in ./etc/ld.so.conf ./etc/ld.so.conf.d/*.conf; do [ -f "$f" ] && [ ! -L "$f" ] && [ -r "$f" ] || continue`,
		`  while IFS= read -r d || [ -n "$d" ]; do`,
		`    d=${d%%#*}; set -f; set -- $d; set +f; d=${1%%=*}`,
		`    case $d in /*) ;; *) continue;; esac`,
		`    case $d in *[!A-Za-z0-9_./+-]*|*/../*|*/..|*/./*|*//*) continue;; esac`,
		`    n=$((n+1)); [ $n -le 64 ] || break`,
		`    p=.; IFS=/; for c in ${d#/}; do [ -d "$p/$c" ] && [ ! -L "$p/$c" ] || break; p="$p/$c"; on="$on $p"; done; unset IFS`,
		`    [ "$p" != . ] && dirs="$dirs $p"`,
		`  done < "$f"`,
		`done`,
		`[ -n "$on" ] && find -P $on -maxdepth 0 -printf '- ` + metaFormat + `'`,
		`[ -n "$dirs" ] && set -- $(find -P $dirs -maxdepth 0 -regextype posix-extended \( -regex ` + d + ` -o ! -readable -o ! -executable \) -prune -o -print | sort -u) && [ $# -gt 0 ] &&`,
		`  find -P "$@" -maxdepth 0 -printf 'F ` + metaFormat + `' && find -P "$@" -mindepth 1 -maxdepth 1 \( -readable -printf '- ` + metaFormat + `' \) -o -printf 'U ` + metaFormat + `'`,
		`printf '%s\0' ` + metaEnd,
		`{ find -P . -regextype posix-extended \( -type d \( -regex ` + d + ` -o -prune \) \) -o \( -type f -readable -regex ` + r + ` -print0 \)`,
		`  [ -d ./proc ] && [ ! -L ./proc ] && for f in ./proc/[0-9]*/comm; do [ ! -L "${f%/comm}" ] && [ -f "$f" ] && [ ! -L "$f" ] && [ -r "$f" ] && printf '%s\0' "$f"; done`,
		`  for d in $svc; do [ -f "$d/limits" ] && [ ! -L "$d/limits" ] && [ -r "$d/limits" ] && printf '%s\0' "$d/limits"; done; } |`,
		`  xargs -0 -r sh -c 'head -c ` + strconv.FormatInt(capBytes, 10) + ` -v -- "$@"; echo' sh`,
		`printf '==> %s <==\n' ` + contentsEnd,
	}, execTrailer(cmds)...), "\n")
}

// execMark starts the record that follows each command's output at the end
// of the stream: "<stdout>\0fleetaudit-exec <index> <status> <length>\0".
const execMark = "fleetaudit-exec"

// execTimeout bounds a command, as session.runner bounds one of its own.
const execTimeout = 10 * time.Second

// execTrailer runs each command as session.runner would (stdin empty,
// bounded by execTimeout where coreutils' timeout is there) and prints its
// standard output, exit status and length. Output is text: a NUL in it is
// dropped.
func execTrailer(cmds [][]string) []string {
	if len(cmds) == 0 {
		return nil
	}
	out := []string{`t=; command -v timeout >/dev/null 2>&1 && t='timeout ` + strconv.Itoa(int(execTimeout.Seconds())) + `'`}
	for i, c := range cmds {
		words := make([]string, len(c))
		for j, w := range c {
			words[j] = shellQuote(w)
		}
		out = append(out, `o=; s=127; command -v `+words[0]+` >/dev/null 2>&1 && { o=$($t `+strings.Join(words, " ")+` 2>/dev/null </dev/null; printf ' %s' "$?"); s=${o##* }; o=${o% *}; }; printf '%s\0`+execMark+` %d %s %s\0' "$o" `+strconv.Itoa(i)+` "$s" "${#o}"`)
	}
	return out
}

// execResult is one command's outcome from the trailer.
type execResult struct {
	status int
	out    []byte
}

// cutExecs takes the commands' records off the end of a snapshot stream.
func cutExecs(out []byte, cmds [][]string) ([]byte, map[string]execResult) {
	res := map[string]execResult{}
	for len(out) > 0 && out[len(out)-1] == 0 {
		end := len(out) - 1
		at := bytes.LastIndex(out[:end], []byte("\x00"+execMark+" "))
		if at < 0 {
			break
		}
		var i, status, n int
		if _, err := fmt.Sscanf(string(out[at+1+len(execMark)+1:end]), "%d %d %d", &i, &status, &n); err != nil ||
			i < 0 || i >= len(cmds) || n < 0 || n > at {
			break
		}
		res[commandKey(cmds[i][0], cmds[i][1:])] = execResult{status: status, out: out[at-n : at]}
		out = out[:at-n]
	}
	return out, res
}

// commandKey names a command line in cutExecs' map.
func commandKey(name string, args []string) string {
	return strings.Join(append([]string{name}, args...), "\x00")
}

// metaScript lists one name (and its entries, when it is a readable
// directory) without following a link.
func metaScript(root, name string) string {
	return `cd -- ` + shellQuote(root) + ` || exit 3` + "\n" +
		`printf '%s\0' ` + streamStart + "\n" +
		`n=` + shellQuote("./"+name) + "\n" +
		`if [ -d "$n" ] && [ ! -L "$n" ] && [ -r "$n" ] && [ -x "$n" ]; then find -P "$n" -maxdepth 1 \( -path "$n" -printf 'F ` + metaFormat + `' \) -o \( -readable -printf '- ` + metaFormat + `' \) -o -printf 'U ` + metaFormat + `'` + "\n" +
		`else find -P "$n" -maxdepth 0 \( -readable -printf '- ` + metaFormat + `' \) -o -printf 'U ` + metaFormat + `'; fi` + "\n" +
		`printf '%s\0' ` + metaEnd
}

// readScript streams one file's contents, up to capBytes.
func readScript(root, name string, capBytes int64) string {
	return `cd -- ` + shellQuote(root) + ` || exit 3` + "\n" +
		`printf '%s\0' ` + streamStart + "\n" +
		`exec head -c ` + strconv.FormatInt(capBytes, 10) + ` -- ` + shellQuote("./"+name)
}

// shellQuote quotes s as one POSIX sh word.
func shellQuote(s string) string {
	return `'` + strings.ReplaceAll(s, `'`, `'\''`) + `'`
}

// wrap makes script the remote command: run by /bin/sh with only
// remoteEnv, through sudo -n when become (never a password prompt).
func wrap(script string, become bool) string {
	cmd := "exec "
	if become {
		cmd += "sudo -n -- "
	}
	return cmd + "env -i " + remoteEnv + " /bin/sh -c " + shellQuote(script)
}

// entry is one record of find's listing.
type entry struct {
	full       bool // a directory whose entries are all listed
	unreadable bool
	typ        byte // find's %y: f d l c b p s
	mode       uint32
	size       int64
	name       string // relative to the root, "." for the root
	target     string
}

var errStream = errors.New("malformed stream from the host")

// parseMeta reads find records up to the metaEnd marker and returns them
// with the rest of the stream.
func parseMeta(data []byte) ([]entry, []byte, error) {
	var out []entry
	for {
		i := bytes.IndexByte(data, 0)
		if i < 0 {
			return nil, nil, fmt.Errorf("%w: the listing ends early", errStream)
		}
		rec := string(data[:i])
		data = data[i+1:]
		if rec == metaEnd {
			return out, data, nil
		}
		j := bytes.IndexByte(data, 0)
		if j < 0 {
			return nil, nil, fmt.Errorf("%w: the listing ends early", errStream)
		}
		target := string(data[:j])
		data = data[j+1:]
		fields := strings.SplitN(rec, " ", 5)
		if len(fields) != 5 || len(fields[1]) != 1 {
			return nil, nil, fmt.Errorf("%w: listing record %q", errStream, rec)
		}
		mode, err := strconv.ParseUint(fields[2], 8, 32)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: mode in %q", errStream, rec)
		}
		size, err := strconv.ParseInt(fields[3], 10, 64)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: size in %q", errStream, rec)
		}
		name, ok := relName(fields[4])
		if !ok {
			return nil, nil, fmt.Errorf("%w: path %q", errStream, fields[4])
		}
		out = append(out, entry{full: fields[0] == "F", unreadable: fields[0] == "U", typ: fields[1][0], mode: uint32(mode), size: size, name: name, target: target})
	}
}

// relName turns find's "./etc/x" into "etc/x" and "." into ".".
func relName(p string) (string, bool) {
	if p == "." {
		return ".", true
	}
	rest, ok := strings.CutPrefix(p, "./")
	if !ok || rest == "" {
		return "", false
	}
	return rest, true
}

// parseContents splits head's output: each file is "==> name <==\n", its
// bytes, "\n" (head's separator or the echo after each batch), and the
// stream ends with the contentsEnd header. A header is recognised only for
// a name that could still come next, so a file's text that looks like a
// header for anything else stays text.
func parseContents(data []byte, expect func(name string) bool) (map[string][]byte, error) {
	out := map[string][]byte{}
	const open, close = "==> ", " <==\n"
	header := func(at int) (string, int, bool) {
		if !bytes.HasPrefix(data[at:], []byte(open)) {
			return "", 0, false
		}
		end := bytes.Index(data[at+len(open):], []byte(close))
		if end < 0 {
			return "", 0, false
		}
		name := string(data[at+len(open) : at+len(open)+end])
		if name != contentsEnd && !expect(name) {
			return "", 0, false
		}
		return name, at + len(open) + end + len(close), true
	}
	name, pos, ok := header(0)
	if !ok {
		return nil, fmt.Errorf("%w: contents do not start with a header", errStream)
	}
	for name != contentsEnd {
		// The next "\n==> known <==\n" ends this file.
		next := -1
		var nextName string
		var nextPos int
		for from := pos; ; {
			i := bytes.Index(data[from:], []byte("\n"+open))
			if i < 0 {
				break
			}
			at := from + i
			if n, p, ok := header(at + 1); ok && n != name {
				next, nextName, nextPos = at, n, p
				break
			}
			from = at + 1
		}
		if next < 0 {
			return nil, fmt.Errorf("%w: the contents of %s end early", errStream, name)
		}
		rel, ok := relName(name)
		if !ok {
			return nil, fmt.Errorf("%w: path %q", errStream, name)
		}
		out[rel] = data[pos:next]
		name, pos = nextName, nextPos
	}
	return out, nil
}
