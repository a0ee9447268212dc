package reports

import (
	"bufio"
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/policies/fleetrun"
	"github.com/fleetaudit/fleetaudit/waivers"
)

// OpenReports (openreports.io/v1alpha1, the successor of wgpolicyk8s
// PolicyReport that Kyverno, Kubewarden and Policy Reporter read): one
// Report per Kubernetes node, in OpenReportsOptions.Namespace and scoped
// to the Node; a ClusterReport per host that is no node. Each report has
// one result per rule the host's fleet runs:
//
//   - fail: an unwaived finding (severity the fleet's);
//   - skip: the rule did not run (facts not collected, an offline image),
//     or every finding is waived (the waiver in the properties: the spec's
//     "not selected based on user inputs", as Kyverno reports exceptions);
//   - error: the host could not be read, the rule ran past its budget, or
//     a collection-error finding (only present when there is one);
//   - pass: otherwise.
//
// The output is a kind: List that kubectl apply -f takes as it is.

// Labels and annotations on every report fleetaudit writes.
const (
	// OpenReportsManagedBy is the label (app.kubernetes.io/managed-by)
	// value that marks fleetaudit's reports, which a publish replaces.
	OpenReportsManagedBy = "fleetaudit"
	openReportsAPI       = "openreports.io/v1alpha1"
	managedByLabel       = "app.kubernetes.io/managed-by"
)

// OpenReportsOptions place the reports of the openreports format.
type OpenReportsOptions struct {
	// Namespace holds the nodes' Reports ("fleetaudit" when empty).
	Namespace string
	// Node returns the Kubernetes node a host is, "" for none (its report
	// is then a ClusterReport); nil: no host is a node.
	Node func(host string) string
}

// OpenReport is one Report or ClusterReport.
type OpenReport struct {
	APIVersion string             `json:"apiVersion"`
	Kind       string             `json:"kind"`
	Metadata   OpenReportMeta     `json:"metadata"`
	Scope      *OpenReportRef     `json:"scope,omitempty"`
	Source     string             `json:"source"`
	Summary    OpenReportSummary  `json:"summary"`
	Results    []OpenReportResult `json:"results"`
}

