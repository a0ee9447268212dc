package collectors

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

// The nftables ruleset file as nft -f reads it (nft(8)): tables with
// chains, sets and rules in block form, or add/insert commands; define and
// $variables; include with globs; "#" comments, ";" or a newline ending a
// statement, braces spanning lines. Only what decides which peers reach
// the host is kept: each chain's hook and policy, each rule's source
// addresses, input interfaces, other matches and verdict.

// nftToken is one token with where it came from.
type nftToken struct {
	text string
	kind byte // 'w' word, 's' string, 'n' newline, or the punctuation itself: { } ; ,
	file string
	line int
}

// nftError is a problem at a line of a ruleset file (or an include).
type nftError struct {
	File string
	Line int
	Msg  string
}

func (e *nftError) Error() string {
	return fmt.Sprintf("%v: line %d: %s", ErrParse, e.Line, e.Msg)
}

func (e *nftError) Unwrap() error { return ErrParse }

// nftMaxInclude caps include nesting (nft's own limit is 16), and
// nftMaxFiles the files one ruleset reads in all: globs that include each
// other would otherwise fan out factorially.
const (
	nftMaxInclude = 16
	nftMaxFiles   = 256
)

// nftReader reads a ruleset file and lists the files a glob names, both
// inside the host's root.
type nftReader struct {
	read func(name string) ([]byte, error)
	glob func(pattern string) ([]string, error)
	// files counts the files read so far (set by parseNftables).
	files *int
}

// nftTokenize splits one file into tokens, splicing the files its include
// statements name in place.
func (r nftReader) tokenize(file string, data []byte, depth int, stack []string, errs *[]error) []nftToken {
	var out []nftToken
	line := 1
	s := string(data)
	emit := func(kind byte, text string) {
		out = append(out, nftToken{text: text, kind: kind, file: file, line: line})
	}
	for i := 0; i < len(s); {
		ch := s[i]
		switch {
		case ch == '\\' && i+1 < len(s) && s[i+1] == '\n':
			i += 2
			line++
		case ch == '\n':
			emit('n', "")
			line++
			i++
		case ch == ' ' || ch == '\t' || ch == '\r':
			i++
		case ch == '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case ch == '"':
			j := i + 1
			for j < len(s) && s[j] != '"' && s[j] != '\n' {
				j++
			}
			if j >= len(s) || s[j] != '"' {
				*errs = append(*errs, &nftError{file, line, "unterminated string"})
				emit('s', s[i+1:j])
				i = j
				continue
			}
			emit('s', s[i+1:j])
			i = j + 1
		case ch == '{' || ch == '}' || ch == ';' || ch == ',':
			emit(ch, string(ch))
			i++
		default:
			j := i
			for j < len(s) && !strings.ContainsRune(" \t\r\n#\"{};,", rune(s[j])) {
				// "a=b": "=" is its own token unless part of an operator.
				if s[j] == '=' && (j == i || !strings.ContainsRune("!<>=", rune(s[j-1]))) && !(j+1 < len(s) && s[j+1] == '=') {
					break
				}
				j++
			}
			if j == i { // a lone operator character
				j++
			}
			emit('w', s[i:j])
			i = j
		}
	}
	// Splice includes: "include" then a string, at a statement's start.
	var spliced []nftToken
	for i := 0; i < len(out); i++ {
		t := out[i]
		atStart := len(spliced) == 0 || strings.IndexByte("n;{}", spliced[len(spliced)-1].kind) >= 0
		if !(atStart && t.kind == 'w' && t.text == "include") {
			spliced = append(spliced, t)
			continue
		}
		if i+1 >= len(out) || out[i+1].kind != 's' {
			*errs = append(*errs, &nftError{file, t.line, "include without a quoted file name"})
			continue
		}
		i++
		spliced = append(spliced, r.include(out[i], depth, stack, errs)...)
		spliced = append(spliced, nftToken{kind: 'n', file: file, line: t.line})
	}
	return spliced
}

