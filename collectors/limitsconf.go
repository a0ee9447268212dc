package collectors

import (
	"math"
	"strconv"
	"strings"
)

// This file follows linux-pam's modules/pam_limits/pam_limits.c (1.5/1.6):
// parse_config_file, parse_uid_range, split and process_limit.

// Where a limit came from; a lower number has priority (LIMITS_DEF_*). An
// entry replaces a value set at the same or a lower priority, so within one
// priority the later line wins, and a user line beats any group line, which
// beats any "*" line, whatever their order.
const (
	limitsFromUser     = 0 // "alice", ":1000", "1000:2000"
	limitsFromGroup    = 1 // "@hpc", "@:1000", "@1000:2000"
	limitsFromAllGroup = 2 // "%hpc" (maxlogins only)
	limitsFromAll      = 3 // "%" (maxlogins only)
	limitsFromDefault  = 4 // "*"
)

// rlimInfinity is RLIM_INFINITY on Linux.
const rlimInfinity = math.MaxUint64

type limitKind int

const (
	limitRlimit     limitKind = iota // a setrlimit(2) resource
	limitNice                        // RLIMIT_NICE, written as a nice value
	limitLogins                      // maxlogins, maxsyslogins
	limitPriority                    // process priority, not an rlimit
	limitNoNewPrivs                  // PR_SET_NO_NEW_PRIVS
	limitChroot                      // Debian's patch: a directory to chroot to
)

type limitItem struct {
	kind limitKind
	// scale turns the configured unit into the rlimit unit: KiB for sizes,
	// minutes for cpu.
	scale uint64
}

var limitItems = map[string]limitItem{
	"core":         {limitRlimit, 1024},
	"data":         {limitRlimit, 1024},
	"fsize":        {limitRlimit, 1024},
	"memlock":      {limitRlimit, 1024},
	"rss":          {limitRlimit, 1024},
	"stack":        {limitRlimit, 1024},
	"as":           {limitRlimit, 1024},
	"cpu":          {limitRlimit, 60},
	"nproc":        {limitRlimit, 1},
	"nofile":       {limitRlimit, 1},
	"locks":        {limitRlimit, 1},
	"sigpending":   {limitRlimit, 1},
	"msgqueue":     {limitRlimit, 1},
	"rtprio":       {limitRlimit, 1},
	"rttime":       {limitRlimit, 1},
	"nice":         {limitNice, 1},
	"maxlogins":    {limitLogins, 1},
	"maxsyslogins": {limitLogins, 1},
	"priority":     {limitPriority, 1},
	"nonewprivs":   {limitNoNewPrivs, 1},
	"chroot":       {limitChroot, 1},
}

// Kinds of uid/gid range in a domain (LIMIT_RANGE_*).
type limitRange int

const (
	limitRangeNone   limitRange = iota // no ":" in the domain
	limitRangeOne                      // ":1000", "@:1000"
	limitRangeMin                      // "1000:"
	limitRangeMinMax                   // "1000:2000"
)

// limitRule is one accepted line of limits.conf(5).
type limitRule struct {
	File string
	Line int
	// Domain is as written; pam_limits compares it case-sensitively.
	Domain string
	// Type and Item are lower-cased as pam_limits does; Item is empty for
	// an exemption line.
	Type  string
	Item  string
	Value string
	// Exempt is a "<domain> -" line: a matching user gets no limits at all.
	Exempt bool

	rng      limitRange
	min, max uint32
	soft     bool
	hard     bool
	// Shown is the value in the file's unit ("unlimited" for no limit),
	// Final the rlimit value it sets, compared when soft exceeds hard.
	Shown string
	Final uint64
}

// parseLimitsConf parses one limits.conf(5) file. A line pam_limits would
// skip (wrong field count, bad uid range, unknown item or type, bad value, a
// "%" domain on anything but maxlogins) is an error; the others are kept.
func parseLimitsConf(data []byte) ([]limitRule, []error) {
	var rules []limitRule
	var errs []error
	for i, raw := range confFileLines(data) {
		n := i + 1
		line := raw
		// getline keeps a NUL, but the C string ends there.
		if j := strings.IndexByte(line, 0); j >= 0 {
			line = line[:j]
		}
		line = strings.TrimLeft(line, cIsSpace)
		if j := strings.IndexByte(line, '#'); j >= 0 {
			line = line[:j]
		}
		if line == "" {
			continue
		}
		fields, count := splitLimitsLine(line)
		domain, ltype, item, value := fields[0], strings.ToLower(fields[1]), fields[2], fields[3]
		r := limitRule{Line: n, Domain: domain, Type: ltype}
		var ok bool
		if r.rng, r.min, r.max, ok = parseLimitRange(domain); !ok {
			errs = append(errs, confLineErrorf(n, "invalid uid/gid range %q", domain))
			continue
		}
		switch {
		case count == 4:
			r.Item, r.Value = strings.ToLower(item), value
			if msg := r.parseValue(); msg != "" {
				errs = append(errs, confLineErrorf(n, "%s", msg))
				continue
			}
		case count == 2 && strings.HasPrefix(ltype, "-"):
			r.Exempt = true
		default:
			errs = append(errs, confLineErrorf(n, "want \"<domain> <type> <item> <value>\", got %d field(s)", count))
			continue
		}
		rules = append(rules, r)
	}
	return rules, errs
}

