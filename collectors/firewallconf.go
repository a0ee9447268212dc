package collectors

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

// keyValue is one KEY=value line of a shell-style configuration file.
type keyValue struct {
	Line  int
	Key   string
	Value string
}

// parseKeyValues reads KEY=value lines as firewalld reads firewalld.conf
// and ufw-init sources ufw.conf and /etc/default/ufw: "#" comment lines,
// the key and value trimmed, one pair of surrounding quotes dropped. A
// line without "=" is an error.
func parseKeyValues(data []byte) ([]keyValue, []error) {
	var out []keyValue
	var errs []error
	for i, line := range confFileLines(data) {
		l := strings.TrimSpace(line)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			errs = append(errs, confLineErrorf(i+1, "missing '=' in %q", hwClip(l)))
			continue
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		out = append(out, keyValue{Line: i + 1, Key: strings.TrimSpace(k), Value: v})
	}
	return out, errs
}

// keyValue reads a KEY=value file (parseKeyValues), reports its bad
// lines, and returns the last assignment of key; false when the file or
// the key is not there.
func (c *collection) keyValue(collector, file, key string) (keyValue, bool) {
	data, ok := c.read(collector, file)
	if !ok {
		return keyValue{}, false
	}
	kvs, errs := parseKeyValues(data)
	for _, err := range errs {
		c.fail(collector, file, err)
	}
	return lastValue(kvs, key)
}

// lastValue is the last assignment of key, as a shell or firewalld sees it.
func lastValue(kvs []keyValue, key string) (keyValue, bool) {
	for i := len(kvs) - 1; i >= 0; i-- {
		if kvs[i].Key == key {
			return kvs[i], true
		}
	}
	return keyValue{}, false
}

// firewalldZoneFile is one parsed zone file, with the line of each part.
type firewalldZoneFile struct {
	Zone       snapshot.FirewalldZone
	ZoneLine   int
	RuleLines  []int
	SourceLine []int
}

// parseFirewalldZone reads a zone file (firewalld.zone(5)): the zone's
// target, its source and interface bindings, services, ports, protocols
// and rich rules with their source, action and whatever else they match.
func parseFirewalldZone(data []byte) (firewalldZoneFile, error) {
	var out firewalldZoneFile
	z := &out.Zone
	z.Sources, z.Interfaces, z.Services, z.Ports, z.Rules = []string{}, []string{}, []string{}, []string{}, []snapshot.FirewalldRule{}
	d := xml.NewDecoder(strings.NewReader(string(data)))
	var stack []string
	var rule *snapshot.FirewalldRule
	seenZone := false
	attr := func(e xml.StartElement, name string) string {
		for _, a := range e.Attr {
			if a.Name.Local == name {
				return a.Value
			}
		}
		return ""
	}
	source := func(e xml.StartElement) string {
		switch {
		case attr(e, "address") != "":
			return attr(e, "address")
		case attr(e, "ipset") != "":
			return "ipset:" + attr(e, "ipset")
		case attr(e, "mac") != "":
			return "mac:" + attr(e, "mac")
		}
		return ""
	}
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		line, _ := d.InputPos()
		if err != nil {
			return out, fmt.Errorf("%w: line %d: %v", ErrParse, line, err)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			name := e.Name.Local
			depth := len(stack)
			stack = append(stack, name)
			switch {
			case depth == 0:
				if name != "zone" {
					return out, fmt.Errorf("%w: line %d: root element <%s>, want <zone>", ErrParse, line, name)
				}
				seenZone = true
				out.ZoneLine = line
				z.Target = attr(e, "target")
			case depth == 1 && name == "source":
				s := source(e)
				if s == "" {
					return out, fmt.Errorf("%w: line %d: <source> without address, ipset or mac", ErrParse, line)
				}
				z.Sources = append(z.Sources, s)
				out.SourceLine = append(out.SourceLine, line)
			case depth == 1 && name == "interface":
				z.Interfaces = append(z.Interfaces, attr(e, "name"))
			case depth == 1 && name == "service":
				z.Services = append(z.Services, attr(e, "name"))
			case depth == 1 && name == "port":
				z.Ports = append(z.Ports, attr(e, "port")+"/"+attr(e, "protocol"))
			case depth == 1 && name == "protocol":
				z.Ports = append(z.Ports, "all/"+attr(e, "value"))
			case depth == 1 && name == "rule":
				z.Rules = append(z.Rules, snapshot.FirewalldRule{Family: attr(e, "family"), Match: []string{}})
				out.RuleLines = append(out.RuleLines, line)
				rule = &z.Rules[len(z.Rules)-1]
			case depth == 2 && rule != nil:
				switch name {
				case "source":
					rule.Source = source(e)
					rule.SourceInvert = strings.EqualFold(attr(e, "invert"), "true") || attr(e, "invert") == "yes"
				case "accept", "reject", "drop", "mark":
					rule.Action = name
				case "log", "audit", "nflog", "limit":
				case "service":
					rule.Match = append(rule.Match, "service "+attr(e, "name"))
				case "port", "source-port", "forward-port":
					rule.Match = append(rule.Match, name+" "+attr(e, "port")+"/"+attr(e, "protocol"))
				case "protocol":
					rule.Match = append(rule.Match, "protocol "+attr(e, "value"))
				case "destination":
					rule.Match = append(rule.Match, "destination "+source(e))
				default:
					rule.Match = append(rule.Match, name+" "+attr(e, "name"))
				}
			}
		case xml.EndElement:
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			if len(stack) == 1 && e.Name.Local == "rule" {
				rule = nil
			}
		}
	}
	if !seenZone {
		return out, fmt.Errorf("%w: no <zone> element", ErrParse)
	}
	for i := range z.Rules {
		z.Rules[i].Match = trimEmptyMatch(z.Rules[i].Match)
	}
	return out, nil
}