// include reads the files an include statement names: a glob (matching
// nothing is fine), or one file (which must exist). As nft's scanner
// (search_in_include_path) reads a name: "./" and "../" are relative to the
// working directory, "/" for the unit that loads the ruleset; any other
// relative name is looked up in /etc, the default include directory.
func (r nftReader) include(name nftToken, depth int, stack []string, errs *[]error) []nftToken {
	pattern := name.text
	switch {
	case strings.HasPrefix(pattern, "./") || strings.HasPrefix(pattern, "../"):
		pattern = "/" + pattern
	case !strings.HasPrefix(pattern, "/"):
		pattern = "/etc/" + pattern
	}
	pattern = path.Clean(pattern)
	if depth >= nftMaxInclude {
		*errs = append(*errs, &nftError{name.file, name.line, fmt.Sprintf("include %q: includes nested more than %d deep", name.text, nftMaxInclude)})
		return nil
	}
	var files []string
	if strings.ContainsAny(pattern, "*?[") {
		matches, err := r.glob(pattern)
		if err != nil {
			*errs = append(*errs, &nftError{name.file, name.line, fmt.Sprintf("include %q: %v", name.text, err)})
			return nil
		}
		files = matches
	} else {
		files = []string{pattern}
	}
	var out []nftToken
	for _, f := range files {
		if slices.Contains(stack, f) {
			*errs = append(*errs, &nftError{name.file, name.line, fmt.Sprintf("include %q: %s includes itself", name.text, f)})
			continue
		}
		if *r.files++; *r.files > nftMaxFiles {
			*errs = append(*errs, &nftError{name.file, name.line, fmt.Sprintf("include %q: more than %d files in one ruleset", name.text, nftMaxFiles)})
			return out
		}
		data, err := r.read(f)
		if err != nil {
			*errs = append(*errs, &nftError{name.file, name.line, fmt.Sprintf("include %q: %v", name.text, err)})
			continue
		}
		out = append(out, r.tokenize(f, data, depth+1, append(stack[:len(stack):len(stack)], f), errs)...)
		out = append(out, nftToken{kind: 'n', file: f, line: 0})
	}
	return out
}

// nftStatement reads one statement from toks[i:]: tokens up to a ";" or a
// newline outside braces, or up to an unmatched "}" (not consumed). Braces
// inside it are kept, balanced.
func nftStatement(toks []nftToken, i int) (stmt []nftToken, next int) {
	depth := 0
	for ; i < len(toks); i++ {
		t := toks[i]
		switch t.kind {
		case '{':
			depth++
		case '}':
			if depth == 0 {
				return stmt, i
			}
			depth--
		case ';', 'n':
			if depth == 0 {
				if len(stmt) == 0 {
					continue
				}
				return stmt, i + 1
			}
		}
		stmt = append(stmt, t)
	}
	return stmt, i
}

// nftStatements splits a token list into statements.
func nftStatements(toks []nftToken) [][]nftToken {
	var out [][]nftToken
	for i := 0; i < len(toks); {
		stmt, next := nftStatement(toks, i)
		if next == i { // a stray "}"
			next++
		}
		if len(stmt) > 0 {
			out = append(out, stmt)
		}
		i = next
	}
	return out
}

// nftBlock splits a statement at its first "{": the header, and the tokens
// between that brace and its match (ok false when there is none).
func nftBlock(stmt []nftToken) (header, body []nftToken, ok bool) {
	for i, t := range stmt {
		if t.kind != '{' {
			continue
		}
		depth := 0
		for j := i; j < len(stmt); j++ {
			switch stmt[j].kind {
			case '{':
				depth++
			case '}':
				depth--
				if depth == 0 {
					return stmt[:i], stmt[i+1 : j], true
				}
			}
		}
		return stmt[:i], stmt[i+1:], true
	}
	return stmt, nil, false
}

// nftRuleset is what the parser builds; chains keep declaration order.
type nftRuleset struct {
	chains []*nftChain
	sets   map[string][]string // "family table name" -> elements
	vars   map[string][]nftToken
}

