package configrepo

import (
	"context"
	"iter"

	"github.com/fleetaudit/fleetaudit/policies"
)

// runAudit is the plan's one call into the audit runner, so that moving the
// runner is a one-line change here.
func runAudit(ctx context.Context, e *policies.Engine, hosts iter.Seq[policies.HostInput], opts policies.RunOptions) (*policies.Audit, error) {
	return e.RunAudit(ctx, hosts, opts)
}
