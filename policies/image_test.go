package policies

import (
	"context"
	"strings"
	"testing"
)

// custom.image is a boolean.
func TestImageMetadataIsBoolean(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "r.rego", `package fleetaudit.rules.x

# METADATA
# title: T
# description: D
# related_resources:
# - ref: https://example.com
# custom:
#   id: r-x
#   severity: low
#   profiles: [all]
#   remediation: R
#   image: "yes"
#   facts:
#   - boot.configured.params
r_x contains f if {
	f := {"msg": "m", "evidence": ["boot.configured.params"]}
}
`)
	_, err := New(context.Background(), Options{PolicyDirs: []string{dir}})
	if err == nil || !strings.Contains(err.Error(), "custom.image") {
		t.Errorf("load error %v, want one naming custom.image", err)
	}
}