type nftChain struct {
	snapshot.NftChain
	file string
	line int
	// rules' provenance, index-aligned with Rules.
	at []snapshot.Provenance
	// sets named by the rules (index-aligned), resolved at the end.
	setRefs []string
}

var nftFamilies = map[string]bool{"ip": true, "ip6": true, "inet": true, "arp": true, "bridge": true, "netdev": true}

func (rs *nftRuleset) chain(family, table, name string, at nftToken) *nftChain {
	for _, c := range rs.chains {
		if c.Family == family && c.Table == table && c.Name == name {
			return c
		}
	}
	c := &nftChain{NftChain: snapshot.NftChain{Family: family, Table: table, Name: name}, file: at.file, line: at.line}
	rs.chains = append(rs.chains, c)
	return c
}

// parseNftables reads the ruleset file name (its contents data) and what
// it includes.
func parseNftables(name string, data []byte, r nftReader) ([]nftChain, []error) {
	var errs []error
	r.files = new(int)
	toks := r.tokenize(name, data, 0, []string{name}, &errs)
	rs := &nftRuleset{sets: map[string][]string{}, vars: map[string][]nftToken{}}
	for _, stmt := range nftStatements(toks) {
		rs.topLevel(stmt, &errs)
	}
	var out []nftChain
	for _, c := range rs.chains {
		for i, ref := range c.setRefs {
			if ref == "" {
				continue
			}
			if elems, ok := rs.sets[c.Family+" "+c.Table+" "+ref]; ok {
				c.Rules[i].Saddr = slices.Concat(slices.DeleteFunc(c.Rules[i].Saddr, func(s string) bool { return s == "@"+ref }), elems)
			}
		}
		out = append(out, *c)
	}
	return out, errs
}

func words(stmt []nftToken) []string {
	var out []string
	for _, t := range stmt {
		out = append(out, t.text)
	}
	return out
}

func nftErr(errs *[]error, at nftToken, format string, args ...any) {
	*errs = append(*errs, &nftError{at.file, at.line, fmt.Sprintf(format, args...)})
}

// familyName reads "[family] name" from ws, nft's default family being ip.
func familyName(ws []string) (family, name string, rest int, ok bool) {
	if len(ws) >= 2 && nftFamilies[ws[0]] {
		return ws[0], ws[1], 2, true
	}
	if len(ws) >= 1 && !nftFamilies[ws[0]] {
		return "ip", ws[0], 1, true
	}
	return "", "", 0, false
}