func trimEmptyMatch(m []string) []string {
	out := []string{}
	for _, s := range m {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

var ufwTupleRE = regexp.MustCompile(`^### tuple ###\s*`)

// ufwTuple is one rule of a user rules file, with its line.
type ufwTuple struct {
	Line int
	Rule snapshot.UFWRule
}

// parseUFWUserRules reads the "### tuple ###" lines of ufw's user.rules as
// ufw's backend reads them (_read_rules): "action proto dport dst sport
// src [dapp sapp] [direction[_iface]]", action "route:" prefixed for
// forwarded traffic and "_log"/"_log-all" suffixed for logging; a trailing
// " comment=HEX" dropped. The -A lines are what ufw generates from the
// tuples and are not read. A tuple of the wrong length is an error (ufw
// skips it with a warning).
func parseUFWUserRules(data []byte) ([]ufwTuple, []error) {
	var out []ufwTuple
	var errs []error
	for i, line := range confFileLines(data) {
		if !ufwTupleRE.MatchString(line) {
			continue
		}
		if c := strings.Index(line, " comment="); c >= 0 {
			line = line[:c]
		}
		f := strings.Fields(ufwTupleRE.ReplaceAllString(line, ""))
		if len(f) < 6 || len(f) > 9 {
			errs = append(errs, confLineErrorf(i+1, "tuple of %d fields, want 6 to 9", len(f)))
			continue
		}
		r := snapshot.UFWRule{Protocol: f[1], DPort: f[2], Dst: f[3], SPort: f[4], Src: f[5], Direction: "in"}
		action := f[0]
		if a, ok := strings.CutPrefix(action, "route:"); ok {
			r.Route, action = true, a
		}
		action, _, _ = strings.Cut(action, "_")
		switch action {
		case "allow", "deny", "reject", "limit":
		default:
			errs = append(errs, confLineErrorf(i+1, "unknown action %q", hwClip(f[0])))
			continue
		}
		r.Action = action
		if len(f) >= 8 {
			if f[6] != "-" {
				r.DApp = strings.ReplaceAll(f[6], "%20", " ")
			}
			if f[7] != "-" {
				r.SApp = strings.ReplaceAll(f[7], "%20", " ")
			}
		}
		if len(f) == 7 || len(f) == 9 {
			last := f[len(f)-1]
			dir, iface, _ := strings.Cut(last, "_")
			if dir != "in" && dir != "out" {
				errs = append(errs, confLineErrorf(i+1, "direction %q, want in or out", hwClip(last)))
				continue
			}
			r.Direction = dir
			if in, _, ok := strings.Cut(last, "!"); ok {
				iface = strings.TrimPrefix(in, "in_")
			}
			r.Interface = iface
		}
		out = append(out, ufwTuple{Line: i + 1, Rule: r})
	}
	return out, errs
}

// iptablesLongOpts are the long spellings of iptables' own options.
var iptablesLongOpts = map[string]string{
	"--source": "-s", "--src": "-s", "--in-interface": "-i", "--jump": "-j", "--goto": "-g",
	"--protocol": "-p", "--match": "-m", "--destination": "-d", "--dst": "-d", "--out-interface": "-o",
	"--fragment": "-f",
}

// iptablesMatchOpts are the options of the matches iptables-extensions(8)
// documents that ufw's files and sites use; a match not listed here is
// taken to accept any option.
var iptablesMatchOpts = map[string][]string{
	"tcp":       {"--source-port", "--sport", "--destination-port", "--dport", "--tcp-flags", "--syn", "--tcp-option"},
	"udp":       {"--source-port", "--sport", "--destination-port", "--dport"},
	"sctp":      {"--source-port", "--sport", "--destination-port", "--dport", "--chunk-types"},
	"dccp":      {"--source-port", "--sport", "--destination-port", "--dport", "--dccp-types", "--dccp-option"},
	"icmp":      {"--icmp-type"},
	"icmp6":     {"--icmpv6-type"},
	"conntrack": {"--ctstate", "--ctproto", "--ctorigsrc", "--ctorigdst", "--ctreplsrc", "--ctrepldst", "--ctorigsrcport", "--ctorigdstport", "--ctreplsrcport", "--ctrepldstport", "--ctstatus", "--ctexpire", "--ctdir"},
	"state":     {"--state"},
	"comment":   {"--comment"},
	"limit":     {"--limit", "--limit-burst"},
	"multiport": {"--source-ports", "--sports", "--destination-ports", "--dports", "--ports"},
	"addrtype":  {"--src-type", "--dst-type", "--limit-iface-in", "--limit-iface-out"},
	"recent":    {"--name", "--set", "--rsource", "--rdest", "--mask", "--rcheck", "--update", "--remove", "--seconds", "--reap", "--hitcount", "--rttl"},
	"pkttype":   {"--pkt-type"},
	"mark":      {"--mark"},
	"iprange":   {"--src-range", "--dst-range"},
	"mac":       {"--mac-source"},
	"owner":     {"--uid-owner", "--gid-owner", "--suppl-groups", "--socket-exists"},
	"length":    {"--length"},
	"ttl":       {"--ttl-eq", "--ttl-gt", "--ttl-lt"},
	"hl":        {"--hl-eq", "--hl-gt", "--hl-lt"},
	"rt":        {"--rt-type", "--rt-segsleft", "--rt-len", "--rt-0-res", "--rt-0-addrs", "--rt-0-not-strict"},
}

// iptablesProtoMatch is the match a protocol of -p loads implicitly (by
// name, or by number as /etc/protocols spells it): none for the others.
func iptablesProtoMatch(proto string) string {
	switch strings.ToLower(proto) {
	case "tcp", "6":
		return "tcp"
	case "udp", "17":
		return "udp"
	case "sctp", "132":
		return "sctp"
	case "dccp", "33":
		return "dccp"
	case "icmp", "1":
		return "icmp"
	case "icmpv6", "ipv6-icmp", "icmp6", "58":
		return "icmp6"
	}
	return ""
}

// iptablesMatch is one match of a rule being read: its group of words
// and the options it takes.
type iptablesMatch struct {
	name  string
	group int
}

func (m iptablesMatch) takes(opt string) bool {
	opts, known := iptablesMatchOpts[m.name]
	return !known || slices.Contains(opts, opt)
}

// parseIptablesChain reads the "-A CHAIN ..." lines of chain from an
// iptables-restore file (ufw's before.rules): words split as a shell
// would (quotes kept together: comments), "-m comment" dropped. Options
// go where iptables sends them (command_default of xshared.c): an option
// to the most recently loaded -m match that takes it, else to the match
// the protocol of a (not negated) -p loads implicitly, so "-p udp -s A
// --sport 547" is one udp match whatever basic options come between. A
// line of the chain without -j is kept with an empty target.
func parseIptablesChain(data []byte, chain string) ([]int, []snapshot.IptablesRule, []error) {
	var lines []int
	var out []snapshot.IptablesRule
	var errs []error
	for i, line := range confFileLines(data) {
		f, err := shellWords(line)
		if err != nil {
			if strings.HasPrefix(strings.TrimSpace(line), "-A "+chain+" ") {
				errs = append(errs, confLineErrorf(i+1, "%v", err))
			}
			continue
		}
		if len(f) < 2 || (f[0] != "-A" && f[0] != "--append") || f[1] != chain {
			continue
		}
		r, err := parseIptablesRule(f[2:])
		if err != nil {
			errs = append(errs, confLineErrorf(i+1, "%v", err))
			continue
		}
		out = append(out, r)
		lines = append(lines, i+1)
	}
	return lines, out, errs
}

// parseIptablesRule reads a rule's words after "-A CHAIN".
func parseIptablesRule(f []string) (snapshot.IptablesRule, error) {
	r := snapshot.IptablesRule{Match: []string{}}
	var groups [][]string
	var drop []bool // "-m comment" groups
	var loaded []iptablesMatch
	proto, protoNeg, protoGroup, protoLoaded := "", false, -1, false
	cur := -1 // the group an argument word joins
	open := func(words ...string) int {
		groups = append(groups, words)
		drop = append(drop, false)
		return len(groups) - 1
	}
	for j := 0; j < len(f); j++ {
		w := f[j]
		neg := false
		if w == "!" && j+1 < len(f) {
			neg, j, w = true, j+1, f[j+1]
		}
		if short, ok := iptablesLongOpts[w]; ok {
			w = short
		}
		arg := ""
		if j+1 < len(f) {
			arg = f[j+1]
		}
		not := func(g int) {
			if neg {
				groups[g] = append(groups[g], "!")
			}
		}
		switch {
		case w == "-s" && arg != "":
			r.Source, r.SourceNegated = arg, neg
			cur = -1
			j++
		case w == "-i" && arg != "" && !neg:
			r.Interface = arg
			cur = -1
			j++
		case (w == "-j" || w == "-g") && arg != "":
			r.Target = arg
			// Target options (--reject-with, --log-prefix) follow.
			j = len(f)
		case w == "-p" && arg != "":
			cur = open()
			not(cur)
			groups[cur] = append(groups[cur], w, arg)
			proto, protoNeg, protoGroup, protoLoaded = arg, neg, cur, false
			j++
		case w == "-m" && arg != "" && neg:
			return r, fmt.Errorf("unexpected ! before -m %s", hwClip(arg))
		case w == "-m" && arg != "":
			cur = open(w, arg)
			drop[cur] = arg == "comment"
			loaded = append(loaded, iptablesMatch{name: arg, group: cur})
			j++
		case strings.HasPrefix(w, "--"):
			g := -1
			for k := len(loaded) - 1; k >= 0 && g < 0; k-- {
				if loaded[k].takes(w) {
					g = loaded[k].group
				}
			}
			if g < 0 && !protoLoaded && !protoNeg {
				// iptables loads the protocol's match on the first
				// option no loaded match takes.
				if m := iptablesProtoMatch(proto); m != "" && (iptablesMatch{name: m}).takes(w) {
					loaded = append(loaded, iptablesMatch{name: m, group: protoGroup})
					protoLoaded, g = true, protoGroup
				}
			}
			if m := iptablesProtoMatch(proto); g < 0 && protoNeg && m != "" && (iptablesMatch{name: m}).takes(w) {
				// iptables loads the match, and the kernel refuses it
				// (only valid for that protocol, not inverted).
				return r, fmt.Errorf("%q of the %s match with ! -p %s: the kernel refuses the rule", hwClip(w), m, hwClip(proto))
			}
			if g < 0 {
				return r, fmt.Errorf("unexpected %q", hwClip(w))
			}
			not(g)
			groups[g] = append(groups[g], w)
			cur = g
		case strings.HasPrefix(w, "-") && len(w) > 1:
			cur = open()
			not(cur)
			groups[cur] = append(groups[cur], w)
		case cur < 0:
			return r, fmt.Errorf("unexpected %q", hwClip(w))
		default:
			not(cur)
			groups[cur] = append(groups[cur], w)
		}
	}
	for g, words := range groups {
		if !drop[g] && len(words) > 0 {
			r.Match = append(r.Match, strings.Join(words, " "))
		}
	}
	return r, nil
}

// shellWords splits a line into words as iptables-restore does: blanks
// separate, double or single quotes group; an unterminated quote is an
// error.
func shellWords(line string) ([]string, error) {
	var out []string
	var cur strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(line); i++ {
		ch := line[i]
		switch {
		case quote != 0:
			if ch == quote {
				quote = 0
			} else {
				cur.WriteByte(ch)
			}
		case ch == '"' || ch == '\'':
			quote, in = ch, true
		case ch == ' ' || ch == '\t' || ch == '\r':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(ch)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated quote")
	}
	if in {
		out = append(out, cur.String())
	}
	return out, nil
}
