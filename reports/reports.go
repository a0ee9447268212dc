// Package reports renders audit results. Each format lives in its own file
// as one Format, registered once in formats, and is chosen through Get; an
// unknown format is an error, never a default.
package reports

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/fleetaudit/fleetaudit/configrepo"
)

// Options tune rendering for where the output goes.
type Options struct {
	// Color adds ANSI colour; the caller sets it only for a terminal.
	Color bool
	// Width is the terminal width the table wraps to (80 when zero).
	Width int
	// GroupBy folds the audit table and Markdown: GroupNone one row per
	// finding, GroupRule one row per rule and fleet (hosts folded, evidence
	// values counted), GroupHost one block per host. "" picks GroupRule for
	// runs of more than GroupAutoHosts hosts, else GroupNone.
	GroupBy string
	// Catalog is the rules' metadata and each fleet's rules, for SARIF,
	// JUnit, Prometheus and HTML; nil: only what the findings say.
	Catalog *Catalog
	// Run names the run for the HTML report (its time, a store's id);
	// Trend are earlier runs' points, oldest first.
	Run   RunInfo
	Trend []TrendPoint
	// OpenReports places the openreports format's reports.
	OpenReports OpenReportsOptions
	// Changes are what changed since the previous recorded run, and Seen
	// when each open finding was first seen, for the compliance formats
	// (HTML, Markdown); nil without a store.
	Changes *Changes
	Seen    Seen
}

// Renderer writes one audit result in one format.
type Renderer interface {
	Render(w io.Writer, r *audit.Result, opts Options) error
}

// Format is one output format: one file in this package and one line in
// formats. Its methods say what it can do, and the commands derive their
// --format values and checks from them.
type Format interface {
	Renderer
	// Name is the --format value.
	Name() string
	// Streams: Render reads the findings through audit.Result.All, in
	// order, so the audit need not collect them (audit.Options.Stream).
	Streams() bool
	// NeedsCatalog: the format describes rules beyond their findings
	// (Options.Catalog), so a caller without one builds it.
	NeedsCatalog() bool
	// Compliance: report renders it from a recorded run (with the trend).
	Compliance() bool
}

// GateFormat is a Format the gate renders too.
type GateFormat interface {
	Format
	RenderGate(w io.Writer, r *configrepo.Result, opts Options) error
}

// formats are every format, each registered once here.
var formats = []Format{
	tableFormat{},
	jsonFormat{},
	markdownFormat{},
	sarifFormat{},
	junitFormat{},
	promFormat{},
	htmlFormat{},
	openReportsFormat{},
}

// Formats lists the format names Get accepts (audit's).
func Formats() []string { return formatNames(func(Format) bool { return true }) }

// GateFormats lists the format names GetGate accepts.
func GateFormats() []string {
	return formatNames(func(f Format) bool { _, ok := f.(GateFormat); return ok })
}

// ComplianceFormats lists the formats report renders from a recorded run.
func ComplianceFormats() []string { return formatNames(Format.Compliance) }

// Get returns the format of a name.
func Get(format string) (Format, error) {
	if f := formatOf(format); f != nil {
		return f, nil
	}
	return nil, unknown(format, Formats())
}

// GetGate returns the gate format of a name.
func GetGate(format string) (GateFormat, error) {
	if g, ok := formatOf(format).(GateFormat); ok {
		return g, nil
	}
	return nil, unknown(format, GateFormats())
}

func unknown(format string, names []string) error {
	return fmt.Errorf("unknown format %q: want one of %s", format, strings.Join(names, ", "))
}

func formatNames(keep func(Format) bool) []string {
	var out []string
	for _, f := range formats {
		if keep(f) {
			out = append(out, f.Name())
		}
	}
	slices.Sort(out)
	return out
}

func formatOf(name string) Format {
	for _, f := range formats {
		if f.Name() == name {
			return f
		}
	}
	return nil
}