func (rs *nftRuleset) topLevel(stmt []nftToken, errs *[]error) {
	head := stmt[0]
	if head.kind != 'w' {
		nftErr(errs, head, "unexpected %q", head.text)
		return
	}
	switch head.text {
	case "define", "redefine":
		rs.define(stmt, errs)
		return
	case "undefine":
		if len(stmt) > 1 {
			delete(rs.vars, stmt[1].text)
		}
		return
	case "table":
		rs.table(stmt[1:], head, errs)
		return
	case "flush", "delete", "destroy":
		rs.remove(stmt, errs)
		return
	case "list", "reset", "rename", "monitor", "describe", "export", "import":
		return
	case "add", "create", "insert", "replace":
		if len(stmt) < 2 {
			nftErr(errs, head, "%s what?", head.text)
			return
		}
		what := stmt[1].text
		rest := stmt[2:]
		switch what {
		case "table":
			rs.table(rest, head, errs)
		case "chain":
			header, body, hasBody := nftBlock(rest)
			ws := words(rs.expand(header))
			family, table, n, ok := familyName(ws)
			if !ok || len(ws) <= n {
				nftErr(errs, head, "add chain: want [family] table chain")
				return
			}
			c := rs.chain(family, table, ws[n], head)
			if hasBody {
				rs.chainBody(c, body, errs)
			}
		case "rule":
			ws := words(rs.expand(rest))
			family, table, n, ok := familyName(ws)
			if !ok || len(ws) <= n {
				nftErr(errs, head, "%s rule: want [family] table chain and the rule", head.text)
				return
			}
			c := rs.chain(family, table, ws[n], head)
			// Skip "position N", "index N", "handle N".
			body := rs.expand(rest)[n+1:]
			pos := -1
			for len(body) >= 2 && (body[0].text == "position" || body[0].text == "index" || body[0].text == "handle") {
				pos = 0
				body = body[2:]
			}
			prepend := head.text == "insert" && pos < 0
			rs.addRule(c, body, prepend, errs)
		case "set", "map":
			header, body, hasBody := nftBlock(rest)
			ws := words(rs.expand(header))
			family, table, n, ok := familyName(ws)
			if !ok || len(ws) <= n {
				nftErr(errs, head, "add %s: want [family] table name", what)
				return
			}
			if hasBody && what == "set" {
				rs.setBody(family+" "+table+" "+ws[n], body)
			}
		case "element":
			header, body, hasBody := nftBlock(rest)
			ws := words(rs.expand(header))
			family, table, n, ok := familyName(ws)
			if !ok || len(ws) <= n || !hasBody {
				nftErr(errs, head, "add element: want [family] table set { elements }")
				return
			}
			key := family + " " + table + " " + ws[n]
			rs.sets[key] = append(rs.sets[key], elements(rs.expand(body))...)
		default:
			// counters, quotas, flowtables, ct objects: nothing that
			// decides who may connect.
		}
		return
	}
	nftErr(errs, head, "unknown statement %q", head.text)
}

func (rs *nftRuleset) define(stmt []nftToken, errs *[]error) {
	if len(stmt) < 3 || stmt[2].text != "=" {
		nftErr(errs, stmt[0], "%s: want NAME = VALUE", stmt[0].text)
		return
	}
	rs.vars[stmt[1].text] = rs.expand(stmt[3:])
}

// expand replaces $NAME words by their definitions.
func (rs *nftRuleset) expand(toks []nftToken) []nftToken {
	var out []nftToken
	for _, t := range toks {
		if t.kind == 'w' && strings.HasPrefix(t.text, "$") {
			if v, ok := rs.vars[t.text[1:]]; ok {
				out = append(out, v...)
				continue
			}
		}
		out = append(out, t)
	}
	return out
}

func (rs *nftRuleset) remove(stmt []nftToken, errs *[]error) {
	ws := words(rs.expand(stmt))
	if len(ws) < 2 {
		nftErr(errs, stmt[0], "%s what?", ws[0])
		return
	}
	switch ws[1] {
	case "ruleset":
		family := ""
		if len(ws) > 2 {
			family = ws[2]
		}
		rs.chains = slices.DeleteFunc(rs.chains, func(c *nftChain) bool { return family == "" || c.Family == family })
		if family == "" {
			rs.sets = map[string][]string{}
		}
	case "table", "chain":
		family, table, n, ok := familyName(ws[2:])
		if !ok {
			return
		}
		chain := ""
		if ws[1] == "chain" && len(ws) > 2+n {
			chain = ws[2+n]
		}
		for _, c := range rs.chains {
			if c.Family == family && c.Table == table && (chain == "" || c.Name == chain) && ws[0] == "flush" {
				c.Rules, c.at, c.setRefs = nil, nil, nil
			}
		}
		if ws[0] != "flush" {
			rs.chains = slices.DeleteFunc(rs.chains, func(c *nftChain) bool {
				return c.Family == family && c.Table == table && (chain == "" || c.Name == chain)
			})
		}
	}
}

