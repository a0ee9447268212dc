package policies

import (
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
)

// Policies are code from outside the project: they run without builtins that
// reach the network or the process environment. net.cidr_* do no I/O but go
// with the rest of net.* (docs/architecture.md, safety rules); rego.parse_module stays (it
// only parses text it is given).
func disabledBuiltin(name string) bool {
	return name == "http.send" || name == "opa.runtime" || strings.HasPrefix(name, "net.")
}

// capabilities are those of the OPA version go.mod pins, less the disabled
// builtins, with no host reachable (AllowNet empty, not nil).
func capabilities() *ast.Capabilities {
	caps := ast.CapabilitiesForThisVersion()
	kept := caps.Builtins[:0]
	for _, b := range caps.Builtins {
		if !disabledBuiltin(b.Name) {
			kept = append(kept, b)
		}
	}
	caps.Builtins = kept
	caps.AllowNet = []string{}
	return caps
}
