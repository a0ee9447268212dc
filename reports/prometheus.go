package reports

import (
	"bytes"
	"cmp"
	"io"
	"maps"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/proto"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/fleetaudit/fleetaudit/configrepo"
	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/waivers"
)

// Prometheus text exposition format for node_exporter's textfile collector
// (--collector.textfile.directory): gauges without timestamps, which that
// collector refuses. Written through expfmt, so names and label values are
// escaped as the parser expects. Write it with -o DIR/fleetaudit.prom: the
// file is replaced atomically, as the collector needs.

// promSet accumulates gauges by family and label set.
type promSet struct {
	help     map[string]string
	families map[string]map[string]*dto.Metric
}

func newPromSet() *promSet {
	return &promSet{help: map[string]string{}, families: map[string]map[string]*dto.Metric{}}
}

func (p *promSet) describe(name, help string) {
	p.help[name] = help
	if p.families[name] == nil {
		p.families[name] = map[string]*dto.Metric{}
	}
}

// add adds v to the gauge name{labels}; labels are name, value pairs.
func (p *promSet) add(name string, v float64, labels ...string) {
	var key strings.Builder
	var pairs []*dto.LabelPair
	for i := 0; i+1 < len(labels); i += 2 {
		key.WriteString(labels[i] + "\x00" + labels[i+1] + "\x00")
		// Control characters from hosts are escaped as in the table (expfmt
		// would escape only the newline): the file is read on terminals too.
		pairs = append(pairs, &dto.LabelPair{Name: proto.String(labels[i]), Value: proto.String(EscapeText(labels[i+1]))})
	}
	m := p.families[name][key.String()]
	if m == nil {
		m = &dto.Metric{Label: pairs, Gauge: &dto.Gauge{Value: proto.Float64(0)}}
		p.families[name][key.String()] = m
	}
	m.Gauge.Value = proto.Float64(m.Gauge.GetValue() + v)
}

func (p *promSet) write(w io.Writer) error {
	var buf bytes.Buffer
	for _, name := range slices.Sorted(maps.Keys(p.families)) {
		metrics := p.families[name]
		if len(metrics) == 0 {
			continue
		}
		mf := &dto.MetricFamily{Name: proto.String(name), Help: proto.String(p.help[name]), Type: dto.MetricType_GAUGE.Enum()}
		for _, k := range slices.Sorted(maps.Keys(metrics)) {
			mf.Metric = append(mf.Metric, metrics[k])
		}
		if _, err := expfmt.MetricFamilyToText(&buf, mf); err != nil {
			return err
		}
	}
	_, err := w.Write(buf.Bytes())
	return err
}

func (p *promSet) waivers(rep *waivers.Report) {
	if rep == nil {
		return
	}
	p.describe("fleetaudit_waivers", "Waivers in the waivers file by state: active, expired (no longer applied), stale (match nothing).")
	for _, state := range []string{waivers.Active, waivers.Expired, waivers.Stale} {
		p.add("fleetaudit_waivers", 0, "state", state)
	}
	p.describe("fleetaudit_waiver_expiry_timestamp_seconds", "When each waiver stops applying, as a Unix time: alert before it passes.")
	p.describe("fleetaudit_waiver_findings", "Findings each waiver covers (for an expired waiver: would cover).")
	for _, st := range rep.Waivers {
		p.add("fleetaudit_waivers", 1, "state", st.State)
		labels := []string{"rule", st.Rule, "owner", st.Owner, "waiver", st.Source, "state", st.State}
		p.add("fleetaudit_waiver_expiry_timestamp_seconds", float64(st.ExpiresAt().Unix()), labels...)
		p.add("fleetaudit_waiver_findings", float64(st.Matched), labels...)
	}
}

// promRenderer writes an audit's findings per rule, fleet and severity.
// Rules a fleet runs without findings are written as 0 when the catalog is
// known, so an alert on a series resolves when its findings do.
type promFormat struct{}

func (promFormat) Name() string       { return "prometheus" }
func (promFormat) Streams() bool      { return false }
func (promFormat) NeedsCatalog() bool { return true }
func (promFormat) Compliance() bool   { return false }