func (rs *nftRuleset) table(rest []nftToken, at nftToken, errs *[]error) {
	header, body, hasBody := nftBlock(rest)
	ws := words(rs.expand(header))
	family, table, _, ok := familyName(ws)
	if !ok {
		nftErr(errs, at, "table: want [family] name")
		return
	}
	if !hasBody {
		return
	}
	for _, stmt := range nftStatements(body) {
		switch stmt[0].text {
		case "chain":
			h, b, ok := nftBlock(stmt)
			if len(h) < 2 {
				nftErr(errs, stmt[0], "chain without a name")
				continue
			}
			name := rs.expand(h[1:2])
			if len(name) == 0 {
				// a variable defined empty
				nftErr(errs, stmt[0], "chain without a name")
				continue
			}
			c := rs.chain(family, table, name[0].text, stmt[0])
			if ok {
				rs.chainBody(c, b, errs)
			}
		case "set":
			h, b, ok := nftBlock(stmt)
			if len(h) >= 2 && ok {
				rs.setBody(family+" "+table+" "+h[1].text, b)
			}
		case "define", "redefine":
			rs.define(stmt, errs)
		default:
			// maps, flowtables, counters, flags, comment
		}
	}
}

func (rs *nftRuleset) setBody(key string, body []nftToken) {
	for _, stmt := range nftStatements(body) {
		if stmt[0].text != "elements" {
			continue
		}
		_, elems, ok := nftBlock(rs.expand(stmt))
		if ok {
			rs.sets[key] = append(rs.sets[key], elements(elems)...)
		}
	}
}

// elements are the words of a brace list, without commas, newlines and
// element options ("timeout 1h", "comment "x"").
func elements(toks []nftToken) []string {
	var out []string
	skip := 0
	for _, t := range toks {
		switch {
		case skip > 0:
			skip--
		case t.kind == 'w' && (t.text == "timeout" || t.text == "expires" || t.text == "comment" || t.text == "counter"):
			skip = 1
			if t.text == "counter" {
				skip = 0
			}
		case t.kind == 'w' || t.kind == 's':
			if t.text != "{" && t.text != "}" {
				out = append(out, t.text)
			}
		}
	}
	return out
}

func (rs *nftRuleset) chainBody(c *nftChain, body []nftToken, errs *[]error) {
	for _, stmt := range nftStatements(body) {
		ws := words(stmt)
		switch ws[0] {
		case "type":
			if i := slices.Index(ws, "hook"); i >= 0 && i+1 < len(ws) {
				c.Hook = ws[i+1]
			} else {
				nftErr(errs, stmt[0], "chain %s: type without hook", c.Name)
			}
		case "policy":
			if len(ws) < 2 {
				nftErr(errs, stmt[0], "chain %s: policy without a verdict", c.Name)
				continue
			}
			p := words(rs.expand(stmt[1:2]))
			if len(p) == 0 {
				nftErr(errs, stmt[0], "chain %s: policy without a verdict", c.Name)
				continue
			}
			c.Policy = p[0]
		case "comment", "devices", "device":
		default:
			rs.addRule(c, rs.expand(stmt), false, errs)
		}
	}
}

// nftVerdicts end a rule's matching.
var nftVerdicts = map[string]bool{"accept": true, "drop": true, "reject": true, "jump": true, "goto": true, "return": true, "continue": true, "queue": true}

// nftStarts begin a match expression ("tcp dport 22", "iifname eth0").
var nftStarts = map[string]bool{
	"ip": true, "ip6": true, "tcp": true, "udp": true, "udplite": true, "sctp": true, "dccp": true, "th": true,
	"icmp": true, "icmpv6": true, "igmp": true, "ah": true, "esp": true, "comp": true, "ether": true, "vlan": true,
	"arp": true, "ct": true, "meta": true, "fib": true, "rt": true, "ipsec": true, "socket": true, "osf": true,
	"exthdr": true, "hbh": true, "frag": true, "mh": true, "dst": true, "numgen": true, "jhash": true, "symhash": true,
	"gre": true, "vxlan": true, "geneve": true, "tunnel": true, "inner": true,
}

