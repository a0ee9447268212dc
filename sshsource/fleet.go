package sshsource

import (
	"context"
	"fmt"
	"hash/fnv"
	"time"
)

// Progress is what a run has done so far.
type Progress struct {
	Total, Done, Failed int
}

// CollectTimeout is Collect bounded by timeout (none when 0).
func (d *Dialer) CollectTimeout(ctx context.Context, h Host, timeout time.Duration) Result {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, timeout, hostTimeout(timeout))
		defer cancel()
	}
	return d.Collect(ctx, h)
}

// Shard is one part of a fleet split across runners: hosts are assigned
// by a hash of their name, so adding a host moves no other.
type Shard struct{ Index, Count int }

// ParseShard reads "i/n" (1 <= i <= n).
func ParseShard(s string) (Shard, error) {
	var sh Shard
	if _, err := fmt.Sscanf(s, "%d/%d", &sh.Index, &sh.Count); err != nil || sh.Count < 1 || sh.Index < 1 || sh.Index > sh.Count || fmt.Sprintf("%d/%d", sh.Index, sh.Count) != s {
		return Shard{}, fmt.Errorf("shard %q: want i/n with 1 <= i <= n, e.g. 2/4", s)
	}
	return sh, nil
}

// Has reports whether host name belongs to the shard.
func (s Shard) Has(name string) bool {
	if s.Count <= 1 {
		return true
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	return int(h.Sum32()%uint32(s.Count)) == s.Index-1
}

// hostTimeout is why a host's context ended when its time ran out.
type hostTimeout time.Duration

func (e hostTimeout) Error() string {
	return fmt.Sprintf("no answer within the host timeout (%s)", time.Duration(e))
}
func (e hostTimeout) Unwrap() error { return context.DeadlineExceeded }
