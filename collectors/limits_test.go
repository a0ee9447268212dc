package collectors

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

// The stock /etc/security/limits.conf of Ubuntu 22.04 (libpam-modules).
const ubuntuLimitsConf = `# /etc/security/limits.conf
#
#Each line describes a limit for a user in the form:
#
#<domain>        <type>  <item>  <value>
#
#Where:
#<domain> can be:
#        - a user name
#        - a group name, with @group syntax
#        - the wildcard *, for default entry
#        - the wildcard %, can be also used with %group syntax,
#                 for maxlogin limit
#        - NOTE: group and wildcard limits are not applied to root.
#          To apply a limit to the root user, <domain> must be
#          the literal username root.
#
#<type> can have the two values:
#        - "soft" for enforcing the soft limits
#        - "hard" for enforcing hard limits
#
#<item> can be one of the following:
#        - core - limits the core file size (KB)
#        - data - max data size (KB)
#        - fsize - maximum filesize (KB)
#        - memlock - max locked-in-memory address space (KB)
#        - nofile - max number of open file descriptors
#        - rss - max resident set size (KB)
#        - stack - max stack size (KB)
#        - cpu - max CPU time (MIN)
#        - nproc - max number of processes
#        - as - address space limit (KB)
#        - maxlogins - max number of logins for this user
#        - maxsyslogins - max number of logins on the system
#        - priority - the priority to run user process with
#        - locks - max number of file locks the user can hold
#        - sigpending - max number of pending signals
#        - msgqueue - max memory used by POSIX message queues (bytes)
#        - nice - max nice priority allowed to raise to values: [-20, 19]
#        - rtprio - max realtime priority
#        - chroot - change root to directory (Debian-specific)
#
#<domain>      <type>  <item>         <value>
#

#*               soft    core            0
#root            hard    core            100000
#*               hard    rss             10000
#@student        hard    nproc           20
#@faculty        soft    nproc           20
#@faculty        hard    nproc           50
#ftp             hard    nproc           0
#ftp             -       chroot          /ftp
#@student        -       maxlogins       4

# End of file
`

// rdma-core's /etc/security/limits.d/rdma.conf on RHEL.
const rdmaLimitsConf = `# configuration for rdma tuning
*       soft    memlock         unlimited
*       hard    memlock         unlimited
# rdma tuning end
`

// limitRuleView is what the parser tests compare.
type limitRuleView struct {
	Line                      int
	Domain, Type, Item, Value string
	Exempt                    bool
	Shown                     string
	Final                     uint64
}

func viewRules(rules []limitRule) []limitRuleView {
	var out []limitRuleView
	for _, r := range rules {
		out = append(out, limitRuleView{r.Line, r.Domain, r.Type, r.Item, r.Value, r.Exempt, r.Shown, r.Final})
	}
	return out
}

