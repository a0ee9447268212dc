package reports

import (
	"fmt"

	"github.com/fleetaudit/fleetaudit/waivers"
)

// waiverNotices are the waivers that need attention, one sentence each:
// expired ones (their findings count again) and stale ones (they match
// nothing). Every format that has a place for warnings shows them.
func waiverNotices(rep *waivers.Report) []string {
	if rep == nil {
		return nil
	}
	var out []string
	for _, st := range rep.Waivers {
		switch {
		case st.State == waivers.Expired && st.Matched == 0:
			out = append(out, fmt.Sprintf("waiver %s for %s expired %s (owner %s); it matches no finding either",
				st.Source, st.Rule, st.Expires, st.Owner))
		case st.State == waivers.Expired:
			out = append(out, fmt.Sprintf("waiver %s for %s expired %s (owner %s): its %d %s again",
				st.Source, st.Rule, st.Expires, st.Owner, st.Matched, plural(st.Matched, "finding counts", "findings count")))
		case st.State == waivers.Stale:
			out = append(out, fmt.Sprintf("waiver %s for %s matches no finding (stale; owner %s)", st.Source, st.Rule, st.Owner))
		}
	}
	return out
}

func waiverNotifications(rep *waivers.Report) []sarifNotification {
	var out []sarifNotification
	for _, n := range waiverNotices(rep) {
		out = append(out, sarifNotification{Level: "warning", Message: sarifText{Text: n}})
	}
	return out
}
