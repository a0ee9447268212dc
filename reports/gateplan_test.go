package reports

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSplitComment(t *testing.T) {
	short := "### plan\n\nall fine\n"
	if got, cut := SplitComment(short, 100); cut || got != short {
		t.Errorf("a report that fits was changed: %q cut %v", got, cut)
	}
	var b strings.Builder
	b.WriteString("### plan\n\n")
	for i := 0; b.Len() < 200_000; i++ {
		b.WriteString("| gpu-a-[001-512] (512 hosts) | critical | `hugetlb-cma-on-gpu` | é |\n")
		if i%500 == 0 {
			b.WriteString("\n<details><summary>more</summary>\n\n- unchanged\n- unchanged\n")
			b.WriteString(strings.Repeat("- x\n", 2000))
			b.WriteString("</details>\n")
		}
	}
	md := b.String()
	got, cut := SplitComment(md, CommentLimit)
	if !cut {
		t.Fatal("a 200 kB report was not cut")
	}
	if n := utf8.RuneCountInString(got); n > CommentLimit {
		t.Errorf("comment of %d characters, over %d", n, CommentLimit)
	}
	if !strings.Contains(got, "job summary") {
		t.Errorf("the comment does not say where the rest is")
	}
	body := strings.TrimSuffix(got, got[strings.LastIndex(got, "\n\n> **The plan"):])
	if !strings.HasPrefix(md, body) {
		t.Errorf("the comment is not the report's beginning")
	}
	if strings.Count(body, "<details>") != strings.Count(body, "</details>") {
		t.Errorf("the cut leaves a <details> block open")
	}
	if !utf8.ValidString(got) {
		t.Errorf("the cut splits a character")
	}
}
