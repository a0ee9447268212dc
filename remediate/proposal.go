// Package remediate turns findings into the narrowest correct change to a
// config repo: the fix a rule attached, placed in the layers that cover
// exactly the affected fleet, applied to a scratch copy, and proven by the
// gate to resolve the findings and introduce nothing.
package remediate

// Proposal is one proven fix for one (rule, fleet) group, ready to be shown
// as a diff or opened as a pull request.
type Proposal struct {
	// Rule and Fleet identify the group; one proposal, one branch, one PR.
	Rule  string `json:"rule"`
	Fleet string `json:"fleet"`
	// Branch is deterministic for (Rule, Fleet), so a rerun finds its own
	// branch and pull request: "fleetaudit/fix/<rule>/<fleet>".
	Branch string `json:"branch"`
	// Base is the branch the pull request targets: the branch the ref the
	// fix was proven at names (HEAD on main names main, origin/main names
	// main); "" when that ref names none (a detached HEAD, a commit, a
	// tag), and a publisher then targets the repository's default branch.
	// BaseCommit is the commit the fix was proven against.
	Base       string `json:"base"`
	BaseCommit string `json:"base_commit"`
	// Title and Body are the pull request's (Body is Markdown: finding,
	// evidence and provenance, blast radius, the gate's proof, rollback).
	Title string `json:"title"`
	Body  string `json:"body"`
	// Files are the repo files the fix writes, whole, after the change.
	Files []FileChange `json:"files"`
	// Diff is the change as a unified diff that `git apply` accepts.
	Diff string `json:"diff"`
	// Fingerprint identifies the change itself (the files' paths and
	// contents): a rerun with the same fingerprint has nothing new to push.
	Fingerprint string `json:"fingerprint"`
	// Hosts are the affected hosts when the proposal came from an audit's
	// findings; empty for a fix of the repo alone.
	Hosts []string `json:"hosts,omitempty"`
}

// FileChange is one file of a Proposal: its path in the git repository
// (slash-separated, from its top level: a config repo in a subdirectory
// has that directory in front) and its whole new content.
type FileChange struct {
	Path    string `json:"path"`
	Content []byte `json:"content"`
	// Mode is the git file mode, "100644" or "100755".
	Mode string `json:"mode"`
}