// nftMetaKeys may be written without "meta"; iif and iifname are the
// input interface.
var nftMetaKeys = map[string]bool{
	"iif": true, "iifname": true, "iiftype": true, "oif": true, "oifname": true, "oiftype": true, "mark": true,
	"skuid": true, "skgid": true, "nftrace": true, "rtclassid": true, "pkttype": true, "cpu": true, "iifgroup": true,
	"oifgroup": true, "cgroup": true, "l4proto": true, "nfproto": true, "iifkind": true, "oifkind": true,
}

// nftStatementWords are statements that neither match nor decide.
var nftStatementWords = map[string]bool{"counter": true, "log": true, "comment": true, "limit": true, "notrack": true, "masquerade": true, "snat": true, "dnat": true, "redirect": true, "quota": true, "synproxy": true, "set": true, "update": true, "add": true, "dup": true, "fwd": true}

func (rs *nftRuleset) addRule(c *nftChain, toks []nftToken, prepend bool, errs *[]error) {
	if len(toks) == 0 {
		return
	}
	var rule snapshot.NftRule
	setRef := ""
	var clean []nftToken
	for _, t := range toks {
		if t.kind != 'n' {
			clean = append(clean, t)
		}
	}
	toks = clean
	// value reads an optional operator and one value (a word, or a brace
	// group as its words) at toks[i:].
	value := func(i int) (op string, vals []string, text string, next int) {
		if i < len(toks) && (toks[i].text == "!=" || toks[i].text == "==" || toks[i].text == "ne" || toks[i].text == "eq") {
			op = toks[i].text
			i++
		}
		if i >= len(toks) {
			return op, nil, "", i
		}
		if toks[i].kind == '{' {
			depth := 0
			j := i
			for ; j < len(toks); j++ {
				if toks[j].kind == '{' {
					depth++
				} else if toks[j].kind == '}' {
					depth--
					if depth == 0 {
						break
					}
				}
			}
			group := toks[i:min(j+1, len(toks))]
			return op, elements(group), nftText(group), min(j+1, len(toks))
		}
		vals = []string{toks[i].text}
		j := i + 1
		// "new,established": commas join one list value.
		for j+1 < len(toks) && toks[j].kind == ',' {
			vals = append(vals, toks[j+1].text)
			j += 2
		}
		return op, vals, strings.Join(vals, ","), j
	}
	i := 0
	for i < len(toks) {
		t := toks[i]
		w := t.text
		switch {
		case t.kind == 's':
			i++
		case w == "counter":
			i++
			for i+1 < len(toks) && (toks[i].text == "packets" || toks[i].text == "bytes" || toks[i].text == "name") {
				i += 2
			}
		case w == "comment":
			i += 2
		case w == "log":
			i++
			for i+1 < len(toks) && slices.Contains([]string{"prefix", "level", "flags", "group", "snaplen", "queue-threshold"}, toks[i].text) {
				i += 2
				for i < len(toks) && toks[i].kind == ',' { // flags tcp sequence,options
					i += 2
				}
			}
		case nftVerdicts[w]:
			rule.Verdict = w
			if (w == "jump" || w == "goto") && i+1 < len(toks) {
				rule.Target = toks[i+1].text
			}
			// A verdict ends the rule (reject's "with ..." and queue's
			// options are arguments; a comment may follow).
			i = len(toks)
		case (w == "ip" || w == "ip6") && i+1 < len(toks) && toks[i+1].text == "saddr" && !nftMapAt(toks, i+2):
			op, vals, _, next := value(i + 2)
			rule.SaddrNegated = rule.SaddrNegated || op == "!=" || op == "ne"
			for _, v := range vals {
				if strings.HasPrefix(v, "@") && setRef == "" {
					setRef = v[1:]
				}
				rule.Saddr = append(rule.Saddr, v)
			}
			i = next
		case (w == "iif" || w == "iifname") && !nftMapAt(toks, i+1) || (w == "meta" && i+1 < len(toks) && (toks[i+1].text == "iif" || toks[i+1].text == "iifname") && !nftMapAt(toks, i+2)):
			start := i
			if w == "meta" {
				i++
			}
			op, vals, text, next := value(i + 1)
			if op == "!=" || op == "ne" {
				rule.Match = append(rule.Match, strings.Join(words(toks[start:i+1]), " ")+" "+op+" "+text)
			} else {
				rule.Iifname = append(rule.Iifname, vals...)
			}
			i = next
		case nftStarts[w] || nftMetaKeys[w]:
			start := i
			i++
			if nftStarts[w] && i < len(toks) {
				i++ // the key: "tcp dport", "ct state"
			}
			_, _, _, next := value(i)
			i = next
			// Anything up to the next expression, statement or verdict
			// belongs to this one ("tcp flags & (syn|ack) == syn").
			i = nftExprEnd(toks, i)
			rule.Match = append(rule.Match, nftText(toks[start:i]))
		case nftNAT[w]:
			// A NAT or forwarding statement takes the rest of the rule.
			rule.Match = append(rule.Match, nftText(toks[i:]))
			i = len(toks)
		default:
			// limit, nat and set statements, and anything this parser does
			// not know: kept as a match, so a rule is never read as wider
			// than it is.
			start := i
			i++
			i = nftExprEnd(toks, i)
			if w != "notrack" {
				rule.Match = append(rule.Match, nftText(toks[start:i]))
			}
		}
	}
	if rule.Match == nil {
		rule.Match = []string{}
	}
	for _, m := range rule.Match {
		if rule.Verdict == "" && strings.Contains(" "+m+" ", " vmap ") {
			rule.Verdict = "vmap"
		}
	}
	at := snapshot.FileAt(toks[0].file, toks[0].line)
	if prepend {
		c.Rules = slices.Insert(c.Rules, 0, rule)
		c.at = slices.Insert(c.at, 0, at)
		c.setRefs = slices.Insert(c.setRefs, 0, setRef)
	} else {
		c.Rules = append(c.Rules, rule)
		c.at = append(c.at, at)
		c.setRefs = append(c.setRefs, setRef)
	}
	_ = errs
}

