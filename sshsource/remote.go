package sshsource

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
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
// rule to add (TestStreamCoversFamilyReads checks the families' declared
// reads without a fixture). Processes are listed by the read of their
// comm, in one pass.

// descend are the directories whose every entry is listed (anchored
// POSIX-extended regular expressions over "./path", as find -regex takes
// them). A directory outside them is listed as an entry of its parent only.
// Those a collector family declares it reads that these rules do not list
// (familyDescend) are added to them.
var descend = append(slices.Clip(descendRules), familyDescend...)

// descendRules are written here: the trees found as a scan goes (sysfs
// devices, the library scan) and what families read.
var descendRules = []string{
	`\.`,
	`\./etc(/.*)?`,
	`\./(usr/lib|lib|usr/local/lib|run)`,
	`\./(usr/lib|lib|usr/local/lib|run)/(sysctl\.d|modprobe\.d|modules-load\.d|systemd|systemd/logind\.conf\.d|kernel)`,
	`\./usr/lib/firewalld(/zones)?`,
	`\./(usr|usr/local|usr/lib64|usr/local/lib64|usr/lib/x86_64-linux-gnu|usr/lib/aarch64-linux-gnu|usr/bin|sbin|usr/sbin|opt|opt/[^/]+|opt/conda/envs|opt/conda/lib)`,
	`\./usr/local/cuda[^/]*(/targets(/[^/]+(/lib)?)?|/lib64)?`,
	pythonLib + `(/(dist|site)-packages(/nvidia(/[^/]+(/lib)?)?|/nvidia_[^/]*\.dist-info)?)?`,
	`\./opt/[^/]+/[^/]+(/lib(64)?)?`,
	// aws-ofi-nccl's Debian-family multiarch directories.
	`\./opt/[^/]+(/[^/]+)?/lib/(x86_64|aarch64)-linux-gnu`,
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
// collector opens them. Those a collector family declares that these rules
// do not stream (familyRead) are added to them.
var read = append(slices.Clip(readRules), familyRead...)

// readRules are written here.
var readRules = []string{
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
	sc := newScanner(context.Background(), bytes.NewReader(out), defaultLimits)
	if err := sc.skipStart(); err != nil {
		return nil, err
	}
	return out[sc.consumed:], nil
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

// execs reads the trailer's record of each of cmds, as execTrailer prints
// them. A trailer cut short (the script was ended) leaves the commands it
// did not reach out of the map: they are run on their own if asked for.
func (s *scanner) execs(cmds [][]string) (map[string]execResult, error) {
	res := map[string]execResult{}
	for range cmds {
		out, err := s.until(0, maxExecOutput, "a command's output")
		if err == nil {
			var rec []byte
			if rec, err = s.next(0, "a command's record"); err == nil {
				var i, status, n int
				if _, serr := fmt.Sscanf(string(rec), execMark+" %d %d %d", &i, &status, &n); serr != nil || i < 0 || i >= len(cmds) || n != len(out) {
					return nil, fmt.Errorf("%w: command record %q", errStream, rec)
				}
				res[commandKey(cmds[i][0], cmds[i][1:])] = execResult{status: status, out: out}
				continue
			}
		}
		if errors.Is(err, errStream) {
			return res, nil
		}
		return nil, err
	}
	return res, nil
}

// maxExecOutput caps one command's output, as session.runner caps it.
const maxExecOutput = 1 << 20

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
// remoteEnv, through sudo -n when become (never a password prompt), under
// guard.
func wrap(script string, become bool) string {
	cmd := "exec "
	if become {
		cmd += "sudo -n -- "
	}
	return cmd + "env -i " + remoteEnv + ` FLEETAUDIT_SSH="$SSH_CONNECTION" /bin/sh -c ` + shellQuote(guard) + " sh " + shellQuote(script)
}

// guard runs the script ($1) while its standard input is open: the client
// holds it open while it wants the command, so a host timeout, a cap, an
// interrupt or a lost connection (sshd then closes the command's pipes,
// and passes it no signal) ends the script and all it started. Under sshd
// the process group is the command's own (sshd made it), so all of it is
// killed; elsewhere (a test's local sh) only the script.
const guard = `exec 3<&0
/bin/sh -c "$1" </dev/null 3<&- &
p=$!
{ while read -r _; do :; done; [ -n "$FLEETAUDIT_SSH" ] && kill -KILL 0; kill -KILL $p; } <&3 >/dev/null 2>&1 &
w=$!
exec 3<&-
wait $p
s=$?
kill $w 2>/dev/null
exit $s`

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

// errLimit marks a host that sent more than a limit allows: a broken or
// hostile host, failed whole, never read in part.
var errLimit = &limitError{"over a limit"}

type limitError struct{ msg string }

func (e *limitError) Error() string        { return e.msg }
func (e *limitError) Is(target error) bool { return target == errLimit }

func overLimit(format string, args ...any) error {
	return &limitError{fmt.Sprintf(format, args...)}
}

// limits bound what one host may send; past one, the host fails and its
// command is ended.
type limits struct {
	stream   int64 // standard output of one command
	preamble int64 // what comes before the start marker (a login shell's chatter)
	stderr   int64 // standard error of one command
	entries  int   // listing records
	record   int   // one listing record, link target or header line
}

// maxEntries caps the listing (a GPU host lists about 20,000 names; a
// listing of 3 million took a gigabyte).
const maxEntries = 250_000

var defaultLimits = limits{stream: maxStream, preamble: 1 << 20, stderr: 1 << 20, entries: maxEntries, record: 64 << 10}

// size words a limit for messages.
func size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// scanner reads a host's stream once, front to back, holding at most a
// buffer of it: every byte is looked at a bounded number of times whatever
// the host sends, and the context is checked before every read.
type scanner struct {
	ctx        context.Context
	r          io.Reader
	lim        limits
	buf        []byte
	start, end int   // buf[start:end] is read and not consumed
	consumed   int64 // bytes consumed
	read       int64 // bytes read from r
	err        error // what ended the stream (io.EOF when it ended)
}

func newScanner(ctx context.Context, r io.Reader, lim limits) *scanner {
	return &scanner{ctx: ctx, r: r, lim: lim, buf: make([]byte, 2*lim.record+32<<10)}
}

func (s *scanner) advance(n int) {
	s.start += n
	s.consumed += int64(n)
}

// fill reads more of the stream; false when it has ended, s.err saying how.
func (s *scanner) fill() bool {
	if s.err != nil {
		return false
	}
	if s.ctx.Err() != nil {
		s.err = context.Cause(s.ctx)
		return false
	}
	if s.start == s.end || (s.start > 0 && len(s.buf)-s.end < len(s.buf)/2) {
		s.end = copy(s.buf, s.buf[s.start:s.end])
		s.start = 0
	}
	n, err := s.r.Read(s.buf[s.end:])
	s.end += n
	s.read += int64(n)
	switch {
	case s.ctx.Err() != nil:
		s.err = context.Cause(s.ctx)
	case s.read > s.lim.stream:
		s.err = overLimit("the host sent more than %s on standard output", size(s.lim.stream))
	case err != nil:
		s.err = err
		return n > 0
	}
	return s.err == nil
}

// ended is the error of a stream that stopped before what was expected.
func (s *scanner) ended(what string) error {
	if s.err == nil || errors.Is(s.err, io.EOF) {
		return fmt.Errorf("%w: %s", errStream, what)
	}
	return s.err
}

// skipStart consumes the stream up to and including the start marker.
func (s *scanner) skipStart() error {
	m := []byte(startMarker)
	for {
		if i := bytes.Index(s.buf[s.start:s.end], m); i >= 0 {
			s.advance(i + len(m))
			return nil
		}
		// Keep only a tail that may begin the marker.
		if n := s.end - s.start - (len(m) - 1); n > 0 {
			s.advance(n)
		}
		if s.consumed > s.lim.preamble {
			return overLimit("the host printed more than %s before the stream started", size(s.lim.preamble))
		}
		if !s.fill() {
			return s.ended("no start marker (did the command run?)")
		}
	}
}

// next returns the bytes up to the next delim, consuming both; the slice
// is valid until the next call.
func (s *scanner) next(delim byte, what string) ([]byte, error) {
	scanned := 0
	for {
		if i := bytes.IndexByte(s.buf[s.start+scanned:s.end], delim); i >= 0 {
			rec := s.buf[s.start : s.start+scanned+i]
			s.advance(scanned + i + 1)
			return rec, nil
		}
		scanned = s.end - s.start
		if scanned > s.lim.record {
			return nil, overLimit("%s has a record longer than %s", what, size(int64(s.lim.record)))
		}
		if !s.fill() {
			return nil, s.ended(what + " ends early")
		}
	}
}

// until returns the bytes up to the next delim, consuming both, as a new
// slice of at most max bytes.
func (s *scanner) until(delim byte, max int, what string) ([]byte, error) {
	var out []byte
	for {
		avail := s.buf[s.start:s.end]
		i := bytes.IndexByte(avail, delim)
		n := i
		if i < 0 {
			n = len(avail)
		}
		if len(out)+n > max {
			return nil, overLimit("%s is longer than %s", what, size(int64(max)))
		}
		out = append(out, avail[:n]...)
		if i >= 0 {
			s.advance(i + 1)
			return out, nil
		}
		s.advance(n)
		if !s.fill() {
			return nil, s.ended(what + " ends early")
		}
	}
}

// peekLine returns the buffered line at the front, its newline included,
// reading until it is whole; false when it is longer than a record or the
// stream ends first. Nothing is consumed.
func (s *scanner) peekLine() ([]byte, bool) {
	scanned := 0
	for {
		if i := bytes.IndexByte(s.buf[s.start+scanned:s.end], '\n'); i >= 0 {
			return s.buf[s.start : s.start+scanned+i+1], true
		}
		scanned = s.end - s.start
		if scanned > s.lim.record || !s.fill() {
			return nil, false
		}
	}
}

// listing reads find's records up to the metaEnd marker, passing each to
// add.
func (s *scanner) listing(add func(entry)) error {
	for n := 0; ; n++ {
		rec, err := s.next(0, "the listing")
		if err != nil {
			return err
		}
		if string(rec) == metaEnd {
			return nil
		}
		if n >= s.lim.entries {
			return overLimit("the listing has more than %d entries", s.lim.entries)
		}
		e, err := parseRecord(rec)
		if err != nil {
			return err
		}
		target, err := s.next(0, "the listing")
		if err != nil {
			return err
		}
		e.target = string(target)
		add(e)
	}
}

// parseRecord reads one find record: flag, type, mode, size, path.
func parseRecord(b []byte) (entry, error) {
	rec := string(b)
	fields := strings.SplitN(rec, " ", 5)
	if len(fields) != 5 || len(fields[1]) != 1 {
		return entry{}, fmt.Errorf("%w: listing record %q", errStream, rec)
	}
	mode, err := strconv.ParseUint(fields[2], 8, 32)
	if err != nil {
		return entry{}, fmt.Errorf("%w: mode in %q", errStream, rec)
	}
	size, err := strconv.ParseInt(fields[3], 10, 64)
	if err != nil {
		return entry{}, fmt.Errorf("%w: size in %q", errStream, rec)
	}
	name, ok := relName(fields[4])
	if !ok {
		return entry{}, fmt.Errorf("%w: path %q", errStream, fields[4])
	}
	return entry{full: fields[0] == "F", unreadable: fields[0] == "U", typ: fields[1][0], mode: uint32(mode), size: size, name: name}, nil
}

// parseMeta reads find records up to the metaEnd marker and returns them
// with the rest of the stream.
func parseMeta(data []byte) ([]entry, []byte, error) {
	var out []entry
	sc := newScanner(context.Background(), bytes.NewReader(data), defaultLimits)
	if err := sc.listing(func(e entry) { out = append(out, e) }); err != nil {
		return nil, nil, err
	}
	return out, data[sc.consumed:], nil
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

// contents reads head's output, passing each file to got: a file is
// "==> name <==\n", its bytes, then "\n" (head's separator or the echo
// after each batch), and the stream ends with the contentsEnd header. A
// header is a whole line that starts a line of the stream and names a file
// that could come (expect), other than the one being read, so a file's text
// that looks like a header for anything else stays text. Each file is at
// most fileCap bytes, as head cut it.
//
// A name with a newline spans lines: such a file is not taken (its reader
// fetches it when opened), and a file whose text holds the first line of
// such a header is dropped too, as where it ends is not known.
func (s *scanner) contents(expect func(name string) bool, multiline map[string]bool, fileCap int64, got func(name string, data []byte)) error {
	const open, close = "==> ", " <==\n"
	var (
		cur       string // the file being read; "" before the first header
		data      []byte // its bytes so far
		lineStart = true // the next byte starts a line of a file's text
		dropped   bool   // cur's bytes are not known to be its own
	)
	header := func(line []byte) (string, bool) {
		if len(line) < len(open)+len(close) || !bytes.HasPrefix(line, []byte(open)) || !bytes.HasSuffix(line, []byte(close)) {
			return "", false
		}
		name := line[len(open) : len(line)-len(close)]
		if string(name) == cur {
			return "", false
		}
		if string(name) == contentsEnd {
			return contentsEnd, true
		}
		n := string(name)
		return n, expect(n)
	}
	for {
		if lineStart && s.end-s.start < len(open) && s.fill() {
			continue
		}
		if lineStart && bytes.HasPrefix(s.buf[s.start:s.end], []byte(open)) {
			if line, ok := s.peekLine(); ok {
				if name, ok := header(line); ok {
					if cur != "" && !dropped {
						// The newline before a header is head's, not the file's.
						got(cur, append(make([]byte, 0, len(data)), data[:len(data)-1]...))
					}
					s.advance(len(line))
					if name == contentsEnd {
						return nil
					}
					if _, ok := relName(name); !ok {
						return fmt.Errorf("%w: path %q", errStream, name)
					}
					cur, data, lineStart, dropped = name, data[:0], false, false
					continue
				}
				if multiline[string(line)] {
					dropped = true
				}
			}
		}
		avail := s.buf[s.start:s.end]
		if len(avail) == 0 {
			if !s.fill() {
				if cur == "" {
					return s.ended("the contents do not start with a header")
				}
				return s.ended("the contents of " + cur + " end early")
			}
			continue
		}
		if cur == "" {
			return fmt.Errorf("%w: contents do not start with a header", errStream)
		}
		n := bytes.IndexByte(avail, '\n') + 1
		lineStart = n > 0
		if n == 0 {
			n = len(avail)
		}
		if !dropped {
			if int64(len(data)+n) > fileCap+1 {
				return overLimit("%s: more than the %s the stream carries of a file", cur, size(fileCap))
			}
			data = append(data, avail[:n]...)
		}
		s.advance(n)
	}
}