func (promFormat) Render(w io.Writer, r *audit.Result, opts Options) error {
	p := newPromSet()
	p.describe("fleetaudit_findings", "Unwaived findings of the last audit by rule, fleet and severity.")
	p.describe("fleetaudit_findings_waived", "Findings of the last audit that a waiver covers, by rule, fleet and severity.")
	p.describe("fleetaudit_hosts", "Hosts of the last audit by fleet and status: audited (facts read) or unread.")
	p.describe("fleetaudit_rule_hosts_skipped", "Audited hosts a rule did not run on because its facts were not collected.")
	p.describe("fleetaudit_last_run_timestamp_seconds", "When the last audit ran, as a Unix time.")
	fired := map[[2]string]bool{}
	for _, f := range r.Findings {
		fired[[2]string{f.Fleet, f.Rule}] = true
	}
	for name := range r.Summary.Fleets {
		if opts.Catalog == nil {
			continue
		}
		for _, id := range opts.Catalog.FleetRules[name] {
			if !fired[[2]string{name, id}] {
				// The rule's own severity: findings may carry another
				// (a rule's per-finding severity, a profile override).
				p.add("fleetaudit_findings", 0, "fleet", name, "rule", id, "severity", cmp.Or(opts.Catalog.Rules[id].Severity, policies.SeverityInfo))
			}
		}
	}
	for _, f := range r.Findings {
		if f.Waived != nil {
			p.add("fleetaudit_findings_waived", 1, "fleet", f.Fleet, "rule", f.Rule, "severity", f.Severity)
			continue
		}
		p.add("fleetaudit_findings", 1, "fleet", f.Fleet, "rule", f.Rule, "severity", f.Severity)
	}
	unread := map[string]int{}
	if hosts := r.HostRuns(); hosts != nil {
		for h := range hosts {
			if h.Unread != "" {
				unread[h.Fleet]++
			}
		}
		for h := range hosts {
			if h.Unread == "" {
				for _, id := range h.Skipped {
					p.add("fleetaudit_rule_hosts_skipped", 1, "fleet", h.Fleet, "rule", id)
				}
			}
		}
	}
	for name, fs := range r.Summary.Fleets {
		p.add("fleetaudit_hosts", float64(fs.Hosts-unread[name]), "fleet", name, "status", "audited")
		p.add("fleetaudit_hosts", float64(unread[name]), "fleet", name, "status", "unread")
	}
	if !opts.Run.At.IsZero() {
		p.add("fleetaudit_last_run_timestamp_seconds", float64(opts.Run.At.Unix()))
	}
	p.waivers(r.Waivers)
	return p.write(w)
}

// promGate writes a gate's findings per fleet, rule, severity and change
// (introduced, resolved, unchanged).
func (promFormat) RenderGate(w io.Writer, r *configrepo.Result, _ Options) error {
	p := newPromSet()
	p.describe("fleetaudit_gate_findings", "Findings of the last gate by fleet, rule, severity and change: introduced, resolved or unchanged (waived ones excluded).")
	p.describe("fleetaudit_gate_findings_waived", "Findings of the last gate that a waiver covers, by fleet, rule, severity and change.")
	p.describe("fleetaudit_gate_fleet_errors", "Fleet sides the last gate could not render or audit.")
	for _, fl := range r.Fleets {
		for _, part := range []struct {
			change   string
			findings []policies.Finding
		}{{"introduced", fl.Introduced}, {"resolved", fl.Resolved}, {"unchanged", fl.Unchanged}} {
			for _, f := range part.findings {
				name := "fleetaudit_gate_findings"
				if f.Waived != nil {
					name = "fleetaudit_gate_findings_waived"
				}
				p.add(name, 1, "fleet", fl.Fleet, "rule", f.Rule, "severity", f.Severity, "change", part.change)
			}
		}
	}
	for _, e := range r.Errors {
		p.add("fleetaudit_gate_fleet_errors", 1, "fleet", e.Fleet, "ref", e.Ref)
	}
	p.waivers(r.Waivers)
	return p.write(w)
}
