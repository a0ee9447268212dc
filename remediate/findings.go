package remediate

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/fleetaudit/fleetaudit/internal/safeio"
	"github.com/fleetaudit/fleetaudit/policies"
)

// AuditSchema is the audit's JSON report, the input of --findings.
const AuditSchema = "fleetaudit.findings/v1"

// maxAuditBytes bounds an audit report read for --findings.
const maxAuditBytes = 256 << 20

// ReadAudit reads the findings of an audit's JSON report (fleetaudit audit
// --format json). A FIFO or device is refused, the size is capped.
func ReadAudit(path string) ([]policies.Finding, error) {
	data, err := safeio.ReadFile(path, maxAuditBytes)
	if err != nil {
		return nil, fmt.Errorf("--findings %s: %w", path, err)
	}
	findings, err := ParseAudit(data)
	if err != nil {
		return nil, fmt.Errorf("--findings %s: %w", path, err)
	}
	return findings, nil
}

// ParseAudit decodes an audit's JSON report.
func ParseAudit(data []byte) ([]policies.Finding, error) {
	var doc struct {
		Schema   string             `json:"schema"`
		Findings []policies.Finding `json:"findings"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("not an audit JSON report: %w", err)
	}
	if doc.Schema != AuditSchema {
		return nil, fmt.Errorf("schema %q: want %q (fleetaudit audit --format json)", doc.Schema, AuditSchema)
	}
	if doc.Findings == nil {
		doc.Findings = []policies.Finding{}
	}
	return doc.Findings, nil
}
