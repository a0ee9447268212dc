package reports

import (
	"bytes"
	"strings"
	"testing"

	"github.com/fleetaudit/fleetaudit/configrepo"
)

// Host names, store fleets and host file names come from snapshots: in the
// PR comment they stay text, never a link, emphasis, HTML or @mention.
func TestMarkdownPlanQuotesHostNames(t *testing.T) {
	hostile := []string{"[pwn](https://e.vil/x)", "@acme/sre", "*bold*", "<img src=x>", "a|b", "x`y"}
	g := configrepo.HostGroup{Hosts: configrepo.FoldHosts(hostile), Count: len(hostile),
		NotStacked: []string{"/etc/default/grub.d/[y](https://e.vil/y).cfg"}}
	p := &configrepo.Plan{Source: "test", MaxAge: "48h",
		Fleets: []configrepo.PlanFleet{{Fleet: "gpu", Profile: "gpu", Hosts: len(hostile), Unchanged: []configrepo.HostGroup{g},
			NewlyFailing: []configrepo.HostGroup{}, Fixed: []configrepo.HostGroup{}}},
		NotPlanned: []configrepo.NotPlanned{{Host: "@acme/oncall", Fleet: "[f](https://e.vil/f)", Reason: "stale", Detail: "snapshot of **@acme/oncall**"},
			{Reason: "unread", Detail: "/snaps/broken.json: not JSON"}},
		Summary: configrepo.PlanSummary{Hosts: len(hostile) + 2, Planned: len(hostile), Unchanged: len(hostile), NotPlanned: 2}}
	var out bytes.Buffer
	mdPlan(&out, p)
	md := out.String()
	// Outside code spans nothing of the names may remain.
	plain := withoutCodeSpans(md)
	for _, bad := range []string{"e.vil", "@acme", "*bold*", "<img", "a|b"} {
		if strings.Contains(plain, bad) {
			t.Errorf("%q outside a code span in:\n%s", bad, md)
		}
	}
	if !strings.Contains(md, "- (host unknown): unread: `/snaps/broken.json: not JSON`") {
		t.Errorf("a snapshot read for no host name is not listed as such in:\n%s", md)
	}
	for _, h := range []string{"[pwn](https://e.vil/x)", "@acme/sre", "@acme/oncall", "/etc/default/grub.d/[y](https://e.vil/y).cfg"} {
		if !strings.Contains(md, "`"+h+"`") {
			t.Errorf("host %q not shown as it is in:\n%s", h, md)
		}
	}
}

// withoutCodeSpans is md with its code spans (CommonMark: a run of
// backticks to the next run of the same length) cut out.
func withoutCodeSpans(md string) string {
	var b strings.Builder
	for i := 0; i < len(md); {
		if md[i] != '`' {
			b.WriteByte(md[i])
			i++
			continue
		}
		n := 0
		for i+n < len(md) && md[i+n] == '`' {
			n++
		}
		j := i + n
		for j < len(md) {
			k := strings.IndexByte(md[j:], '`')
			if k < 0 {
				j = len(md)
				break
			}
			m := 0
			for j+k+m < len(md) && md[j+k+m] == '`' {
				m++
			}
			j += k + m
			if m == n {
				break
			}
		}
		b.WriteByte(' ')
		i = j
	}
	return b.String()
}
