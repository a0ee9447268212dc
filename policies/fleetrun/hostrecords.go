package fleetrun

import (
	"iter"
	"strings"
	"sync"
)

// hostRecord is what a run keeps of one host after evaluating it: its
// name and indexes into what hosts share (its fleet, the directory of its
// snapshot file, the evaluation's outcome). The rest of its HostRun is its
// template's.
type hostRecord struct {
	name string
	// tmpl is 1 + the index of the host's template in hostNames.tmpls;
	// 0 when the host was not evaluated.
	tmpl int32
	// fleet indexes hostNames.fleets.
	fleet int32
	// file >= 0 indexes hostNames.dirs: the file is that prefix + host +
	// ".json", as a snapshot directory names its files. Else the file is
	// hostNames.files[-file-1].
	file int32
	// group is 1 + the index of the host's fleet-wide group in
	// Audit.groups; 0 for none.
	group int32
}

// hostNames holds what host records point into. Workers add to it at
// once, under its lock; records are read only once the workers are done.
type hostNames struct {
	mu     sync.Mutex
	tmpls  []*template
	fleets []string
	dirs   []string
	files  []string
	// fleetIDs and dirIDs index fleets and dirs.
	fleetIDs, dirIDs map[string]int32
}

const snapshotExt = ".json"

// record makes host run's record, interning its fleet, file and template.
func (n *hostNames) record(run HostRun, t *template) hostRecord {
	r := hostRecord{name: run.Host, tmpl: n.template(t), fleet: n.intern(run.Fleet, &n.fleetIDs, &n.fleets)}
	if dir, ok := fileDir(run.File, run.Host); ok {
		r.file = n.intern(dir, &n.dirIDs, &n.dirs)
		return r
	}
	n.mu.Lock()
	n.files = append(n.files, run.File)
	r.file = -int32(len(n.files))
	n.mu.Unlock()
	return r
}

// template is t's index + 1 in n.tmpls (0 for nil), adding it when new.
func (n *hostNames) template(t *template) int32 {
	if t == nil {
		return 0
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	// A template of another run's names (Audit.Append) is added anew.
	if t.id == 0 || int(t.id) > len(n.tmpls) || n.tmpls[t.id-1] != t {
		n.tmpls = append(n.tmpls, t)
		t.id = int32(len(n.tmpls))
	}
	return t.id
}

func (n *hostNames) intern(s string, ids *map[string]int32, list *[]string) int32 {
	n.mu.Lock()
	defer n.mu.Unlock()
	if id, ok := (*ids)[s]; ok {
		return id
	}
	if *ids == nil {
		*ids = map[string]int32{}
	}
	id := int32(len(*list))
	*list = append(*list, s)
	(*ids)[s] = id
	return id
}

// fileDir returns the prefix of file before host + ".json", when file is
// named so and the prefix is a directory ("" or ending in a separator).
func fileDir(file, host string) (string, bool) {
	dir, ok := strings.CutSuffix(file, snapshotExt)
	if !ok || host == "" {
		return "", false
	}
	dir, ok = strings.CutSuffix(dir, host)
	if !ok || (dir != "" && !strings.HasSuffix(dir, "/")) {
		return "", false
	}
	return dir, true
}

// run is the HostRun of record r.
func (n *hostNames) run(r *hostRecord) HostRun {
	h := HostRun{Host: r.name, Fleet: n.fleets[r.fleet]}
	if r.file >= 0 {
		h.File = n.dirs[r.file] + h.Host + snapshotExt
	} else {
		h.File = n.files[-r.file-1]
	}
	if t := n.tmpl(r); t != nil {
		h.Unread, h.Skipped, h.TimedOut, h.Image, h.PodsUnread = t.unread, t.skipped, t.timedOut, t.image, t.podsUnread
	}
	return h
}

// tmpl is r's template, or nil.
func (n *hostNames) tmpl(r *hostRecord) *template {
	if r.tmpl == 0 {
		return nil
	}
	return n.tmpls[r.tmpl-1]
}

// Host is host i's record, in the order the inputs came.
func (a *Audit) Host(i int) HostRun {
	return a.names.run(&a.hosts[i])
}

// Hosts yields each host's record in input order. Each is made as it is
// yielded: a large fleet's records are never all held as HostRuns.
func (a *Audit) Hosts() iter.Seq[HostRun] {
	return func(yield func(HostRun) bool) {
		for i := range a.hosts {
			if !yield(a.names.run(&a.hosts[i])) {
				return
			}
		}
	}
}

// newAudit makes an Audit with room for hint host records.
func newAudit(hint int) *Audit {
	return &Audit{names: &hostNames{}, hosts: make([]hostRecord, hint)}
}

func (a *Audit) host(i int32) string      { return a.hosts[i].name }
func (a *Audit) sameHost(i, j int32) bool { return a.hosts[i].name == a.hosts[j].name }
func (a *Audit) compareHosts(i, j int32) int {
	return strings.Compare(a.hosts[i].name, a.hosts[j].name)
}

// fleet and tmpl read host i's record.
func (a *Audit) fleet(i int32) string   { return a.names.fleets[a.hosts[i].fleet] }
func (a *Audit) tmpl(i int32) *template { return a.names.tmpl(&a.hosts[i]) }