func TestParseLimitsConf(t *testing.T) {
	const inf = math.MaxUint64
	tests := []struct {
		name     string
		in       string
		want     []limitRuleView
		wantErrs []int
	}{
		{
			name: "stock file has no entries",
			in:   ubuntuLimitsConf,
		},
		{
			name: "rdma.conf",
			in:   rdmaLimitsConf,
			want: []limitRuleView{
				{2, "*", "soft", "memlock", "unlimited", false, "unlimited", inf},
				{3, "*", "hard", "memlock", "unlimited", false, "unlimited", inf},
			},
		},
		{
			name: "case, units, comments and unlimited spellings",
			in: "*\tSOFT\tMemLock\t64 # 64 KiB\n" +
				"  @hpc - nofile 1048576\n" +
				"alice hard cpu 10\n" +
				"* hard stack INFINITY\n" +
				"* soft core -1\n" +
				"* hard rss -\n" +
				"@hpc hard nice -5\n" +
				"* hard nice -40\n" +
				"* - maxlogins unlimited\n" +
				"* - nofile 1024 and change\n" +
				"ftp - chroot /ftp\n" +
				"* hard memlock 18014398509481984\n",
			want: []limitRuleView{
				{1, "*", "soft", "memlock", "64", false, "64", 64 * 1024},
				{2, "@hpc", "-", "nofile", "1048576", false, "1048576", 1048576},
				{3, "alice", "hard", "cpu", "10", false, "10", 600},
				{4, "*", "hard", "stack", "INFINITY", false, "unlimited", inf},
				{5, "*", "soft", "core", "-1", false, "unlimited", inf},
				{6, "*", "hard", "rss", "-", false, "unlimited", inf},
				{7, "@hpc", "hard", "nice", "-5", false, "-5", 25},
				{8, "*", "hard", "nice", "-40", false, "-20", 40},
				{9, "*", "-", "maxlogins", "unlimited", false, "unlimited", inf},
				{10, "*", "-", "nofile", "1024 and change", false, "1024", 1024},
				{11, "ftp", "-", "chroot", "/ftp", false, "/ftp", 0},
				{12, "*", "hard", "memlock", "18014398509481984", false, "unlimited", inf},
			},
		},
		{
			name: "exemption lines and uid/gid ranges",
			in:   "root -\n@admins -\n1000:1999 soft nproc 4096\n@:2000 hard nofile 8192\n:0 - core 0\n%hpc - maxlogins 4\n",
			want: []limitRuleView{
				{1, "root", "-", "", "", true, "", 0},
				{2, "@admins", "-", "", "", true, "", 0},
				{3, "1000:1999", "soft", "nproc", "4096", false, "4096", 4096},
				{4, "@:2000", "hard", "nofile", "8192", false, "8192", 8192},
				{5, ":0", "-", "core", "0", false, "0", 0},
				{6, "%hpc", "-", "maxlogins", "4", false, "4", 0},
			},
		},
		{
			name: "lines pam_limits skips",
			in: "* soft nofile\n" + // 1: three fields
				"*\n" + // 2: one field
				"* hart nofile 10\n" + // 3: unknown type
				"* soft nofiles 10\n" + // 4: unknown item
				"* soft nofile lots\n" + // 5: not a number
				"alice:bob hard nproc 1\n" + // 6: bad range
				"% hard nofile 1024\n" + // 7: % is for maxlogins only
				"* - priority unlimited\n" + // 8: priority takes a number
				"* - nonewprivs yes\n" + // 9: 0 or 1
				"%10: - maxlogins 2\n" + // 10: no ranges for %
				"@: - nofile 1\n" + // 11: range without id
				"* soft nofile 4096\n", // 12: fine
			want: []limitRuleView{
				{12, "*", "soft", "nofile", "4096", false, "4096", 4096},
			},
			wantErrs: []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11},
		},
		{
			// pam_limits logs "invalid line N ... skipped" for a line that
			// is not 4 fields and applies the rest; its C string ends at a
			// NUL, so a line holding one is read up to it.
			name: "three fields, binary garbage and NUL",
			in: "* soft memlock\n" +
				"\x89PNG\x1a\xff\xfe\x01\n" +
				"\x00* hard memlock 64\n" +
				"* hard memlock 128\x00 junk\n" +
				"* - memlock\x00 unlimited\n",
			want: []limitRuleView{
				{4, "*", "hard", "memlock", "128", false, "128", 128 * 1024},
			},
			wantErrs: []int{1, 2, 5},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rules, errs := parseLimitsConf([]byte(tt.in))
			if diff := cmp.Diff(tt.want, viewRules(rules)); diff != "" {
				t.Errorf("rules (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantErrs, confErrorLines(t, errs)); diff != "" {
				t.Errorf("error lines (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseLimitRange(t *testing.T) {
	tests := []struct {
		domain   string
		kind     limitRange
		min, max uint32
		ok       bool
	}{
		{"alice", limitRangeNone, 0, 0, true},
		{"@hpc", limitRangeNone, 0, 0, true},
		{":1000", limitRangeOne, 1000, 1000, true},
		{"@:2000", limitRangeOne, 2000, 2000, true},
		{"1000:", limitRangeMin, 1000, 0, true},
		{"1000:1999", limitRangeMinMax, 1000, 1999, true},
		{"%5:6", limitRangeMinMax, 5, 6, true},
		{":", 0, 0, 0, false},
		{"a:1", 0, 0, 0, false},
		{"1:b", 0, 0, 0, false},
		{"1:2:3", 0, 0, 0, false},
		{"99999999999999999999:", 0, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.domain, func(t *testing.T) {
			kind, min, max, ok := parseLimitRange(tt.domain)
			if ok != tt.ok || (ok && (kind != tt.kind || min != tt.min || max != tt.max)) {
				t.Errorf("parseLimitRange(%q) = %v %d %d %v, want %v %d %d %v",
					tt.domain, kind, min, max, ok, tt.kind, tt.min, tt.max, tt.ok)
			}
		})
	}
}

func mustParseLimits(t *testing.T, files ...string) []limitRule {
	t.Helper()
	var rules []limitRule
	for i, text := range files {
		parsed, errs := parseLimitsConf([]byte(text))
		if len(errs) > 0 {
			t.Fatalf("file %d: %v", i, errs)
		}
		for _, r := range parsed {
			r.File = []string{"limits.conf", "a.conf", "b.conf"}[i]
			rules = append(rules, r)
		}
	}
	return rules
}

// effectiveView is evaluateLimits' result as item -> "soft/hard" with the
// file:line of each.
func effectiveView(o limitsOutcome) map[string]string {
	out := map[string]string{}
	where := func(s limitSetting) string { return s.From.File + ":" + strconv.Itoa(s.From.Line) }
	for item, s := range o.Soft {
		out[item+".soft"] = s.Shown + " @" + where(s)
	}
	for item, h := range o.Hard {
		out[item+".hard"] = h.Shown + " @" + where(h)
	}
	return out
}

func TestEvaluateLimits(t *testing.T) {
	anyone := limitsMember{Groups: map[string]bool{}, GIDs: map[uint32]bool{}}
	trainer := limitsMember{Name: "trainer", UID: 1001, GID: 1001, HasIDs: true,
		Groups: map[string]bool{"trainer": true, "hpc": true}, GIDs: map[uint32]bool{1001: true, 2000: true}}
	hpcMember := limitsMember{Groups: map[string]bool{"hpc": true}, GIDs: map[uint32]bool{2000: true}}

	tests := []struct {
		name       string
		files      []string
		member     limitsMember
		want       map[string]string
		wantExempt string
	}{
		{
			name:   "later file lowers a wildcard value; soft above hard is capped",
			files:  []string{"* soft memlock unlimited\n* hard memlock unlimited\n", "* hard memlock 65536\n"},
			member: anyone,
			want: map[string]string{
				"memlock.soft": "65536 @a.conf:1",
				"memlock.hard": "65536 @a.conf:1",
			},
		},
		{
			name:   "a group entry beats a later wildcard entry",
			files:  []string{"@hpc - nofile 1048576\n", "* - nofile 65536\n"},
			member: hpcMember,
			want: map[string]string{
				"nofile.soft": "1048576 @limits.conf:1",
				"nofile.hard": "1048576 @limits.conf:1",
			},
		},
		{
			name:   "a user entry beats a later group entry; the wildcard-only member sees neither",
			files:  []string{"trainer soft stack 8192\n", "@hpc soft stack unlimited\n* soft stack 16384\n"},
			member: trainer,
			want:   map[string]string{"stack.soft": "8192 @limits.conf:1"},
		},
		{
			name:   "the wildcard-only member",
			files:  []string{"trainer soft stack 8192\n", "@hpc soft stack unlimited\n* soft stack 16384\n"},
			member: anyone,
			want:   map[string]string{"stack.soft": "16384 @a.conf:2"},
		},
		{
			name: "a '-' line whose soft half is held by a user entry sets no hard value",
			files: []string{
				"trainer soft nofile 4096\n",
				"@hpc - nofile 1048576\n",
			},
			member: trainer,
			want:   map[string]string{"nofile.soft": "4096 @limits.conf:1"},
		},
		{
			name:   "uid ranges count as user entries, @:gid as group entries",
			files:  []string{"1000:1999 hard nproc 4096\n@:2000 hard nproc 8192\n* hard nproc 100\n"},
			member: trainer,
			want:   map[string]string{"nproc.hard": "4096 @limits.conf:1"},
		},
		{
			name:   "gid ranges match the primary group of a known user only",
			files:  []string{"@1000:1500 soft nofile 2048\n"},
			member: hpcMember,
			want:   map[string]string{},
		},
		{
			name:   "maxlogins, priority and % domains set no rlimit",
			files:  []string{"%hpc - maxlogins 4\n* - priority 5\n* soft nice 5\n"},
			member: hpcMember,
			want:   map[string]string{"nice.soft": "5 @limits.conf:3"},
		},
		{
			name:       "an exemption in limits.conf stops everything after it",
			files:      []string{"* hard nofile 1024\n@hpc -\n", "* hard nofile 2048\n"},
			member:     trainer,
			want:       map[string]string{},
			wantExempt: "limits.conf:2",
		},
		{
			name:   "'*' is never exempt",
			files:  []string{"* -\n* hard nofile 1024\n"},
			member: anyone,
			want:   map[string]string{"nofile.hard": "1024 @limits.conf:2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := evaluateLimits(mustParseLimits(t, tt.files...), tt.member)
			if diff := cmp.Diff(tt.want, effectiveView(out)); diff != "" {
				t.Errorf("effective (-want +got):\n%s", diff)
			}
			gotExempt := ""
			if out.ExemptBy != nil {
				gotExempt = out.ExemptBy.File + ":" + strconv.Itoa(out.ExemptBy.Line)
			}
			if gotExempt != tt.wantExempt {
				t.Errorf("exempt by %q, want %q", gotExempt, tt.wantExempt)
			}
		})
	}
}

func TestLimitsMemberFor(t *testing.T) {
	users, errs := parsePasswd([]byte("root:x:0:0:root:/root:/bin/bash\n+nisuser\n# comment\ntrainer:x:1001:1001::/home/trainer:/bin/bash\nbroken:x:abc:1\n"))
	if diff := cmp.Diff([]int{5}, confErrorLines(t, errs)); diff != "" {
		t.Errorf("passwd errors (-want +got):\n%s", diff)
	}
	groups, errs := parseGroup([]byte("trainer:x:1001:\nvideo:x:44:ops,trainer\nhpc:x:2000:trainer\nops:x:1000:\nbad:x:\n"))
	if diff := cmp.Diff([]int{5}, confErrorLines(t, errs)); diff != "" {
		t.Errorf("group errors (-want +got):\n%s", diff)
	}
	tests := []struct {
		domain string
		want   limitsMember
	}{
		{"trainer", limitsMember{Name: "trainer", UID: 1001, GID: 1001, HasIDs: true,
			Groups: map[string]bool{"trainer": true, "video": true, "hpc": true},
			GIDs:   map[uint32]bool{1001: true, 44: true, 2000: true}}},
		{"@hpc", limitsMember{Groups: map[string]bool{"hpc": true}, GIDs: map[uint32]bool{2000: true}}},
		{"ghost", limitsMember{Name: "ghost", Groups: map[string]bool{}, GIDs: map[uint32]bool{}}},
	}
	for _, tt := range tests {
		t.Run(tt.domain, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, limitsMemberFor(tt.domain, users, groups)); diff != "" {
				t.Errorf("member (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCollectLimits(t *testing.T) {
	fsys := fstest.MapFS{
		"etc/security/limits.conf":           confTextFile(ubuntuLimitsConf + "* soft memlock unlimited\n* hard memlock unlimited\n"),
		"etc/security/limits.d/50-site.conf": confTextFile("@hpc - memlock unlimited\n* hard memlock 65536\nops -\n* soft nofile x\n"),
		"etc/security/limits.d/README":       confTextFile("not read\n"),
		"etc/security/limits.d/.hidden.conf": confTextFile("* hard memlock 1\n"),
		"etc/security/limits.d/60-off.conf":  confSymlink("/dev/null"),
		"etc/passwd":                         confTextFile("ops:x:1000:1000::/home/ops:/bin/bash\ntrainer:x:1001:1001::/home/trainer:/bin/bash\n"),
		"etc/group":                          confTextFile("ops:x:1000:\ntrainer:x:1001:\nhpc:x:2000:trainer\n"),
	}
	c := newConfTestCollection(FS(fsys), Options{LimitsDomains: []string{"trainer", "@hpc", "ops", "*", "trainer", "%bad"}}, snapshot.OSRelease{})
	collectLimits(c)
	l := c.snap.Limits
	want := snapshot.Limits{
		Entries: []snapshot.LimitEntry{
			{Domain: "*", Type: "soft", Item: "memlock", Value: "unlimited", Source: snapshot.ParseProvenance("/etc/security/limits.conf:57")},
			{Domain: "*", Type: "hard", Item: "memlock", Value: "unlimited", Source: snapshot.ParseProvenance("/etc/security/limits.conf:58")},
			{Domain: "@hpc", Type: "-", Item: "memlock", Value: "unlimited", Source: snapshot.ParseProvenance("/etc/security/limits.d/50-site.conf:1")},
			{Domain: "*", Type: "hard", Item: "memlock", Value: "65536", Source: snapshot.ParseProvenance("/etc/security/limits.d/50-site.conf:2")},
			{Domain: "ops", Type: "-", Source: snapshot.ParseProvenance("/etc/security/limits.d/50-site.conf:3")},
		},
		Effective: map[string]map[string]snapshot.LimitValue{
			"*":       {"memlock": {Soft: "65536", Hard: "65536"}},
			"@hpc":    {"memlock": {Soft: "unlimited", Hard: "unlimited"}},
			"trainer": {"memlock": {Soft: "unlimited", Hard: "unlimited"}},
			"ops":     {},
		},
		Exempt: map[string]bool{"ops": true},
		Files:  []string{"/etc/security/limits.conf", "/etc/security/limits.d/50-site.conf"},
	}
	if diff := cmp.Diff(want, l); diff != "" {
		t.Errorf("limits (-want +got):\n%s", diff)
	}
	wantSources := map[string]string{
		"limits.effective.*.memlock.soft":       "/etc/security/limits.d/50-site.conf:2",
		"limits.effective.*.memlock.hard":       "/etc/security/limits.d/50-site.conf:2",
		"limits.effective.@hpc.memlock.soft":    "/etc/security/limits.d/50-site.conf:1",
		"limits.effective.@hpc.memlock.hard":    "/etc/security/limits.d/50-site.conf:1",
		"limits.effective.trainer.memlock.soft": "/etc/security/limits.d/50-site.conf:1",
		"limits.effective.trainer.memlock.hard": "/etc/security/limits.d/50-site.conf:1",
		"limits.exempt.ops":                     "/etc/security/limits.d/50-site.conf:3",
	}
	if diff := cmp.Diff(wantSources, sourceTexts(c.snap.Sources)); diff != "" {
		t.Errorf("sources (-want +got):\n%s", diff)
	}
	wantErrs := []snapshot.CollectionError{
		{Collector: "limits", Path: "/etc/security/limits.d/50-site.conf", Reason: `parse error: line 4: bad value "x" for nofile`, Skipped: true},
		{Collector: "limits", Path: "", Reason: `limits domain "%bad": want a user name or @group`},
	}
	if diff := cmp.Diff(wantErrs, c.snap.Errors, cmpopts.SortSlices(func(a, b snapshot.CollectionError) bool { return a.Path < b.Path })); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

func FuzzLimitsConf(f *testing.F) {
	f.Add([]byte(ubuntuLimitsConf))
	f.Add([]byte(rdmaLimitsConf))
	f.Add([]byte("@hpc - nofile 1048576\n* hard memlock 65536\ntrainer -\n1000: soft nproc -5\n@:2000 hard nice -40\n%hpc - maxlogins 4\n"))
	f.Add([]byte("*\tsoft\tcpu\t99999999999999999999999\n@1:2 - stack -\n:5 - rtprio 3 # x\n\r\n"))
	// Linux-PAM 1.3.0's limits.conf as SLES 15 ships it (sles15-node).
	for _, data := range fixtureEntries(f, "etc/security/limits.conf") {
		f.Add(data)
	}
	members := []limitsMember{
		{Groups: map[string]bool{}, GIDs: map[uint32]bool{}},
		{Name: "trainer", UID: 1001, GID: 1001, HasIDs: true, Groups: map[string]bool{"hpc": true}, GIDs: map[uint32]bool{2000: true}},
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rules, errs := parseLimitsConf(data)
		lines := len(confFileLines(data))
		for _, r := range rules {
			if r.Line < 1 || r.Line > lines {
				t.Fatalf("rule line %d outside 1..%d", r.Line, lines)
			}
			if r.Type != strings.ToLower(r.Type) || r.Item != strings.ToLower(r.Item) {
				t.Fatalf("type/item not lower-cased: %+v", r)
			}
			if !r.Exempt && r.Shown == "" {
				t.Fatalf("accepted rule without a value: %+v", r)
			}
		}
		for _, err := range errs {
			var le *confLineError
			if !errors.As(err, &le) || le.Line < 1 || le.Line > lines {
				t.Fatalf("bad error %v (lines %d)", err, lines)
			}
		}
		for _, m := range members {
			out := evaluateLimits(rules, m)
			for item, s := range out.Soft {
				if h, ok := out.Hard[item]; ok && s.Final > h.Final {
					t.Fatalf("%s soft %d above hard %d", item, s.Final, h.Final)
				}
			}
		}
	})
}