// cIsSpace is what C's isspace() accepts in the "C" locale.
const cIsSpace = " \t\n\v\f\r"

// splitLimitsLine is pam_limits' split(): three words separated by spaces
// or tabs, then the rest of the line, trimmed, as the value (so a value may
// hold spaces). count is how many of the four are present.
func splitLimitsLine(line string) (fields [4]string, count int) {
	rest := line
	for k := range 3 {
		rest = strings.TrimLeft(rest, " \t")
		if rest == "" {
			return fields, count
		}
		end := strings.IndexAny(rest, " \t")
		if end < 0 {
			fields[k], rest = rest, ""
		} else {
			fields[k], rest = rest[:end], rest[end+1:]
		}
		count++
	}
	if v := strings.Trim(rest, " \t"); v != "" {
		fields[3] = v
		count++
	}
	return fields, count
}

// parseLimitRange is parse_uid_range: a domain with ":" must be
// "[@%]min:", "[@%]min:max" or "[@%]:id" with decimal ids.
func parseLimitRange(domain string) (limitRange, uint32, uint32, bool) {
	colon := strings.IndexByte(domain, ':')
	if colon < 0 {
		return limitRangeNone, 0, 0, true
	}
	lo, hi := domain[:colon], domain[colon+1:]
	if lo != "" && (lo[0] == '@' || lo[0] == '%') {
		lo = lo[1:]
	}
	kind := limitRangeMinMax
	var min uint32
	if lo == "" {
		kind = limitRangeOne
	} else {
		v, digits, rest, overflow := parseCUnsigned(lo)
		if !digits || overflow || rest != "" {
			return 0, 0, 0, false
		}
		min = uint32(v) // uid_t truncates strtoul's result
	}
	if hi == "" {
		if kind == limitRangeOne {
			return 0, 0, 0, false
		}
		return limitRangeMin, min, 0, true
	}
	v, digits, rest, overflow := parseCUnsigned(hi)
	if !digits || overflow || rest != "" {
		return 0, 0, 0, false
	}
	max := uint32(v)
	if kind == limitRangeOne {
		min = max
	}
	return kind, min, max, true
}

// parseCUnsigned is strtoull(3) in base 10: leading white space, an
// optional sign (a minus negates modulo 2^64), digits, then whatever is
// left. On overflow the value is ULLONG_MAX.
func parseCUnsigned(s string) (v uint64, digits bool, rest string, overflow bool) {
	s = strings.TrimLeft(s, cIsSpace)
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		d := uint64(s[i] - '0')
		if !overflow && v > (math.MaxUint64-d)/10 {
			overflow = true
		}
		if !overflow {
			v = v*10 + d
		}
		i++
	}
	if i == 0 {
		return 0, false, s, false
	}
	if overflow {
		return math.MaxUint64, true, s[i:], true
	}
	if neg {
		v = -v
	}
	return v, true, s[i:], false
}

// parseCInt is strtol(3) in base 10, clamped to int as pam_limits clamps it.
func parseCInt(s string) (int64, bool) {
	s = strings.TrimLeft(s, cIsSpace)
	end := 0
	if end < len(s) && (s[end] == '+' || s[end] == '-') {
		end++
	}
	start := end
	for end < len(s) && s[end] >= '0' && s[end] <= '9' {
		end++
	}
	if end == start {
		return 0, false
	}
	v, err := strconv.ParseInt(s[:end], 10, 64)
	if err != nil { // out of range: strtol saturates
		v = math.MaxInt64
		if s[0] == '-' {
			v = math.MinInt64
		}
	}
	return min(max(v, math.MinInt32), math.MaxInt32), true
}