// OpenReportMeta is a report's object metadata.
type OpenReportMeta struct {
	Name        string            `json:"name"`
	Namespace   string            `json:"namespace,omitempty"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

// OpenReportRef is the object a report is about (a Node).
type OpenReportRef struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
}

// OpenReportSummary counts a report's results.
type OpenReportSummary struct {
	Pass  int `json:"pass"`
	Fail  int `json:"fail"`
	Warn  int `json:"warn"`
	Error int `json:"error"`
	Skip  int `json:"skip"`
}

// OpenReportResult is one rule on one host.
type OpenReportResult struct {
	Policy     string            `json:"policy"`
	Rule       string            `json:"rule,omitempty"`
	Category   string            `json:"category,omitempty"`
	Message    string            `json:"message,omitempty"`
	Result     string            `json:"result"`
	Severity   string            `json:"severity,omitempty"`
	Scored     bool              `json:"scored"`
	Source     string            `json:"source"`
	Timestamp  *OpenReportTime   `json:"timestamp,omitempty"`
	Properties map[string]string `json:"properties,omitempty"`
}

// OpenReportTime is a protobuf Timestamp, as the CRD has it.
type OpenReportTime struct {
	Seconds int64 `json:"seconds"`
	Nanos   int32 `json:"nanos"`
}

type openReportsFormat struct{}

func (openReportsFormat) Name() string       { return "openreports" }
func (openReportsFormat) Streams() bool      { return false }
func (openReportsFormat) NeedsCatalog() bool { return true }
func (openReportsFormat) Compliance() bool   { return false }

// Render writes the List one report at a time: the bytes of writeJSON's
// indented encoding of the whole, without a buffer of the whole.
func (openReportsFormat) Render(w io.Writer, r *audit.Result, opts Options) error {
	bw := bufio.NewWriterSize(w, 256<<10)
	bw.WriteString("{\n  \"apiVersion\": \"v1\",\n  \"kind\": \"List\",\n  \"items\": [")
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("    ", "  ")
	items := OpenReports(r, opts)
	for i := range items {
		buf.Reset()
		if err := enc.Encode(&items[i]); err != nil {
			return err
		}
		if i > 0 {
			bw.WriteString(",")
		}
		bw.WriteString("\n    ")
		if _, err := bw.Write(EscapeJSON(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))); err != nil {
			return err
		}
	}
	if len(items) > 0 {
		bw.WriteString("\n  ")
	}
	bw.WriteString("]\n}\n")
	return bw.Flush()
}

// orSubject is what one report is about: a host of a fleet, or a fleet's
// findings that name no host.
type orSubject struct{ host, fleet string }

// OpenReports builds the reports of an audit: Reports (nodes) first, then
// ClusterReports, each sorted by name.
func OpenReports(r *audit.Result, opts Options) []OpenReport {
	findings := map[orSubject]map[string][]policies.Finding{}
	runs := map[orSubject]*fleetrun.HostRun{}
	var order []orSubject
	add := func(s orSubject) {
		if _, ok := findings[s]; !ok {
			findings[s] = map[string][]policies.Finding{}
			order = append(order, s)
		}
	}
	for h := range hostRuns(r) {
		s := orSubject{h.Host, h.Fleet}
		add(s)
		runs[s] = &h
	}
	for f := range r.All() {
		s := orSubject{f.Host, f.Fleet}
		add(s)
		findings[s][f.Rule] = append(findings[s][f.Rule], *f)
	}
	var out []OpenReport
	for _, s := range order {
		out = append(out, openReport(s, runs[s], findings[s], opts))
	}
	if w := waiversReport(r.Waivers, opts); w != nil {
		out = append(out, *w)
	}
	slices.SortFunc(out, func(a, b OpenReport) int {
		return cmp.Or(-cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Metadata.Name, b.Metadata.Name))
	})
	return out
}

func openReport(s orSubject, run *fleetrun.HostRun, byRule map[string][]policies.Finding, opts Options) OpenReport {
	rep := OpenReport{
		APIVersion: openReportsAPI,
		Kind:       "ClusterReport",
		Source:     "fleetaudit",
		Metadata: OpenReportMeta{
			Labels:      map[string]string{managedByLabel: OpenReportsManagedBy},
			Annotations: map[string]string{"fleetaudit.io/fleet": s.fleet},
		},
		Results: []OpenReportResult{},
	}
	switch node := nodeOf(s.host, opts.OpenReports); {
	case s.host == "":
		rep.Metadata.Name = objectName("fleetaudit-fleet-", s.fleet)
	case node != "":
		rep.Kind = "Report"
		rep.Metadata.Name = objectName("fleetaudit-node-", node)
		rep.Metadata.Namespace = cmp.Or(opts.OpenReports.Namespace, "fleetaudit")
		rep.Scope = &OpenReportRef{APIVersion: "v1", Kind: "Node", Name: node}
		rep.Metadata.Annotations["fleetaudit.io/host"] = s.host
	default:
		rep.Metadata.Name = objectName("fleetaudit-host-", s.host)
		rep.Metadata.Annotations["fleetaudit.io/host"] = s.host
	}
	var ts *OpenReportTime
	if !opts.Run.At.IsZero() {
		ts = &OpenReportTime{Seconds: opts.Run.At.Unix(), Nanos: int32(opts.Run.At.Nanosecond())}
		rep.Metadata.Annotations["fleetaudit.io/audited-at"] = opts.Run.At.UTC().Format("2006-01-02T15:04:05Z07:00")
	}
	if opts.Run.ID != "" {
		rep.Metadata.Annotations["fleetaudit.io/run"] = opts.Run.ID
	}

	var rules []string
	if opts.Catalog != nil && s.host != "" {
		rules = slices.Clone(opts.Catalog.FleetRules[s.fleet])
	}
	for _, id := range slices.Sorted(maps.Keys(byRule)) {
		if !slices.Contains(rules, id) {
			rules = append(rules, id)
		}
	}
	slices.Sort(rules)
	for _, id := range rules {
		res := openResult(id, run, byRule[id], opts)
		res.Timestamp = ts
		switch res.Result {
		case "pass":
			rep.Summary.Pass++
		case "fail":
			rep.Summary.Fail++
		case "warn":
			rep.Summary.Warn++
		case "error":
			rep.Summary.Error++
		case "skip":
			rep.Summary.Skip++
		}
		rep.Results = append(rep.Results, res)
	}
	return rep
}

// waiversReport is a ClusterReport of the waivers that need a look: a
// warn result (not met, not scored) per expired or stale waiver; nil when
// there is none.
func waiversReport(rep *waivers.Report, opts Options) *OpenReport {
	if rep == nil {
		return nil
	}
	out := OpenReport{
		APIVersion: openReportsAPI,
		Kind:       "ClusterReport",
		Source:     "fleetaudit",
		Metadata: OpenReportMeta{
			Name:        "fleetaudit-waivers",
			Labels:      map[string]string{managedByLabel: OpenReportsManagedBy},
			Annotations: map[string]string{"fleetaudit.io/waivers-file": rep.File},
		},
	}
	for _, st := range rep.Waivers {
		notice := waiverNotices(&waivers.Report{Waivers: []waivers.Status{st}})
		if len(notice) == 0 {
			continue
		}
		res := OpenReportResult{Policy: "waiver", Rule: st.Rule, Result: "warn", Source: "fleetaudit", Message: notice[0],
			Properties: map[string]string{"waiver.owner": st.Owner, "waiver.justification": st.Justification,
				"waiver.expires": st.Expires, "waiver.source": st.Source, "waiver.state": st.State, "waiver.matched": fmt.Sprint(st.Matched)}}
		if !opts.Run.At.IsZero() {
			res.Timestamp = &OpenReportTime{Seconds: opts.Run.At.Unix(), Nanos: int32(opts.Run.At.Nanosecond())}
		}
		out.Results = append(out.Results, res)
		out.Summary.Warn++
	}
	if len(out.Results) == 0 {
		return nil
	}
	return &out
}

func nodeOf(host string, o OpenReportsOptions) string {
	if o.Node == nil || host == "" {
		return ""
	}
	return o.Node(host)
}

// openResult is rule id's result on one host from its findings there.
func openResult(id string, run *fleetrun.HostRun, fs []policies.Finding, opts Options) OpenReportResult {
	res := OpenReportResult{Policy: id, Source: "fleetaudit", Scored: true}
	var rule policies.Rule
	if opts.Catalog != nil {
		rule = opts.Catalog.Rules[id]
	}
	res.Category = ruleCategory(rule.Ref)
	res.Severity = rule.Severity
	title := rule.Title
	var failing, waived []policies.Finding
	for _, f := range fs {
		title = cmp.Or(f.Title, title)
		if f.Waived != nil {
			waived = append(waived, f)
		} else {
			failing = append(failing, f)
		}
	}
	// The findings' severity is the fleet's (profile overrides).
	sev, judged := "", failing
	if len(judged) == 0 {
		judged = waived
	}
	for _, f := range judged {
		if policies.SeverityRank(f.Severity) > policies.SeverityRank(sev) {
			sev = f.Severity
		}
	}
	res.Severity = cmp.Or(sev, res.Severity)
	if policies.SeverityRank(res.Severity) == 0 {
		res.Severity = "" // the CRD's enum is fleetaudit's five
	}
	props := map[string]string{}
	switch {
	case len(failing) > 0 && id == policies.CollectionErrorRule:
		res.Result, res.Message = "error", findingsMessage(failing)
		findingProperties(props, failing)
	case run != nil && run.Unread != "":
		res.Result, res.Message = "error", "not evaluated: the host could not be read: "+run.Unread
	case len(failing) > 0:
		res.Result, res.Message = "fail", findingsMessage(failing)
		findingProperties(props, failing)
	case run != nil && slices.Contains(run.TimedOut, id):
		res.Result, res.Message = "error", "not evaluated: the rule ran past its budget (--rule-timeout)"
	case len(waived) > 0:
		res.Result, res.Message = "skip", "waived: "+findingsMessage(waived)
		findingProperties(props, waived)
		w := waived[0].Waived
		props["waiver.owner"], props["waiver.justification"] = w.Owner, w.Justification
		props["waiver.expires"], props["waiver.source"] = w.Expires, w.Source
	case run != nil && slices.Contains(run.Skipped, id):
		res.Result, res.Message = "skip", skippedMessage(run.Image)
	case run != nil && run.PodsUnread && readsPodsOnly(rule):
		res.Result, res.Message = "skip", "not evaluated: no pods were read for this host"
	default:
		res.Result, res.Message = "pass", title
	}
	if len(props) > 0 {
		if title != "" && res.Message != title {
			props["title"] = title
		}
		res.Properties = props
	}
	return res
}

// findingsMessage is the findings' messages, each once.
func findingsMessage(fs []policies.Finding) string {
	var msgs []string
	for _, f := range fs {
		if !slices.Contains(msgs, f.Message) {
			msgs = append(msgs, f.Message)
		}
	}
	return strings.Join(msgs, "; ")
}

// findingProperties adds the findings' evidence (one property per fact:
// its value and where it was set), provenance, remediation and how the
// fleet chose its severity and expected value.
func findingProperties(props map[string]string, fs []policies.Finding) {
	for _, f := range fs {
		for _, e := range f.Evidence {
			v := valueText(e.Value)
			if e.Source != "" {
				v += " (at " + e.Source + ")"
			}
			props["evidence."+e.Fact] = v
		}
	}
	f := fs[0]
	if p := provenance(f); p != "" {
		props["provenance"] = p
	}
	if f.Remediation != "" {
		props["remediation"] = f.Remediation
	}
	if f.Expected != nil {
		props["expected"] = valueText(f.Expected)
		props["expected.basis"] = f.Basis
	}
	if o := f.SeverityOverride; o != nil {
		props["severity.rule"], props["severity.profile"] = o.RuleSeverity, o.Profile
	}
	if len(fs) > 1 {
		props["findings"] = fmt.Sprint(len(fs))
	}
}

// ruleCategory is the package a built-in rule lives in ("boot" of
// data.fleetaudit.rules.boot.x or data.fleetaudit.fleet_rules.boot.x), ""
// for others.
func ruleCategory(ref string) string {
	rest, ok := strings.CutPrefix(ref, "data.fleetaudit.rules.")
	if !ok {
		if rest, ok = strings.CutPrefix(ref, "data.fleetaudit.fleet_rules."); !ok {
			return ""
		}
	}
	pkg, _, ok := strings.Cut(rest, ".")
	if !ok {
		return ""
	}
	return pkg
}

// objectName is prefix+s as a Kubernetes object name (a DNS subdomain).
// A name that is not one as it is, or is too long, is made of s's
// letters and digits, "-" for the rest, and a hash of s, so that two hosts
// never share one.
func objectName(prefix, s string) string {
	if name := prefix + s; len(validation.IsDNS1123Subdomain(name)) == 0 {
		return name
	}
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			b[i] = '-'
		}
	}
	sum := sha256.Sum256([]byte(s))
	h := hex.EncodeToString(sum[:4])
	name := string(b)
	if n := validation.DNS1123SubdomainMaxLength - len(prefix) - len(h) - 1; len(name) > n {
		name = name[:n]
	}
	if name = strings.Trim(name, "-"); name == "" {
		return prefix + h
	}
	return prefix + name + "-" + h
}
