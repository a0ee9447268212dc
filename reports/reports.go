// Package reports renders audit results. Each format lives in its own file
// and is chosen through Get; an unknown format is an error, never a default.
package reports

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/fleetaudit/fleetaudit/audit"
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
}

// Renderer writes one audit result in one format.
type Renderer interface {
	Render(w io.Writer, r *audit.Result, opts Options) error
}

var renderers = map[string]Renderer{
	"table":      tableRenderer{},
	"json":       jsonRenderer{},
	"markdown":   markdownRenderer{},
	"sarif":      sarifRenderer{},
	"junit":      junitRenderer{},
	"prometheus": promRenderer{},
	"html":       htmlRenderer{},
}

// Streams reports whether a format reads the findings through
// audit.Result.All, so the audit need not collect them (audit.Options.Stream).
func Streams(format string) bool {
	return format == "json" || format == "table" || format == "markdown"
}

// Formats lists the format names Get accepts.
func Formats() []string { return names(renderers) }

// Get returns the renderer for a format name.
func Get(format string) (Renderer, error) { return lookup(renderers, format) }

func names[R any](m map[string]R) []string {
	out := make([]string, 0, len(m))
	for name := range m {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

func lookup[R any](m map[string]R, format string) (R, error) {
	r, ok := m[format]
	if !ok {
		var zero R
		return zero, fmt.Errorf("unknown format %q: want one of %s", format, strings.Join(names(m), ", "))
	}
	return r, nil
}