// parseValue checks item, type and value in the order process_limit does
// and fills the parsed value; it returns why pam_limits would ignore the
// line, or "".
func (r *limitRule) parseValue() string {
	info, ok := limitItems[r.Item]
	if !ok {
		return "unknown limit item " + strconv.Quote(r.Item)
	}
	switch r.Type {
	case "soft":
		r.soft = true
	case "hard":
		r.hard = true
	case "-":
		r.soft, r.hard = true, true
	default:
		if info.kind != limitLogins && info.kind != limitNoNewPrivs {
			return "unknown limit type " + strconv.Quote(r.Type) + " (want soft, hard or -)"
		}
	}
	value := strings.ToLower(r.Value)
	bad := "bad value " + strconv.Quote(r.Value) + " for " + r.Item
	switch {
	case info.kind == limitChroot:
		r.Shown = r.Value
	case info.kind == limitNoNewPrivs:
		if value != "0" && value != "1" {
			return bad + " (want 0 or 1)"
		}
		r.Shown = value
	case info.kind != limitPriority && info.kind != limitNice &&
		(value == "-1" || value == "-" || value == "unlimited" || value == "infinity"):
		r.Shown, r.Final = "unlimited", rlimInfinity
	case info.kind == limitRlimit:
		v, digits, _, _ := parseCUnsigned(value)
		if !digits {
			return bad
		}
		r.Shown, r.Final = strconv.FormatUint(v, 10), v
		if v != rlimInfinity && info.scale > 1 {
			if v >= rlimInfinity/info.scale {
				r.Final = rlimInfinity
			} else {
				r.Final = v * info.scale
			}
		}
		if r.Final == rlimInfinity {
			r.Shown = "unlimited"
		}
	default: // nice, priority, maxlogins: an int
		v, ok := parseCInt(value)
		if !ok {
			return bad
		}
		if info.kind == limitNice {
			v = min(max(v, -20), 19)
			r.Final = uint64(20 - v)
		}
		r.Shown = strconv.FormatInt(v, 10)
	}
	if strings.HasPrefix(r.Domain, "%") && r.Item != "maxlogins" {
		return "a \"%\" domain applies to maxlogins only"
	}
	if strings.HasPrefix(r.Domain, "%") && (r.rng == limitRangeMin || r.rng == limitRangeMinMax) {
		return "gid ranges are not supported for \"%\" domains"
	}
	return ""
}

// limitsMember is who the effective limits are computed for: a user, or
// an anonymous member of a group, or (nothing set) anyone only "*" matches.
type limitsMember struct {
	Name string
	// UID and GID (the primary group) are known when HasIDs is set.
	UID, GID uint32
	HasIDs   bool
	Groups   map[string]bool
	GIDs     map[uint32]bool
}

// limitSetting is the effective soft or hard value of one item.
type limitSetting struct {
	Shown string
	Final uint64
	// From is the rule that set it (the hard rule when soft was capped).
	From *limitRule
	src  int
}

// limitsOutcome is what pam_limits would apply to a member.
type limitsOutcome struct {
	// ExemptBy is the "<domain> -" line that stops pam_limits from setting
	// anything; nil when limits apply.
	ExemptBy *limitRule
	Soft     map[string]limitSetting
	Hard     map[string]limitSetting
}

// evaluateLimits applies rules, in file order, to a member the way
// pam_sm_open_session does, for the setrlimit(2) items.
func evaluateLimits(rules []limitRule, m limitsMember) limitsOutcome {
	out := limitsOutcome{Soft: map[string]limitSetting{}, Hard: map[string]limitSetting{}}
	for i := range rules {
		r := &rules[i]
		if r.Exempt {
			if m.exemptBy(r) {
				return limitsOutcome{ExemptBy: r, Soft: map[string]limitSetting{}, Hard: map[string]limitSetting{}}
			}
			continue
		}
		src, ok := m.source(r)
		if !ok {
			continue
		}
		if k := limitItems[r.Item].kind; k != limitRlimit && k != limitNice {
			continue
		}
		set := limitSetting{Shown: r.Shown, Final: r.Final, From: r, src: src}
		// As in process_limit, a soft value held at a higher priority ends
		// the line: a "-" line then sets no hard value either.
		if r.soft {
			if cur, ok := out.Soft[r.Item]; ok && cur.src < src {
				continue
			}
			out.Soft[r.Item] = set
		}
		if r.hard {
			if cur, ok := out.Hard[r.Item]; ok && cur.src < src {
				continue
			}
			out.Hard[r.Item] = set
		}
	}
	// setup_limits lowers a soft limit above its hard limit.
	for item, soft := range out.Soft {
		if hard, ok := out.Hard[item]; ok && soft.Final > hard.Final {
			out.Soft[item] = hard
		}
	}
	return out
}

// source says whether a limit line applies to m and at which priority.
func (m limitsMember) source(r *limitRule) (int, bool) {
	d := r.Domain
	switch {
	case m.Name != "" && d == m.Name:
		return limitsFromUser, true
	case strings.HasPrefix(d, "@"):
		return limitsFromGroup, m.inGroupDomain(r)
	case strings.HasPrefix(d, "%"):
		if d == "%" {
			return limitsFromAll, true
		}
		if r.rng == limitRangeOne {
			return limitsFromAllGroup, m.GIDs[r.max]
		}
		return limitsFromAllGroup, r.rng == limitRangeNone && m.Groups[d[1:]]
	case r.rng == limitRangeNone:
		return limitsFromDefault, d == "*"
	default:
		return limitsFromUser, m.uidInRange(r)
	}
}

