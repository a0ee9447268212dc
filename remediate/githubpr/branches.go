package githubpr

import (
	"context"
	"encoding/base64"
	"errors"

	"github.com/google/go-github/v60/github"

	"github.com/fleetaudit/fleetaudit/remediate"
)

// branches is how a Publisher reads and writes branches: GitHub's Git Data
// API (apiBranches) or git itself over HTTPS (gitBranches), which works on
// GitHub, Gitea and Forgejo alike.
type branches interface {
	// head is the commit branch points at, "" when there is no such branch.
	head(ctx context.Context, branch string) (string, error)
	// commit reads one commit of the repository.
	commit(ctx context.Context, sha string) (commitInfo, error)
	// compare relates to with from as GitHub's compare does; an error
	// wrapping errUnknownCommit when the repository lacks from.
	compare(ctx context.Context, call, from, to string) (comparison, error)
	// write makes one commit with prop's files on base and points
	// prop.Branch at it; old is its head now ("" = no branch yet).
	write(ctx context.Context, prop remediate.Proposal, base, old string) error
}

var errUnknownCommit = errors.New("commit not in the repository")

// commitInfo is what ownCommit looks at.
type commitInfo struct {
	Parents                     []string
	AuthorEmail, CommitterEmail string
	Message                     string
}

// comparison is GitHub's compare of two commits: status is "identical",
// "ahead" (to is a descendant of from), "behind" or "diverged"; files
// changed from their merge base to to; truncated when the list is cut.
type comparison struct {
	status    string
	files     []string
	truncated bool
}

// apiBranches uses GitHub's Git Data API: refs, commits, blobs, trees.
type apiBranches struct{ p *Publisher }

func (a apiBranches) head(ctx context.Context, branch string) (string, error) {
	return a.p.getRef(ctx, "heads/"+branch)
}

func (a apiBranches) commit(ctx context.Context, sha string) (commitInfo, error) {
	p := a.p
	c, err := call(ctx, p, "get branch head commit", func() (*github.Commit, *github.Response, error) {
		return p.gh.Git.GetCommit(ctx, p.owner, p.repo, sha)
	})
	if err != nil {
		return commitInfo{}, err
	}
	ci := commitInfo{AuthorEmail: c.GetAuthor().GetEmail(), CommitterEmail: c.GetCommitter().GetEmail(), Message: c.GetMessage()}
	for _, pc := range c.Parents {
		ci.Parents = append(ci.Parents, pc.GetSHA())
	}
	return ci, nil
}

func (a apiBranches) compare(ctx context.Context, name, from, to string) (comparison, error) {
	p := a.p
	cmp, err := call(ctx, p, name, func() (*github.CommitsComparison, *github.Response, error) {
		return p.gh.Repositories.CompareCommits(ctx, p.owner, p.repo, from, to, nil)
	})
	if err != nil {
		if isStatus(err, 404) {
			return comparison{}, errors.Join(errUnknownCommit, err)
		}
		return comparison{}, err
	}
	out := comparison{status: cmp.GetStatus()}
	for _, f := range cmp.Files {
		out.files = append(out.files, f.GetFilename())
		if f.GetPreviousFilename() != "" {
			out.files = append(out.files, f.GetPreviousFilename())
		}
	}
	// The compare API lists at most 300 files; past that, assume the worst.
	out.truncated = len(cmp.Files) >= 300
	return out, nil
}

func (a apiBranches) write(ctx context.Context, prop remediate.Proposal, base, old string) error {
	p := a.p
	sha, err := p.commit(ctx, prop, base)
	if err != nil {
		return err
	}
	if old == "" {
		return p.createRef(ctx, prop.Branch, sha)
	}
	// Its own branch: a force-push. The Git Data API has no compare-and-swap.
	_, err = call(ctx, p, "update branch", func() (*github.Reference, *github.Response, error) {
		return p.gh.Git.UpdateRef(ctx, p.owner, p.repo, &github.Reference{
			Ref: github.String("refs/heads/" + prop.Branch), Object: &github.GitObject{SHA: github.String(sha)},
		}, true)
	})
	return err
}

// commit writes the proposal's files as blobs, a tree on base's tree and
// one commit whose parent is base, and returns the commit.
func (p *Publisher) commit(ctx context.Context, prop remediate.Proposal, base string) (string, error) {
	bc, err := call(ctx, p, "get base commit", func() (*github.Commit, *github.Response, error) {
		return p.gh.Git.GetCommit(ctx, p.owner, p.repo, base)
	})
	if err != nil {
		return "", err
	}
	entries := make([]*github.TreeEntry, 0, len(prop.Files))
	for _, f := range prop.Files {
		blob, err := call(ctx, p, "create blob "+f.Path, func() (*github.Blob, *github.Response, error) {
			return p.gh.Git.CreateBlob(ctx, p.owner, p.repo, &github.Blob{
				Content: github.String(base64.StdEncoding.EncodeToString(f.Content)), Encoding: github.String("base64"),
			})
		})
		if err != nil {
			return "", err
		}
		mode := f.Mode
		if mode == "" {
			mode = "100644"
		}
		entries = append(entries, &github.TreeEntry{Path: github.String(f.Path), Mode: github.String(mode), Type: github.String("blob"), SHA: blob.SHA})
	}
	tree, err := call(ctx, p, "create tree", func() (*github.Tree, *github.Response, error) {
		return p.gh.Git.CreateTree(ctx, p.owner, p.repo, bc.GetTree().GetSHA(), entries)
	})
	if err != nil {
		return "", err
	}
	who := &github.CommitAuthor{Name: github.String(p.opts.Identity.Name), Email: github.String(p.opts.Identity.Email)}
	c, err := call(ctx, p, "create commit", func() (*github.Commit, *github.Response, error) {
		return p.gh.Git.CreateCommit(ctx, p.owner, p.repo, &github.Commit{
			Message: github.String(commitMessage(prop)), Tree: &github.Tree{SHA: tree.SHA},
			Parents: []*github.Commit{{SHA: github.String(base)}}, Author: who, Committer: who,
		}, nil)
	})
	if err != nil {
		return "", err
	}
	return c.GetSHA(), nil
}

func (p *Publisher) createRef(ctx context.Context, branch, sha string) error {
	_, err := call(ctx, p, "create branch", func() (*github.Reference, *github.Response, error) {
		return p.gh.Git.CreateRef(ctx, p.owner, p.repo, &github.Reference{
			Ref: github.String("refs/heads/" + branch), Object: &github.GitObject{SHA: github.String(sha)},
		})
	})
	if err != nil && isStatus(err, 422) {
		// A retried create that had landed: fine if it points at our commit.
		if got, gerr := p.getRef(ctx, "heads/"+branch); gerr == nil && got == sha {
			return nil
		}
	}
	return err
}

// getRef returns the commit a ref points at, "" when it does not exist.
func (p *Publisher) getRef(ctx context.Context, ref string) (string, error) {
	r, err := call(ctx, p, "get ref "+ref, func() (*github.Reference, *github.Response, error) {
		return p.gh.Git.GetRef(ctx, p.owner, p.repo, ref)
	})
	if err != nil {
		if isStatus(err, 404) {
			return "", nil
		}
		return "", err
	}
	// GitHub answers a ref that is only a prefix of others with a list,
	// which go-github reports as an error; an exact ref has this name.
	if r.GetRef() != "refs/"+ref {
		return "", nil
	}
	return r.GetObject().GetSHA(), nil
}
