package githubpr

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v60/github"
)

// APIError is a call that failed: which call, the HTTP status (0 when no
// answer came), and a message a person can act on.
type APIError struct {
	Call   string
	Status int
	// Fatal is set when no later call can succeed either (401, 403, a rate
	// limit that outlasts Retry.MaxWait), so Publish stops.
	Fatal bool
	Msg   string
	Err   error
}

func (e *APIError) Error() string { return e.Msg }
func (e *APIError) Unwrap() error { return e.Err }

// call runs fn, retrying rate limits, 5xx and dropped connections within
// p.opts.Retry, and turns its failure into an *APIError.
func call[T any](ctx context.Context, p *Publisher, name string, fn func() (T, *github.Response, error)) (T, error) {
	var zero T
	for attempt := 1; ; attempt++ {
		v, resp, err := fn()
		if err == nil {
			return v, nil
		}
		if cerr := ctx.Err(); cerr != nil {
			return zero, fmt.Errorf("github: %s: %w", name, cerr)
		}
		wait, retry, ae := p.classify(name, resp, err, attempt)
		// The API's message may echo the request's Authorization header.
		ae.Msg = redact(ae.Msg, p.secrets)
		if !retry || attempt >= p.opts.Retry.Attempts {
			if retry {
				ae.Msg += fmt.Sprintf(" (gave up after %d attempts)", attempt)
				if ae.Status == http.StatusForbidden || ae.Status == http.StatusTooManyRequests {
					ae.Fatal = true
				}
			}
			return zero, ae
		}
		p.log.Warn("github call failed, retrying", "call", name, "status", ae.Status, "attempt", attempt, "wait", wait)
		if err := p.opts.Retry.Sleep(ctx, wait); err != nil {
			return zero, fmt.Errorf("github: %s: %w", name, err)
		}
	}
}

// classify says how long to wait before the next attempt, whether there
// should be one, and what to report if not.
func (p *Publisher) classify(name string, resp *github.Response, err error, attempt int) (time.Duration, bool, *APIError) {
	backoff := p.opts.Retry.Backoff << (attempt - 1)
	repo := p.owner + "/" + p.repo
	ae := &APIError{Call: name, Err: err}
	var hr *http.Response
	if resp != nil {
		hr = resp.Response
	}
	var rl *github.RateLimitError
	var abuse *github.AbuseRateLimitError
	var er *github.ErrorResponse
	switch {
	case errors.As(err, &rl):
		ae.Status = statusOf(rl.Response)
		wait := time.Until(rl.Rate.Reset.Time) + time.Second
		ae.Msg = fmt.Sprintf("github: %s: rate limit of %d requests exhausted; it resets at %s", name, rl.Rate.Limit, rl.Rate.Reset.Time.UTC().Format(time.RFC3339))
		return p.rateWait(ae, wait)
	case errors.As(err, &abuse):
		ae.Status = statusOf(abuse.Response)
		wait := backoff
		if abuse.RetryAfter != nil {
			wait = *abuse.RetryAfter
		}
		ae.Msg = fmt.Sprintf("github: %s: secondary rate limit (%s); retry after %s", name, abuse.Message, wait)
		return p.rateWait(ae, wait)
	case errors.As(err, &er) && er.Response != nil:
		hr = er.Response
		ae.Status = hr.StatusCode
		msg := er.Message
		for _, e := range er.Errors {
			if e.Message != "" {
				msg += "; " + e.Message
			} else if e.Code != "" {
				msg += fmt.Sprintf("; %s %s.%s", e.Code, e.Resource, e.Field)
			}
		}
		where := name
		if hr.Request != nil {
			where = fmt.Sprintf("%s (%s %s)", name, hr.Request.Method, hr.Request.URL.Path)
		}
		switch st := hr.StatusCode; {
		case st == http.StatusUnauthorized:
			ae.Fatal = true
			ae.Msg = fmt.Sprintf("github: %s: 401 the token was refused (%s): check GITHUB_TOKEN", where, msg)
		case st == http.StatusForbidden:
			ae.Fatal = true
			ae.Msg = fmt.Sprintf("github: %s: 403 the token lacks permission on %s (needs contents:write and pull_requests:write): %s", where, repo, msg)
		case st == http.StatusNotFound && name == "get repository":
			ae.Fatal = true
			ae.Msg = fmt.Sprintf("github: %s: 404 repository %s not found, or the token has no access to it: %s", where, repo, msg)
		case st == http.StatusNotFound:
			ae.Msg = fmt.Sprintf("github: %s: 404 not found in %s, or the token has no access to it: %s", where, repo, msg)
		case st == http.StatusTooManyRequests:
			wait := backoff
			if s, err := strconv.Atoi(strings.TrimSpace(hr.Header.Get("Retry-After"))); err == nil && s >= 0 {
				wait = time.Duration(s) * time.Second
			}
			ae.Msg = fmt.Sprintf("github: %s: 429 too many requests; retry after %s", where, wait)
			return p.rateWait(ae, wait)
		case st >= 500:
			ae.Msg = fmt.Sprintf("github: %s: %d server error: %s", where, st, msg)
			return backoff, true, ae
		default:
			ae.Msg = fmt.Sprintf("github: %s: %d %s", where, st, msg)
		}
		return 0, false, ae
	}
	var acc *github.AcceptedError
	if errors.As(err, &acc) {
		ae.Status = http.StatusAccepted
		ae.Msg = fmt.Sprintf("github: %s: 202 still being computed", name)
		return backoff, true, ae
	}
	if hr != nil {
		ae.Status = hr.StatusCode
	}
	// No answer (a dropped connection, a bad body): go-github's message
	// names the method and URL, never the Authorization header.
	ae.Msg = fmt.Sprintf("github: %s: %v", name, err)
	var ue *url.Error
	if errors.As(err, &ue) && ue.Timeout() {
		ae.Msg = fmt.Sprintf("github: %s: %s %s: no answer in time (%v)", name, ue.Op, ue.URL, ue.Err)
	}
	return backoff, true, ae
}

func (p *Publisher) rateWait(ae *APIError, wait time.Duration) (time.Duration, bool, *APIError) {
	if wait < 0 {
		wait = 0
	}
	if wait > p.opts.Retry.MaxWait {
		ae.Fatal = true
		ae.Msg += fmt.Sprintf("; that is longer than the %s this run waits: rerun later", p.opts.Retry.MaxWait)
		return 0, false, ae
	}
	return wait, true, ae
}

func isStatus(err error, status int) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Status == status
}

func isFatal(ctx context.Context, err error) bool {
	var ae *APIError
	return ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ae) && ae.Fatal)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func statusOf(r *http.Response) int {
	if r == nil {
		return 0
	}
	return r.StatusCode
}
