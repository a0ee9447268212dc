package githubpr

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/google/go-github/v60/github"

	"github.com/fleetaudit/fleetaudit/remediate"
)

// BranchPrefix starts every branch fleetaudit owns; MaxOpenPRs counts the
// open pull requests whose head starts with it.
const BranchPrefix = "fleetaudit/fix/"

// FingerprintTrailer is the commit trailer that marks fleetaudit's commit
// and names the fix it carries.
const FingerprintTrailer = "Fleetaudit-Fingerprint"

// Actions a Result reports.
const (
	ActionCreated            = "created"
	ActionUpdated            = "updated"
	ActionUnchanged          = "unchanged"
	ActionSkippedClosed      = "skipped-closed"
	ActionSkippedHumanCommit = "skipped-human-commit"
	ActionSkippedCap         = "skipped-cap"
	ActionFailed             = "failed"
)

// Identity is a git author and committer.
type Identity struct {
	Name, Email string
}

// DefaultIdentity authors fleetaudit's commits unless Options says otherwise.
var DefaultIdentity = Identity{Name: "fleetaudit", Email: "fleetaudit@users.noreply.github.com"}

// Retry bounds how a call that failed for a reason that may pass (a rate
// limit, a 5xx, a dropped connection) is tried again.
type Retry struct {
	// Attempts is how many times a call is made in all (0 = 3).
	Attempts int
	// Backoff is the first wait after a 5xx or a dropped connection; it
	// doubles per attempt (0 = 1s).
	Backoff time.Duration
	// MaxWait is the longest wait a rate limit may ask for; a longer one
	// fails the run at once, naming when the limit resets (0 = 1m).
	MaxWait time.Duration
	// Sleep waits d or until ctx is done (nil = a timer); tests inject one.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Options tune a Publisher; the zero value is usable.
type Options struct {
	// MaxOpenPRs caps the open pull requests whose head branch starts with
	// BranchPrefix: at the cap no new one is opened ("skipped-cap"), while
	// existing ones are still updated. 0 is no cap.
	MaxOpenPRs int
	// Log receives progress and retries; nil discards them.
	Log *slog.Logger
	// Identity authors and commits fleetaudit's commits (zero = DefaultIdentity).
	Identity Identity
	// Retry bounds retries of calls that may succeed later.
	Retry Retry
	// Labels are added to a pull request when it is opened.
	Labels []string
	// Git, when set, reads and writes branches with git over HTTPS instead
	// of the Git Data API (which Gitea and Forgejo cannot write); pull
	// requests still go through the REST API.
	Git *GitTransport
}

// Result is what happened to one Proposal.
type Result struct {
	Rule   string `json:"rule"`
	Fleet  string `json:"fleet"`
	Branch string `json:"branch"`
	// Action is one of the Action* constants.
	Action string `json:"action"`
	// PR and URL name the pull request, when there is one.
	PR  int    `json:"pr,omitempty"`
	URL string `json:"url,omitempty"`
	// Reason says why, for every action but "created", and what a person
	// can do about a skip.
	Reason string `json:"reason,omitempty"`
}

// Publisher opens and maintains one pull request per Proposal in one
// repository.
type Publisher struct {
	gh          *github.Client
	owner, repo string
	opts        Options
	log         *slog.Logger
	br          branches // set by Publish for its run
	// secrets are what no error or log line may hold: the token, and its
	// encodings git sends.
	secrets []string
}

// New returns a Publisher for owner/repo through client (see NewClient).
func New(client *github.Client, owner, repo string, opts Options) *Publisher {
	if opts.Identity == (Identity{}) {
		opts.Identity = DefaultIdentity
	}
	if opts.Retry.Attempts <= 0 {
		opts.Retry.Attempts = 3
	}
	if opts.Retry.Backoff <= 0 {
		opts.Retry.Backoff = time.Second
	}
	if opts.Retry.MaxWait <= 0 {
		opts.Retry.MaxWait = time.Minute
	}
	if opts.Retry.Sleep == nil {
		opts.Retry.Sleep = sleepCtx
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Publisher{gh: client, owner: owner, repo: repo, opts: opts, log: log}
	for _, tok := range []string{tokenOf(client), gitToken(opts.Git)} {
		if tok != "" {
			p.secrets = append(p.secrets, tok, base64.StdEncoding.EncodeToString([]byte("x-access-token:"+tok)))
		}
	}
	return p
}

// Publish pushes each proposal to its branch and opens or updates its pull
// request, one Result per proposal in order. A proposal that fails is a
// Result with Action "failed"; Publish stops early, returning the results
// so far and an error, only when no further call can succeed: ctx is done,
// the token is refused (401) or lacks permission (403), the repository is
// not there, or a rate limit lasts longer than Retry.MaxWait.
//
// No error, Result or log line holds the token, even where the API's answer
// echoes it.
func (p *Publisher) Publish(ctx context.Context, proposals []remediate.Proposal) ([]Result, error) {
	results, err := p.publish(ctx, proposals)
	for i := range results {
		results[i].Reason = redact(results[i].Reason, p.secrets)
	}
	return results, redactErr(err, p.secrets)
}

func (p *Publisher) publish(ctx context.Context, proposals []remediate.Proposal) ([]Result, error) {
	results := make([]Result, 0, len(proposals))
	if len(proposals) == 0 {
		return results, nil
	}
	repo, err := call(ctx, p, "get repository", func() (*github.Repository, *github.Response, error) {
		return p.gh.Repositories.Get(ctx, p.owner, p.repo)
	})
	if err != nil {
		return results, err
	}
	if p.opts.Git != nil {
		g, err := newGitBranches(ctx, p, repo.GetCloneURL())
		if err != nil {
			return results, err
		}
		defer g.close()
		p.br = g
	} else {
		p.br = apiBranches{p}
	}
	open := -1
	if p.opts.MaxOpenPRs > 0 {
		n, err := p.countOpen(ctx)
		if err != nil {
			return results, err
		}
		open = n
	}
	for _, prop := range proposals {
		if err := ctx.Err(); err != nil {
			return results, err
		}
		r := Result{Rule: prop.Rule, Fleet: prop.Fleet, Branch: prop.Branch}
		if prop.Base == "" {
			// Proven at a commit no branch names: the default branch, which
			// checkProvenBase then checks holds that commit.
			prop.Base = repo.GetDefaultBranch()
		}
		err := p.publishOne(ctx, prop, &r, &open)
		if err != nil {
			r.Action, r.Reason = ActionFailed, redact(err.Error(), p.secrets)
		}
		p.log.Info("github pull request", "rule", r.Rule, "fleet", r.Fleet, "branch", r.Branch, "action", r.Action, "pr", r.PR, "reason", r.Reason)
		results = append(results, r)
		if err != nil && isFatal(ctx, err) {
			return results, err
		}
	}
	return results, nil
}

func (p *Publisher) publishOne(ctx context.Context, prop remediate.Proposal, r *Result, open *int) error {
	if err := validate(prop); err != nil {
		return err
	}
	base, err := p.br.head(ctx, prop.Base)
	if err != nil {
		return err
	}
	if base == "" {
		hint := ""
		if _, api := p.br.(apiBranches); api && strings.HasSuffix(p.gh.BaseURL.Path, "/api/v1/") {
			// Gitea and Forgejo have no GET /git/ref/: every branch looks missing.
			hint = " (a Gitea or Forgejo API answers no Git Data API ref: write branches with git, --push git)"
		}
		return fmt.Errorf("base branch %q not found in %s/%s%s", prop.Base, p.owner, p.repo, hint)
	}
	if err := p.checkProvenBase(ctx, prop, base); err != nil {
		return err
	}
	prs, err := p.listPRs(ctx, prop.Branch)
	if err != nil {
		return err
	}
	var pr *github.PullRequest
	if len(prs) > 0 && prs[0].GetState() == "open" {
		pr = prs[0]
	}
	head, err := p.br.head(ctx, prop.Branch)
	if err != nil {
		return err
	}
	push := true
	if head != "" {
		// A closed PR with its branch still there is a "no"; deleting the
		// branch is how to ask again, so without a branch it is ignored.
		if pr == nil && len(prs) > 0 && prs[0].GetMergedAt().IsZero() {
			r.PR, r.URL = prs[0].GetNumber(), prs[0].GetHTMLURL()
			r.Action = ActionSkippedClosed
			r.Reason = fmt.Sprintf("pull request #%d was closed without merging; fleetaudit does not reopen it. To ask for this fix again, delete the branch %s", prs[0].GetNumber(), prop.Branch)
			return nil
		}
		c, err := p.br.commit(ctx, head)
		if err != nil {
			return err
		}
		fp, ours := p.ownCommit(c)
		if !ours {
			if pr != nil {
				r.PR, r.URL = pr.GetNumber(), pr.GetHTMLURL()
			}
			r.Action = ActionSkippedHumanCommit
			r.Reason = fmt.Sprintf("the head of %s (commit %s) was not made by fleetaudit; it never pushes over a person's commit. To let fleetaudit take over again, close the pull request and delete the branch %s", prop.Branch, short(head), prop.Branch)
			return nil
		}
		if fp == prop.Fingerprint {
			parent := c.Parents[0]
			stale, err := p.baseTouched(ctx, parent, base, prop)
			if err != nil {
				return err
			}
			push = stale != ""
			if push {
				r.Reason = fmt.Sprintf("base %s changed %s since the branch was made; recreated on %s", prop.Base, stale, short(base))
			}
		} else {
			r.Reason = "the fix changed; branch recreated on " + prop.Base + " " + short(base)
		}
	}
	if pr == nil && *open >= 0 && *open >= p.opts.MaxOpenPRs {
		r.Action = ActionSkippedCap
		r.Reason = fmt.Sprintf("%d fleetaudit pull requests are open, the cap (max open PRs) is %d; merge or close some and rerun", *open, p.opts.MaxOpenPRs)
		return nil
	}
	if push {
		if err := p.br.write(ctx, prop, base, head); err != nil {
			return err
		}
	}
	body := prBody(prop)
	if pr == nil {
		created, err := p.createPR(ctx, prop, body)
		if err != nil {
			return err
		}
		if *open >= 0 {
			*open++
		}
		r.PR, r.URL, r.Action = created.GetNumber(), created.GetHTMLURL(), ActionCreated
		if len(p.opts.Labels) > 0 {
			if _, err := call(ctx, p, "add labels", func() ([]*github.Label, *github.Response, error) {
				return p.gh.Issues.AddLabelsToIssue(ctx, p.owner, p.repo, created.GetNumber(), p.opts.Labels)
			}); err != nil {
				r.Reason = "labels not added: " + err.Error()
			}
		}
		return nil
	}
	r.PR, r.URL = pr.GetNumber(), pr.GetHTMLURL()
	if !push && pr.GetTitle() == prop.Title && pr.GetBody() == body && pr.GetBase().GetRef() == prop.Base {
		r.Action, r.Reason = ActionUnchanged, "branch and pull request already carry this fix"
		return nil
	}
	if _, err := call(ctx, p, "update pull request", func() (*github.PullRequest, *github.Response, error) {
		return p.gh.PullRequests.Edit(ctx, p.owner, p.repo, pr.GetNumber(), &github.PullRequest{
			Title: github.String(prop.Title), Body: github.String(body), Base: &github.PullRequestBranch{Ref: github.String(prop.Base)},
		})
	}); err != nil {
		return err
	}
	r.Action = ActionUpdated
	if !push {
		r.Reason = "pull request text updated; branch unchanged"
	}
	return nil
}

func validate(prop remediate.Proposal) error {
	switch {
	case !strings.HasPrefix(prop.Branch, BranchPrefix) || strings.ContainsAny(prop.Branch, " ~^:?*[\\") || strings.Contains(prop.Branch, ".."):
		return fmt.Errorf("branch %q: not a fleetaudit branch name (%s<rule>/<fleet>)", prop.Branch, BranchPrefix)
	case prop.Base == "":
		return errors.New("proposal has no base branch and the repository names no default branch")
	case prop.Fingerprint == "" || strings.ContainsAny(prop.Fingerprint, "\r\n"):
		return errors.New("proposal has no fingerprint (one line)")
	case len(prop.Files) == 0:
		return errors.New("proposal changes no file")
	}
	for _, f := range prop.Files {
		if f.Path == "" || path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path || f.Path == ".git" || strings.HasPrefix(f.Path, "../") || f.Path == ".." || strings.HasPrefix(f.Path, ".git/") {
			return fmt.Errorf("file %q: not a clean path inside the repository", f.Path)
		}
		switch f.Mode {
		case "", "100644", "100755":
		default:
			return fmt.Errorf("file %s: mode %q is not 100644 or 100755", f.Path, f.Mode)
		}
	}
	return nil
}

// checkProvenBase refuses to write the proposal's whole files onto a base
// that changed one of them after the proof: that would revert the change.
func (p *Publisher) checkProvenBase(ctx context.Context, prop remediate.Proposal, base string) error {
	if prop.BaseCommit == "" || prop.BaseCommit == base {
		return nil
	}
	cmp, err := p.br.compare(ctx, "compare proven base", prop.BaseCommit, base)
	if err != nil {
		if errors.Is(err, errUnknownCommit) {
			return fmt.Errorf("the fix was proven against commit %s, which %s/%s does not have: push it or rerun remediate on a checkout of %s", short(prop.BaseCommit), p.owner, p.repo, prop.Base)
		}
		return err
	}
	if st := cmp.status; st != "ahead" && st != "identical" {
		return fmt.Errorf("the fix was proven against commit %s, which is not on %s (%s): rerun remediate on a fresh checkout of %s", short(prop.BaseCommit), prop.Base, st, prop.Base)
	}
	if f := touched(cmp, prop); f != "" {
		return fmt.Errorf("%s changed %s since commit %s the fix was proven against: rerun remediate on a fresh checkout of %s", prop.Base, f, short(prop.BaseCommit), prop.Base)
	}
	return nil
}

// baseTouched says which of the proposal's files base changed since from
// ("" for none): the one way a branch with the same fix goes stale.
func (p *Publisher) baseTouched(ctx context.Context, from, base string, prop remediate.Proposal) (string, error) {
	if from == base {
		return "", nil
	}
	cmp, err := p.br.compare(ctx, "compare branch base", from, base)
	if err != nil {
		if errors.Is(err, errUnknownCommit) {
			return "the branch's base commit (gone from " + prop.Base + ")", nil
		}
		return "", err
	}
	if st := cmp.status; st != "ahead" && st != "identical" {
		return "history (" + st + ")", nil
	}
	return touched(cmp, prop), nil
}

func touched(cmp comparison, prop remediate.Proposal) string {
	want := map[string]bool{}
	for _, f := range prop.Files {
		want[f.Path] = true
	}
	for _, f := range cmp.files {
		if want[f] {
			return f
		}
	}
	if cmp.truncated {
		return "more files than the compare API lists"
	}
	return ""
}

// ownCommit reports the fingerprint of a commit fleetaudit made: one
// parent, authored and committed by its identity, with the trailer.
func (p *Publisher) ownCommit(c commitInfo) (string, bool) {
	id := p.opts.Identity
	if len(c.Parents) != 1 || c.AuthorEmail != id.Email || c.CommitterEmail != id.Email {
		return "", false
	}
	fp := trailer(c.Message)
	return fp, fp != ""
}

func trailer(msg string) string {
	lines := strings.Split(strings.TrimRight(msg, "\n"), "\n")
	for i := len(lines) - 1; i >= 0 && strings.TrimSpace(lines[i]) != ""; i-- {
		if v, ok := strings.CutPrefix(lines[i], FingerprintTrailer+": "); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func commitMessage(prop remediate.Proposal) string {
	title, _, _ := strings.Cut(prop.Title, "\n")
	if title == "" {
		title = "fleetaudit: fix " + prop.Rule + " for fleet " + prop.Fleet
	}
	return fmt.Sprintf("%s\n\nProposed by fleetaudit for rule %s, fleet %s.\n\n%s: %s\n", title, prop.Rule, prop.Fleet, FingerprintTrailer, prop.Fingerprint)
}

func prBody(prop remediate.Proposal) string {
	return strings.TrimRight(prop.Body, "\n") + fmt.Sprintf(`

---
<sub>Opened by fleetaudit. A rerun updates this branch and pull request. A commit you push to `+"`%s`"+` makes fleetaudit leave the branch alone; closing this pull request without merging declines the fix (delete the branch to ask for it again).</sub>

<!-- fleetaudit-fingerprint: %s -->
`, prop.Branch, prop.Fingerprint)
}

func (p *Publisher) createPR(ctx context.Context, prop remediate.Proposal, body string) (*github.PullRequest, error) {
	pr, err := call(ctx, p, "create pull request", func() (*github.PullRequest, *github.Response, error) {
		return p.gh.PullRequests.Create(ctx, p.owner, p.repo, &github.NewPullRequest{
			Title: github.String(prop.Title), Head: github.String(prop.Branch), Base: github.String(prop.Base), Body: github.String(body),
		})
	})
	if err != nil && isStatus(err, 422) {
		// A retried create that had landed shows up in the list now.
		if prs, lerr := p.listPRs(ctx, prop.Branch); lerr == nil && len(prs) > 0 && prs[0].GetState() == "open" {
			return prs[0], nil
		}
	}
	return pr, err
}

// maxPages bounds the pages of pull requests read for one question: GitHub
// filters by head, so one page is the rule; Gitea ignores that filter and
// pages by its own size (30 by default), so this is some 3000 there.
const maxPages = 100

// listPRs returns the pull requests, open or closed, whose head is branch
// in this repository, newest first.
func (p *Publisher) listPRs(ctx context.Context, branch string) ([]*github.PullRequest, error) {
	var out []*github.PullRequest
	opt := &github.PullRequestListOptions{State: "all", Head: p.owner + ":" + branch, ListOptions: github.ListOptions{PerPage: 100}}
	for page := 0; ; page++ {
		if page == maxPages {
			// Not knowing whether a PR exists could open a duplicate or reopen a "no".
			return nil, fmt.Errorf("more than %d pages of pull requests to look through for branch %s (the server ignores the head filter): cannot tell whether fleetaudit already opened one", maxPages, branch)
		}
		prs, err := call(ctx, p, "list pull requests", func() ([]*github.PullRequest, *github.Response, error) {
			prs, resp, err := p.gh.PullRequests.List(ctx, p.owner, p.repo, opt)
			if err == nil {
				opt.Page = resp.NextPage
			}
			return prs, resp, err
		})
		if err != nil {
			return nil, err
		}
		for _, pr := range prs {
			// Servers that ignore the head filter (Gitea) list them all.
			if pr.GetHead().GetRef() == branch && strings.EqualFold(pr.GetHead().GetRepo().GetFullName(), p.owner+"/"+p.repo) {
				out = append(out, pr)
			}
		}
		if opt.Page == 0 {
			break
		}
	}
	sort.Slice(out, func(i, j int) bool {
		// An open one first, then newest first.
		oi, oj := out[i].GetState() == "open", out[j].GetState() == "open"
		if oi != oj {
			return oi
		}
		return out[i].GetNumber() > out[j].GetNumber()
	})
	return out, nil
}

func (p *Publisher) countOpen(ctx context.Context) (int, error) {
	n := 0
	opt := &github.PullRequestListOptions{State: "open", ListOptions: github.ListOptions{PerPage: 100}}
	for page := 0; ; page++ {
		if page == maxPages {
			return 0, fmt.Errorf("more than %d pages of open pull requests: cannot count fleetaudit's against the cap", maxPages)
		}
		prs, err := call(ctx, p, "list open pull requests", func() ([]*github.PullRequest, *github.Response, error) {
			prs, resp, err := p.gh.PullRequests.List(ctx, p.owner, p.repo, opt)
			if err == nil {
				opt.Page = resp.NextPage
			}
			return prs, resp, err
		})
		if err != nil {
			return 0, err
		}
		for _, pr := range prs {
			if strings.HasPrefix(pr.GetHead().GetRef(), BranchPrefix) && strings.EqualFold(pr.GetHead().GetRepo().GetFullName(), p.owner+"/"+p.repo) {
				n++
			}
		}
		if opt.Page == 0 {
			break
		}
	}
	return n, nil
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

func gitToken(t *GitTransport) string {
	if t == nil {
		return ""
	}
	return t.Token
}