// nftNAT are statements whose arguments run to the end of the rule.
var nftNAT = map[string]bool{"snat": true, "dnat": true, "masquerade": true, "redirect": true, "fwd": true, "dup": true, "tproxy": true}

// nftMapAt: toks[i] begins a map or verdict map lookup ("iif vmap @m"),
// not a value.
func nftMapAt(toks []nftToken, i int) bool {
	for i < len(toks) && (toks[i].text == "!=" || toks[i].text == "==") {
		i++
	}
	return i < len(toks) && (toks[i].text == "vmap" || toks[i].text == "map")
}

// nftExprEnd is where the expression going on at toks[i] ends: at the next
// expression, statement or verdict outside braces (a map's braces hold
// verdicts and keywords of its own).
func nftExprEnd(toks []nftToken, i int) int {
	for i < len(toks) {
		t := toks[i]
		if t.kind == '{' {
			depth := 0
			for ; i < len(toks); i++ {
				if toks[i].kind == '{' {
					depth++
				} else if toks[i].kind == '}' {
					if depth--; depth == 0 {
						break
					}
				}
			}
			i++
			continue
		}
		if t.kind != 's' && (nftStarts[t.text] || nftMetaKeys[t.text] || nftVerdicts[t.text] || nftStatementWords[t.text]) {
			return i
		}
		i++
	}
	return len(toks)
}

// nftText writes tokens back as nft text.
func nftText(toks []nftToken) string {
	var b strings.Builder
	depth := 0
	for i, t := range toks {
		// "a,b" as written outside braces, "{ a, b }" inside.
		if i > 0 && t.kind != ',' && (toks[i-1].kind != ',' || depth > 0) {
			b.WriteByte(' ')
		}
		if t.kind == '{' {
			depth++
		} else if t.kind == '}' {
			depth--
		}
		switch t.kind {
		case 's':
			b.WriteString(`"` + t.text + `"`)
		case ',':
			b.WriteString(",")
		default:
			b.WriteString(t.text)
		}
	}
	return b.String()
}
