package reports

import (
	"encoding/json"
	"io"

	"github.com/fleetaudit/fleetaudit/audit"
)

// jsonRenderer writes the fleetaudit.findings/v1 document. rule, severity,
// host, fleet and evidence[].source are a stable contract.
type jsonRenderer struct{}

func (jsonRenderer) Render(w io.Writer, r *audit.Result, _ Options) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}
