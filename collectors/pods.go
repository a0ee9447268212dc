package collectors

import (
	"errors"
	"fmt"

	"github.com/fleetaudit/fleetaudit/kube"
)

// collectPods adds the target's pods and pod templates, each with the file
// and line it came from as the source of "pods.<i>".
func collectPods(c *collection) {
	if c.pods == nil {
		return
	}
	objs, errs := c.pods.ReadPods(c.ctx)
	if c.ctx.Err() != nil {
		return
	}
	for _, o := range objs {
		fact := fmt.Sprintf("pods.%d", len(c.snap.Pods))
		c.snap.Pods = append(c.snap.Pods, o.Pod)
		c.fromManifest(fact, o.File, o.Line)
	}
	for _, err := range errs {
		var me *kube.ManifestError
		if !errors.As(err, &me) {
			c.failAs("pods", "", err)
			continue
		}
		if me.Line > 0 {
			c.failAs("pods", me.File, fmt.Errorf("line %d: %w", me.Line, me.Err))
		} else {
			c.failAs("pods", me.File, me.Err)
		}
	}
}