// exemptBy says whether a "<domain> -" line exempts m. "*" never does.
func (m limitsMember) exemptBy(r *limitRule) bool {
	d := r.Domain
	switch {
	case m.Name != "" && d == m.Name:
		return true
	case strings.HasPrefix(d, "@"):
		return m.inGroupDomain(r)
	case r.rng == limitRangeNone:
		return false
	default:
		return m.uidInRange(r)
	}
}

func (m limitsMember) inGroupDomain(r *limitRule) bool {
	switch r.rng {
	case limitRangeNone:
		return m.Groups[r.Domain[1:]]
	case limitRangeOne:
		return m.GIDs[r.max]
	case limitRangeMinMax:
		return m.HasIDs && m.GID <= r.max && m.GID >= r.min
	default:
		return m.HasIDs && m.GID >= r.min
	}
}

func (m limitsMember) uidInRange(r *limitRule) bool {
	if !m.HasIDs {
		return false
	}
	switch r.rng {
	case limitRangeOne:
		return m.UID == r.max
	case limitRangeMinMax:
		return m.UID <= r.max && m.UID >= r.min
	default:
		return m.UID >= r.min
	}
}

// passwdEntry and groupEntry are the fields of /etc/passwd and /etc/group
// that group membership needs.
type passwdEntry struct {
	Name     string
	UID, GID uint32
}

type groupEntry struct {
	Name    string
	GID     uint32
	Members []string
}

// parsePasswd reads name:password:uid:gid:... lines; NIS "+"/"-" lines and
// comments are skipped, malformed lines reported.
func parsePasswd(data []byte) ([]passwdEntry, []error) {
	var out []passwdEntry
	var errs []error
	for i, line := range confFileLines(data) {
		fields, ok := accountFields(line, 4)
		if !ok {
			continue
		}
		uid, err1 := strconv.ParseUint(fields[2], 10, 32)
		gid, err2 := strconv.ParseUint(fields[3], 10, 32)
		if err1 != nil || err2 != nil {
			errs = append(errs, confLineErrorf(i+1, "want name:password:uid:gid:..., got %q", line))
			continue
		}
		out = append(out, passwdEntry{Name: fields[0], UID: uint32(uid), GID: uint32(gid)})
	}
	return out, errs
}

// parseGroup reads name:password:gid:member,member lines.
func parseGroup(data []byte) ([]groupEntry, []error) {
	var out []groupEntry
	var errs []error
	for i, line := range confFileLines(data) {
		fields, ok := accountFields(line, 4)
		if !ok {
			continue
		}
		gid, err := strconv.ParseUint(fields[2], 10, 32)
		if err != nil {
			errs = append(errs, confLineErrorf(i+1, "want name:password:gid:members, got %q", line))
			continue
		}
		g := groupEntry{Name: fields[0], GID: uint32(gid)}
		for _, member := range strings.Split(fields[3], ",") {
			if member = strings.TrimSpace(member); member != "" {
				g.Members = append(g.Members, member)
			}
		}
		out = append(out, g)
	}
	return out, errs
}

// accountFields splits a passwd or group line into at least want fields
// (missing ones empty); ok is false for lines to skip.
func accountFields(line string, want int) ([]string, bool) {
	line = strings.TrimRight(line, "\r")
	if line == "" || line[0] == '#' || line[0] == '+' || line[0] == '-' {
		return nil, false
	}
	fields := strings.Split(line, ":")
	for len(fields) < want {
		fields = append(fields, "")
	}
	return fields, true
}

// limitsMemberFor resolves a LimitsDomains entry: "@hpc" is an anonymous
// member of hpc (only its gid is known), anything else a user whose primary
// and supplementary groups come from the account files.
func limitsMemberFor(domain string, users []passwdEntry, groups []groupEntry) limitsMember {
	m := limitsMember{Groups: map[string]bool{}, GIDs: map[uint32]bool{}}
	if name, ok := strings.CutPrefix(domain, "@"); ok {
		m.Groups[name] = true
		for _, g := range groups {
			if g.Name == name {
				m.GIDs[g.GID] = true
			}
		}
		return m
	}
	m.Name = domain
	for _, u := range users {
		if u.Name == domain {
			m.UID, m.GID, m.HasIDs = u.UID, u.GID, true
			m.GIDs[u.GID] = true
			break
		}
	}
	for _, g := range groups {
		member := m.HasIDs && g.GID == m.GID
		for _, name := range g.Members {
			member = member || name == domain
		}
		if member {
			m.Groups[g.Name] = true
			m.GIDs[g.GID] = true
		}
	}
	return m
}
