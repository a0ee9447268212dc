// Package githubpr publishes remediate.Proposals as branches and pull
// requests on GitHub (or GitHub Enterprise Server) through go-github v60,
// the way Renovate and Dependabot users expect a bot to behave.
//
// Wiring it into a command:
//
//	gh, err := githubpr.NewClient(ctx, getenv("GITHUB_TOKEN"), apiURL, nil)
//	if err != nil { return err }
//	results, err := githubpr.New(gh, owner, repo, githubpr.Options{
//		MaxOpenPRs: maxOpen, Log: logger,
//	}).Publish(ctx, proposals)
//	// print results (one per proposal, in order), then return err
//
// results has one Result per proposal attempted; err is non-nil only when
// nothing further could succeed (see Publish), and results then holds the
// proposals handled so far, the last one "failed" with the reason.
//
// Per proposal, in this order:
//
//   - The base branch's head; when it is not Proposal.BaseCommit, the
//     commits between them must not touch the proposal's files (its files
//     are whole contents computed at BaseCommit: writing them onto a base
//     that changed them would revert that change), else "failed".
//   - The pull requests whose head is the proposal's branch (open or
//     closed) and the branch itself. A branch whose newest PR was closed
//     unmerged is "skipped-closed" (deleting the branch asks again). A
//     branch whose head commit is not fleetaudit's (one parent, author and
//     committer the bot identity, a "Fleetaudit-Fingerprint:" trailer) is
//     "skipped-human-commit": nothing is pushed over a person's commit.
//   - The branch is (re)made as one commit on the base head only when it
//     does not exist, the fingerprint changed, or the base changed one of
//     the proposal's files since the branch was made (the one way it can
//     conflict). The update of its own branch is a force-push; the Git Data
//     API has no compare-and-swap, so a person's push in the moment between
//     reading and updating the branch would be lost.
//   - The PR is opened (unless MaxOpenPRs open fleetaudit PRs exist:
//     "skipped-cap"), or its title/body edited when they differ. The body
//     ends with a note on how to decline or take over, and a hidden
//     "<!-- fleetaudit-fingerprint: ... -->" marker.
//
// Errors: 401 and 403 stop the run (every later call would fail alike; 403
// says the token needs contents:write and pull_requests:write); 404 names
// the repository and the lack of access; 422 carries GitHub's message. Rate
// limits (primary, secondary, 429) wait for Retry-After or the reset when
// it is within Retry.MaxWait, else stop the run saying when to rerun; 5xx,
// 202 and dropped connections are retried with doubling backoff, all within
// Retry.Attempts. The token lives only in NewClient's transport, which
// sends it to the API host alone; no error, log line or Result contains it.
//
// Endpoints used (paths relative to the API base), and what Gitea (for an
// end-to-end test through --github-api .../api/v1) is known or expected to
// lack. The Gitea notes are from its API documentation as remembered, not
// yet checked against a running Gitea 1.27: check each before relying on it.
//
//	GET   /repos/{o}/{r}                              Gitea: same
//	GET   /repos/{o}/{r}/git/ref/heads/{branch}       Gitea: only the plural /git/refs/{ref}, which answers a list;
//	                                                   /branches/{branch} gives the head commit instead
//	GET   /repos/{o}/{r}/git/commits/{sha}            Gitea: same path (read-only)
//	POST  /repos/{o}/{r}/git/blobs                    Gitea: none (Git Data API is read-only)
//	POST  /repos/{o}/{r}/git/trees                    Gitea: none
//	POST  /repos/{o}/{r}/git/commits                  Gitea: none
//	POST  /repos/{o}/{r}/git/refs                     Gitea: none; POST /branches creates a branch from a ref
//	PATCH /repos/{o}/{r}/git/refs/heads/{branch}      Gitea: none (no force-update of a branch);
//	                                                   commits are written with POST /contents (ChangeFiles,
//	                                                   with new_branch), which cannot replace a branch's history
//	GET   /repos/{o}/{r}/compare/{base}...{head}      Gitea: /compare/{basehead} in recent versions; check the
//	                                                   "files" member
//	GET   /repos/{o}/{r}/pulls?state=all&head={o}:{b} Gitea: ignores head= (the list is filtered here by
//	                                                   head.ref and head.repo.full_name, so it still works,
//	                                                   paged); GET /pulls/{base}/{head} finds one PR
//	GET   /repos/{o}/{r}/pulls?state=open             (only with MaxOpenPRs) Gitea: same
//	POST  /repos/{o}/{r}/pulls                        Gitea: same body (title, head, base, body)
//	PATCH /repos/{o}/{r}/pulls/{n}                    Gitea: same (title, body, base)
//	POST  /repos/{o}/{r}/issues/{n}/labels            (only with Labels) GitHub takes a JSON list of names;
//	                                                   Gitea wants {"labels": [...]} of ids or names
//
// So against Gitea the branch-writing half needs another path (the
// contents API, a delete-and-recreate of the branch for a changed fix);
// the pull request half is close to GitHub's. The httptest contract tests
// in this package cover the GitHub flow either way.
package githubpr
