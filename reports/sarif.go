package reports

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/netip"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/fleetaudit/fleetaudit/configrepo"
	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

// SARIF 2.1.0 (OASIS errata 01). Only the objects fleetaudit fills are
// modelled; the test validates the output against the schema.
const (
	sarifVersion = "2.1.0"
	sarifSchema  = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
	toolURI      = "https://github.com/fleetaudit/fleetaudit"
	// srcRoot is the uriBaseId of config-repo paths: code scanning resolves
	// it to the repository checkout.
	srcRoot = "%SRCROOT%"
)

type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool              sarifTool         `json:"tool"`
	AutomationDetails *sarifAutomation  `json:"automationDetails,omitempty"`
	Results           []sarifResult     `json:"results"`
	Invocations       []sarifInvocation `json:"invocations,omitempty"`
	Properties        map[string]any    `json:"properties,omitempty"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string          `json:"name"`
	InformationURI string          `json:"informationUri"`
	Rules          []sarifRuleDesc `json:"rules"`
}

type sarifAutomation struct {
	ID string `json:"id"`
}

type sarifRuleDesc struct {
	ID                   string          `json:"id"`
	Name                 string          `json:"name,omitempty"`
	ShortDescription     *sarifText      `json:"shortDescription,omitempty"`
	FullDescription      *sarifText      `json:"fullDescription,omitempty"`
	Help                 *sarifText      `json:"help,omitempty"`
	HelpURI              string          `json:"helpUri,omitempty"`
	DefaultConfiguration sarifRuleConfig `json:"defaultConfiguration"`
	Properties           map[string]any  `json:"properties,omitempty"`
}

type sarifRuleConfig struct {
	Level string `json:"level"`
}

type sarifText struct {
	Text     string `json:"text"`
	Markdown string `json:"markdown,omitempty"`
}

type sarifResult struct {
	RuleID              string             `json:"ruleId"`
	RuleIndex           int                `json:"ruleIndex"`
	Level               string             `json:"level"`
	Message             sarifText          `json:"message"`
	Locations           []sarifLocation    `json:"locations,omitempty"`
	RelatedLocations    []sarifLocation    `json:"relatedLocations,omitempty"`
	PartialFingerprints map[string]string  `json:"partialFingerprints"`
	BaselineState       string             `json:"baselineState,omitempty"`
	Suppressions        []sarifSuppression `json:"suppressions,omitempty"`
	Properties          map[string]any     `json:"properties,omitempty"`
}

type sarifLocation struct {
	ID               int            `json:"id,omitempty"`
	PhysicalLocation *sarifPhysical `json:"physicalLocation,omitempty"`
	LogicalLocations []sarifLogical `json:"logicalLocations,omitempty"`
	Message          *sarifText     `json:"message,omitempty"`
}

type sarifPhysical struct {
	ArtifactLocation sarifArtLoc  `json:"artifactLocation"`
	Region           *sarifRegion `json:"region,omitempty"`
}

type sarifArtLoc struct {
	URI       string `json:"uri"`
	URIBaseID string `json:"uriBaseId,omitempty"`
}

type sarifRegion struct {
	StartLine int `json:"startLine"`
}

type sarifLogical struct {
	Name               string `json:"name"`
	FullyQualifiedName string `json:"fullyQualifiedName,omitempty"`
	Kind               string `json:"kind,omitempty"`
}

type sarifSuppression struct {
	Kind          string         `json:"kind"`
	Status        string         `json:"status"`
	Justification string         `json:"justification"`
	Location      *sarifLocation `json:"location,omitempty"`
	Properties    map[string]any `json:"properties,omitempty"`
}

type sarifInvocation struct {
	ExecutionSuccessful        bool                `json:"executionSuccessful"`
	ToolExecutionNotifications []sarifNotification `json:"toolExecutionNotifications,omitempty"`
}

type sarifNotification struct {
	Level   string    `json:"level"`
	Message sarifText `json:"message"`
}

// sarifLevel maps fleetaudit's severities onto SARIF's three levels.
func sarifLevel(sev string) string {
	switch sev {
	case policies.SeverityCritical, policies.SeverityHigh:
		return "error"
	case policies.SeverityMedium:
		return "warning"
	}
	return "note"
}

// securitySeverity is GitHub code scanning's CVSS-like score, which it
// buckets as critical (≥9.0), high (7.0-8.9), medium (4.0-6.9), low.
func securitySeverity(sev string) string {
	switch sev {
	case policies.SeverityCritical:
		return "9.5"
	case policies.SeverityHigh:
		return "8.0"
	case policies.SeverityMedium:
		return "5.5"
	case policies.SeverityLow:
		return "2.0"
	}
	return "0.0"
}

// sarifBuilder collects rule descriptors as results name them.
type sarifBuilder struct {
	cat   *Catalog
	rules []sarifRuleDesc
	index map[string]int
}

func (b *sarifBuilder) ruleIndex(f policies.Finding) int {
	if i, ok := b.index[f.Rule]; ok {
		return i
	}
	if b.index == nil {
		b.index = map[string]int{}
	}
	d := sarifRuleDesc{ID: f.Rule, DefaultConfiguration: sarifRuleConfig{Level: sarifLevel(f.Severity)}}
	title, desc, remediation, sev, refs := f.Title, "", f.Remediation, f.Severity, f.References
	if b.cat != nil {
		if r, ok := b.cat.Rules[f.Rule]; ok {
			title, desc, sev = cmp.Or(r.Title, title), r.Description, r.Severity
			remediation = cmp.Or(r.Remediation, remediation)
			if len(r.References) > 0 {
				refs = r.References
			}
			d.DefaultConfiguration.Level = sarifLevel(sev)
		}
	}
	d.Name = ruleName(f.Rule)
	if title != "" {
		d.ShortDescription = &sarifText{Text: title}
	}
	if desc != "" {
		d.FullDescription = &sarifText{Text: desc}
	}
	if remediation != "" || len(refs) > 0 {
		md := remediation
		for _, ref := range refs {
			md += "\n\n- " + ref
		}
		d.Help = &sarifText{Text: strings.TrimSpace(md), Markdown: strings.TrimSpace(md)}
	}
	if len(refs) > 0 {
		d.HelpURI = refs[0]
	}
	d.Properties = map[string]any{"security-severity": securitySeverity(sev), "tags": []string{"fleetaudit", "configuration", sev}, "severity": sev}
	b.index[f.Rule] = len(b.rules)
	b.rules = append(b.rules, d)
	return b.index[f.Rule]
}

// ruleName is the rule id in PascalCase, SARIF's convention for names.
func ruleName(id string) string {
	var b strings.Builder
	for _, part := range strings.Split(id, "-") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

// result is one finding. repo says where file sources live: true for the
// gate (repo-relative paths annotate the pull request), false for an audit
// (absolute paths on the host, as file://HOST/PATH).
func (b *sarifBuilder) result(f policies.Finding, repo bool) sarifResult {
	res := sarifResult{
		RuleID:    f.Rule,
		RuleIndex: b.ruleIndex(f),
		Level:     sarifLevel(f.Severity),
		Message:   sarifText{Text: sarifMessage(f)},
		Properties: map[string]any{
			"severity": f.Severity, "fleet": f.Fleet, "host": f.Host, "evidence": f.Evidence,
		},
	}
	if f.SeverityOverride != nil {
		res.Properties["severity_override"] = f.SeverityOverride
	}
	logical := []sarifLogical{{Name: cmp.Or(f.Host, f.Fleet), FullyQualifiedName: f.Fleet + "/" + f.Host, Kind: "resource"}}
	// The provenance's first file is the result's location; every other
	// file cited (a source may name several) is a related location, once,
	// naming the facts read from it.
	key := func(loc sarifLocation) string {
		a := loc.PhysicalLocation.ArtifactLocation
		k := a.URIBaseID + " " + a.URI
		if r := loc.PhysicalLocation.Region; r != nil {
			k += " " + strconv.Itoa(r.StartLine)
		}
		return k
	}
	related := map[string]int{} // key: index in RelatedLocations, -1 the location
	res.Locations = []sarifLocation{{LogicalLocations: logical}}
	if locs := sarifFileLocations(provenance(f), f.Host, repo); len(locs) > 0 {
		related[key(locs[0])] = -1
		locs[0].LogicalLocations = logical
		res.Locations = []sarifLocation{locs[0]}
	}
	for _, e := range f.Evidence {
		for _, loc := range sarifFileLocations(e.Source, f.Host, repo) {
			k := key(loc)
			i, ok := related[k]
			switch {
			case !ok:
				related[k] = len(res.RelatedLocations)
				loc.ID = len(res.RelatedLocations) + 1
				loc.Message = &sarifText{Text: e.Fact}
				res.RelatedLocations = append(res.RelatedLocations, loc)
			case i >= 0 && !slices.Contains(strings.Split(res.RelatedLocations[i].Message.Text, ", "), e.Fact):
				res.RelatedLocations[i].Message.Text += ", " + e.Fact
			}
		}
	}
	res.PartialFingerprints = map[string]string{"fleetauditFinding/v1": findingFingerprint(f, repo)}
	if w := f.Waived; w != nil {
		res.Suppressions = []sarifSuppression{{
			Kind: "external", Status: "accepted", Justification: w.Justification,
			Properties: map[string]any{"owner": w.Owner, "expires": w.Expires, "waiver": w.Source},
		}}
	}
	return res
}

func sarifMessage(f policies.Finding) string {
	msg := f.Message
	if f.Host != "" {
		msg = f.Host + ": " + msg
	}
	var ev []string
	for _, e := range f.Evidence {
		s := e.Fact + " = " + valueText(e.Value)
		if e.Source != "" {
			s += " (" + e.Source + ")"
		}
		ev = append(ev, s)
	}
	if len(ev) > 0 {
		msg += "\nEvidence: " + strings.Join(ev, "; ")
	}
	return msg
}

// sarifFileLocations turns a provenance ("file:line", several joined by
// ", ") into a location per file: a repo-relative path under %SRCROOT% for
// the gate, file://HOST/PATH for a host's own file. /proc, /sys, defaults
// and commands have no file to point at, nor has a host whose name cannot
// be a URI's host.
func sarifFileLocations(src, host string, repo bool) []sarifLocation {
	if src == "" {
		return nil
	}
	p := snapshot.ParseProvenance(src)
	places := append([]snapshot.Provenance{p}, p.More...)
	if repo && p.Baseline != "" {
		// A fact a config repo cannot hold came from the fleet's baseline
		// snapshot: "/proc/cmdline (baseline baselines/gpu.json)".
		places = []snapshot.Provenance{snapshot.FileAt(p.Baseline, 0)}
	}
	var out []sarifLocation
	for _, pl := range places {
		if pl.Default != "" || pl.Command != "" || pl.Path() == "" {
			continue
		}
		file := pl.Path()
		var phys sarifPhysical
		switch {
		case repo && !path.IsAbs(file):
			// String, not EscapedPath: a first segment holding ':' gets
			// "./", or it would read as a scheme.
			phys.ArtifactLocation = sarifArtLoc{URI: (&url.URL{Path: path.Clean(file)}).String(), URIBaseID: srcRoot}
		case !repo && path.IsAbs(file):
			if strings.HasPrefix(file, "/proc/") || strings.HasPrefix(file, "/sys/") {
				continue
			}
			h, ok := uriHost(host)
			if !ok {
				return nil
			}
			phys.ArtifactLocation = sarifArtLoc{URI: "file://" + h + (&url.URL{Path: path.Clean(file)}).EscapedPath()}
		default:
			continue
		}
		if pl.Line > 0 {
			phys.Region = &sarifRegion{StartLine: pl.Line}
		}
		out = append(out, sarifLocation{PhysicalLocation: &phys})
	}
	return out
}

// uriHost is host as a URI's host (RFC 3986): a name of unreserved
// characters and sub-delimiters, non-ASCII bytes percent-encoded, or an
// IPv6 address in brackets. Any other ASCII character could only be
// percent-encoded, which URI readers (Go's net/url among them) refuse in a
// host: such a name has no file URI.
func uriHost(host string) (string, bool) {
	if a, err := netip.ParseAddr(host); err == nil && a.Is6() {
		return "[" + strings.ReplaceAll(host, "%", "%25") + "]", true
	}
	var b strings.Builder
	for i := range len(host) {
		c := host[i]
		switch {
		case c >= 0x80:
			fmt.Fprintf(&b, "%%%02X", c)
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', strings.IndexByte("-._~!$&'()*+,;=", c) >= 0:
			b.WriteByte(c)
		default:
			return "", false
		}
	}
	return b.String(), true
}

// findingFingerprint identifies a finding across runs as the gate matches
// findings: rule, fleet, host and the facts cited, not the message or the
// line (moving a setting keeps the alert).
func findingFingerprint(f policies.Finding, repo bool) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00", f.Rule, f.Fleet)
	if !repo {
		fmt.Fprintf(h, "%s\x00", f.Host)
	}
	facts := make([]string, 0, len(f.Evidence))
	for _, e := range f.Evidence {
		facts = append(facts, e.Fact)
	}
	slices.Sort(facts)
	fmt.Fprint(h, strings.Join(facts, "\x00"))
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// sarifStream writes one run's results as they are made, so a large
// fleet's log is never held whole (results come before the tool's rules,
// which are known only at the end; JSON key order means nothing to SARIF).
type sarifStream struct {
	jw *jsonWriter
	n  int
}

func newSARIFStream(w io.Writer, automation string) *sarifStream {
	st := &sarifStream{jw: &jsonWriter{w: w}}
	st.jw.printf("{\n  \"$schema\": ")
	st.jw.value(sarifSchema, "  ")
	st.jw.printf(",\n  \"version\": ")
	st.jw.value(sarifVersion, "  ")
	st.jw.printf(",\n  \"runs\": [\n    {\n      \"automationDetails\": ")
	st.jw.value(sarifAutomation{ID: automation}, "      ")
	st.jw.printf(",\n      \"results\": [")
	return st
}

func (st *sarifStream) add(res sarifResult) {
	if st.n > 0 {
		st.jw.printf(",")
	}
	st.n++
	st.jw.printf("\n        ")
	st.jw.value(res, "        ")
}

// end writes the rest of the run: the rules the results named, the
// invocation and the run's properties.
func (st *sarifStream) end(b *sarifBuilder, inv sarifInvocation, props map[string]any) error {
	if st.n > 0 {
		st.jw.printf("\n      ")
	}
	rules := b.rules
	if rules == nil {
		rules = []sarifRuleDesc{}
	}
	st.jw.printf("],\n      \"tool\": ")
	st.jw.value(sarifTool{Driver: sarifDriver{Name: "fleetaudit", InformationURI: toolURI, Rules: rules}}, "      ")
	st.jw.printf(",\n      \"invocations\": ")
	st.jw.value([]sarifInvocation{inv}, "      ")
	st.jw.printf(",\n      \"properties\": ")
	st.jw.value(props, "      ")
	st.jw.printf("\n    }\n  ]\n}\n")
	return st.jw.err
}

// sarifRenderer writes an audit as SARIF: one result per finding, located
// at the host file that set the value (file://HOST/PATH:LINE).
type sarifFormat struct{}

func (sarifFormat) Name() string       { return "sarif" }
func (sarifFormat) Streams() bool      { return false }
func (sarifFormat) NeedsCatalog() bool { return true }
func (sarifFormat) Compliance() bool   { return false }

func (sarifFormat) Render(w io.Writer, r *audit.Result, opts Options) error {
	b := &sarifBuilder{cat: opts.Catalog}
	st := newSARIFStream(w, "fleetaudit/audit/")
	for _, f := range r.Findings {
		st.add(b.result(f, false))
	}
	inv := sarifInvocation{ExecutionSuccessful: r.Summary.Audited > 0}
	for _, e := range r.Errors {
		who := cmp.Or(e.Host, e.Source)
		inv.ToolExecutionNotifications = append(inv.ToolExecutionNotifications, sarifNotification{Level: "error", Message: sarifText{Text: who + ": " + e.Error}})
	}
	inv.ToolExecutionNotifications = append(inv.ToolExecutionNotifications, waiverNotifications(r.Waivers)...)
	return st.end(b, inv, map[string]any{"summary": r.Summary})
}

// sarifGate writes a gate as SARIF for code scanning on the pull request:
// head's findings, introduced ones as baselineState "new", unchanged ones
// "unchanged", each at the repo file and line that set the value.
func (sarifFormat) RenderGate(w io.Writer, r *configrepo.Result, opts Options) error {
	b := &sarifBuilder{cat: opts.Catalog}
	st := newSARIFStream(w, "fleetaudit/gate/")
	for _, fl := range r.Fleets {
		for _, part := range []struct {
			state    string
			findings []policies.Finding
		}{{"new", fl.Introduced}, {"unchanged", fl.Unchanged}} {
			if part.state == "new" && r.Plan != nil {
				continue // the plan says it per host
			}
			for _, f := range part.findings {
				res := b.result(f, true)
				if res.Locations[0].PhysicalLocation == nil {
					// A default: the fleet is declared in the manifest.
					res.Locations[0].PhysicalLocation = &sarifPhysical{ArtifactLocation: sarifArtLoc{URI: "fleetaudit.yaml", URIBaseID: srcRoot}}
				}
				res.BaselineState = part.state
				st.add(res)
			}
		}
	}
	if r.Plan != nil {
		planSARIF(b, st, r.Plan)
	}
	inv := sarifInvocation{ExecutionSuccessful: len(r.Errors) == 0}
	for _, e := range r.Errors {
		inv.ToolExecutionNotifications = append(inv.ToolExecutionNotifications, sarifNotification{Level: "error", Message: sarifText{Text: e.Fleet + " at " + e.Ref + ": " + e.Error}})
	}
	for _, warn := range r.Warnings {
		inv.ToolExecutionNotifications = append(inv.ToolExecutionNotifications, sarifNotification{Level: "warning", Message: sarifText{Text: warn}})
	}
	inv.ToolExecutionNotifications = append(inv.ToolExecutionNotifications, waiverNotifications(r.Waivers)...)
	props := map[string]any{"base": r.Base, "head": r.Head, "summary": r.Summary}
	if r.Plan != nil {
		props["plan_summary"] = r.Plan.Summary
	}
	return st.end(b, inv, props)
}
