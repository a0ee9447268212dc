package collectors

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

// familyDoc is the snapshot as JSON members, sources and errors left out.
func familyDoc(t *testing.T, s *snapshot.Snapshot) map[string]any {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"sources", "errors", "schema", "host", "collected_at", "source"} {
		delete(doc, k)
	}
	return doc
}

// changed lists the paths where a and b differ, as deep as both are objects.
func changed(prefix string, a, b any) []string {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if !aok || !bok {
		if reflect.DeepEqual(a, b) {
			return nil
		}
		return []string{prefix}
	}
	var out []string
	keys := map[string]bool{}
	for k := range am {
		keys[k] = true
	}
	for k := range bm {
		keys[k] = true
	}
	for k := range keys {
		p := k
		if prefix != "" {
			p = prefix + "." + k
		}
		out = append(out, changed(p, am[k], bm[k])...)
	}
	return out
}

// onOrBelow reports whether fact lies on or below one of paths ("*" in a
// path matches any one member).
func onOrBelow(fact string, paths []string) bool {
	f := strings.Split(fact, ".")
	for _, p := range paths {
		q := strings.Split(p, ".")
		if len(q) > len(f) {
			continue
		}
		ok := true
		for i := range q {
			if q[i] != "*" && q[i] != f[i] {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// recordingSource notes each file a collector opens ("/etc/x") and each
// directory it lists ("/etc/x.d/").
type recordingSource struct {
	Source
	opened []string
}

func (r *recordingSource) Open(name string) (fs.File, error) {
	r.opened = append(r.opened, "/"+name)
	return r.Source.Open(name)
}

func (r *recordingSource) ReadDir(name string) ([]fs.DirEntry, error) {
	r.opened = append(r.opened, strings.TrimSuffix("/"+name, "/.")+"/")
	return r.Source.ReadDir(name)
}

// Each family writes only the facts snapshot.FamilyWrites gives it,
// records provenance only for them, files its errors under its own name
// (which coverage maps to those facts), and opens only what its reads
// declare. Run on every fixture host, family by family.
func TestFamiliesWriteWhatTheyDeclare(t *testing.T) {
	hosts, err := os.ReadDir(filepath.Join("..", "testdata", "hosts"))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hosts {
		if !h.IsDir() {
			continue
		}
		root := filepath.Join("..", "testdata", "hosts", h.Name())
		rec := &recordingSource{Source: Dir(root)}
		c := &collection{ctx: context.Background(), src: rec, snap: snapshot.New("test"), opts: Options{MaxFileSize: DefaultMaxFileSize}}
		for _, f := range families {
			rec.opened = nil
			before := familyDoc(t, c.snap)
			nerr := len(c.snap.Errors)
			oldSources := map[string]snapshot.Provenance{}
			for k, v := range c.snap.Sources {
				oldSources[k] = v
			}
			c.runFamily(f)
			for _, p := range changed("", before, familyDoc(t, c.snap)) {
				if !onOrBelow(p, f.writes()) {
					t.Errorf("%s: family %s wrote %s, which it does not declare (%q)", h.Name(), f.name, p, f.writes())
				}
			}
			for k, v := range c.snap.Sources {
				if old, ok := oldSources[k]; (!ok || !reflect.DeepEqual(old, v)) && !onOrBelow(k, f.writes()) {
					t.Errorf("%s: family %s recorded the source of %s, which it does not declare (%q)", h.Name(), f.name, k, f.writes())
				}
			}
			for _, name := range rec.opened {
				if !f.readsPath(name) {
					t.Errorf("%s: family %s read %s, which it does not declare", h.Name(), f.name, name)
				}
			}
			for _, e := range c.snap.Errors[nerr:] {
				if e.Collector != f.name {
					t.Errorf("%s: family %s filed an error under %q: %+v", h.Name(), f.name, e.Collector, e)
				}
			}
		}
	}
}

// The families an image skips are derived from what they write: those that
// write nothing but running state, the set Collect skipped by name before.
func TestRunningFamiliesDerived(t *testing.T) {
	var got []string
	for _, f := range Families() {
		if f.Running {
			got = append(got, f.Name)
		}
	}
	// kernel writes an image's installed kernels too.
	want := []string{"memory", "rdma", "iommu", "pci", "net", "dmi", "processes"}
	if !slices.Equal(got, want) {
		t.Errorf("running families %q, want %q", got, want)
	}
	var names []string
	for _, f := range families {
		names = append(names, f.name)
		if len(f.writes()) == 0 {
			t.Errorf("family %s writes nothing: add it to snapshot's familyWrites", f.name)
		}
		if f.name == snapshot.CollectorSource || f.name == snapshot.CollectorSnapshot {
			t.Errorf("family %q takes a name coverage reserves", f.name)
		}
		for _, w := range f.writes() {
			if p := strings.Split(w, "."); !snapshot.IsSection(p[0]) {
				t.Errorf("family %s writes %s, in no snapshot section", f.name, w)
			}
		}
	}
	slices.Sort(names)
	if got := snapshot.FamilyNames(); !slices.Equal(got, names) {
		t.Errorf("snapshot.FamilyNames() = %q, families %q", got, names)
	}
}

// The boot family lists EFI/systemd on a boot partition (systemd-boot's
// binary as evidence), which no fixture host has: declared all the same.
func TestBootFamilyDeclaresSdBootBinaryDir(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "boot", "efi", "EFI", "systemd")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "systemd-bootx64.efi"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	rec := &recordingSource{Source: Dir(root)}
	c := &collection{ctx: context.Background(), src: rec, snap: snapshot.New("test"), opts: Options{MaxFileSize: DefaultMaxFileSize}}
	i := slices.IndexFunc(families, func(f family) bool { return f.name == "boot" })
	c.runFamily(families[i])
	if !slices.Contains(rec.opened, "/boot/efi/EFI/systemd/") {
		t.Fatalf("boot did not list /boot/efi/EFI/systemd: %q", rec.opened)
	}
	for _, name := range rec.opened {
		if !families[i].readsPath(name) {
			t.Errorf("boot read %s, which it does not declare", name)
		}
	}
}
