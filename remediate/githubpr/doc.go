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
//     conflict). Through the Git Data API the update of its own branch is
//     a force-push with no compare-and-swap (a person's push in the moment
//     between reading and updating the branch would be lost); through git
//     (Options.Git) it is push --force-with-lease on the head it read, so
//     such a push makes the update fail instead.
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
// Retry.Attempts (git's 5xx and dropped connections too). The token lives
// only in NewClient's transport, which sends it to the API host alone, and
// in git's environment (http.<scheme://host/>.extraHeader, redirects off),
// never in an argument; no error, log line or Result contains it.
//
// # GitHub and Gitea
//
// Branches are read and written one of two ways. GitHub's Git Data API
// (the default) or git over HTTPS (Options.Git; the CLI's --push git, and
// its default for an API URL ending in /api/v1). Pull requests always go
// through the REST API. Checked against Gitea v1.27.3's routes
// (routers/api/v1/api.go) and structs, and end to end against it
// (cmd/fleetaudit TestRemediateGiteaEndToEnd); the httptest fake in this
// package serves every endpoint below as GitHub documents it.
//
//	endpoint (relative to the API base)          Gitea 1.27.3                         handled by
//	GET   /repos/{o}/{r}                         same; clone_url names the git URL    both ways
//	GET   /repos/{o}/{r}/git/ref/heads/{b}       missing (only /git/refs[/...],        git: ls-remote, fetch
//	                                             answering lists)
//	GET   /repos/{o}/{r}/git/commits/{sha}       other shape (message and author       git: cat-file commit
//	                                             under "commit"): every fleetaudit
//	                                             commit would read as a person's
//	POST  /repos/{o}/{r}/git/blobs               missing (Git Data API is read-only)   git: hash-object
//	POST  /repos/{o}/{r}/git/trees               missing                              git: read-tree, update-index, write-tree
//	POST  /repos/{o}/{r}/git/commits             missing                              git: commit-tree
//	POST  /repos/{o}/{r}/git/refs                missing                              git: push --force-with-lease=ref:
//	PATCH /repos/{o}/{r}/git/refs/heads/{b}      missing                              git: push --force-with-lease=ref:old
//	GET   /repos/{o}/{r}/compare/{a}...{b}       no "status", no "files"               git: merge-base, diff --name-only
//	GET   /repos/{o}/{r}/pulls?state=all&head=   ignores head= and per_page= (pages    both: filtered here by head.ref and
//	                                             of 30, Link header)                   head.repo.full_name, up to 100 pages,
//	                                                                                   then the proposal fails
//	GET   /repos/{o}/{r}/pulls?state=open        same paging (only with MaxOpenPRs)    both, as above
//	POST  /repos/{o}/{r}/pulls                   same body (title, head, base, body)   both
//	PATCH /repos/{o}/{r}/pulls/{n}               same (title, body, base)              both
//	POST  /repos/{o}/{r}/issues/{n}/labels       wants {"labels": [...]}, go-github    GitHub only: Options.Labels (the CLI
//	                                             sends a bare list                     sets none)
//	git smart HTTP (info/refs, upload-pack,      same; HTTP Basic with the token as    git way
//	receive-pack)                                password (GitHub: user x-access-token)
//
// Gitea accepts the REST calls' "Authorization: Bearer" token as GitHub does.
// The contents API was not used for Gitea's writes: GitHub's is one file
// per commit and creates no branch, Gitea's multi-file POST /contents has no
// GitHub counterpart, and neither can move a branch with a lease.

package githubpr
