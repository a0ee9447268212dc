package docgen

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// userDocs are the Markdown files a user of the repository reads.
func userDocs(t *testing.T) []string {
	t.Helper()
	files := []string{filepath.Join(repoRoot, "README.md")}
	for _, dir := range []string{"docs", "examples", "testdata"} {
		err := filepath.WalkDir(filepath.Join(repoRoot, dir), func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
				files = append(files, p)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return files
}

// The README and docs stand alone: nothing points at the design notes the
// project was built from, which users of the repository do not have.
func TestDocsStandAlone(t *testing.T) {
	for _, f := range userDocs(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			for _, bad := range []string{"shared/", "DESIGN.md", "HAZARDS.md", "STYLE.md"} {
				if strings.Contains(line, bad) {
					t.Errorf("%s:%d refers to %q, which is not in the repository: %s", f, i+1, bad, line)
				}
			}
		}
	}
}

// Code comments do not send contributors to those notes either.
func TestSourcesDoNotCiteDesignNotes(t *testing.T) {
	err := filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == ".git" || name == "bin" || (strings.HasPrefix(name, ".") && p != repoRoot) {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(p) {
		case ".go", ".rego", ".yaml", ".yml", ".sh", ".txt":
		default:
			if d.Name() != "Makefile" && d.Name() != "run" {
				return nil
			}
		}
		if filepath.Base(p) == "links_test.go" && filepath.Base(filepath.Dir(p)) == "docgen" {
			return nil // this file names them to look for them
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(data), "\n") {
			for _, bad := range []string{"shared/DESIGN.md", "shared/HAZARDS.md", "shared/STYLE.md", "../shared"} {
				if strings.Contains(line, bad) {
					t.Errorf("%s:%d cites %q, which is not in the repository (point at docs/ instead)", p, i+1, bad)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

var (
	mdLink  = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	htmlID  = regexp.MustCompile(`<a id="([^"]+)"></a>`)
	heading = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
	// What GitHub drops from a heading to make its anchor.
	slugDrop = regexp.MustCompile("[^a-z0-9 _-]")
)

func anchors(doc string) map[string]bool {
	out := map[string]bool{}
	for _, m := range htmlID.FindAllStringSubmatch(doc, -1) {
		out[m[1]] = true
	}
	for _, m := range heading.FindAllStringSubmatch(doc, -1) {
		slug := slugDrop.ReplaceAllString(strings.ToLower(m[1]), "")
		out[strings.ReplaceAll(slug, " ", "-")] = true
	}
	return out
}

// Every relative link in the README and docs reaches a file of the
// repository, and every #anchor a section of it.
func TestDocLinksResolve(t *testing.T) {
	for _, f := range userDocs(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(data), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := f
			if file != "" {
				path = filepath.Join(filepath.Dir(f), file)
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s: link %s: %v", f, target, err)
				continue
			}
			if anchor == "" {
				continue
			}
			doc, err := os.ReadFile(path)
			if err != nil {
				t.Errorf("%s: link %s: %v", f, target, err)
				continue
			}
			if !anchors(string(doc))[anchor] {
				t.Errorf("%s: link %s: %s has no anchor %q", f, target, path, anchor)
			}
		}
	}
}
