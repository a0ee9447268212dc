package githubpr

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/go-github/v60/github"
)

// Timeouts bound every request to the API, so a server that accepts the
// connection and never answers fails the call (and its bounded retries)
// instead of hanging the run.
type Timeouts struct {
	// Connect bounds the TCP connect and the TLS handshake (0 = 10s).
	Connect time.Duration
	// Header bounds the wait for the response's headers once the request
	// is sent (0 = Request).
	Header time.Duration
	// Request bounds the whole request, the body read included (0 = 1m).
	Request time.Duration
}

// Default timeouts.
const (
	DefaultConnectTimeout = 10 * time.Second
	DefaultRequestTimeout = time.Minute
)

func (t Timeouts) withDefaults() Timeouts {
	if t.Request <= 0 {
		t.Request = DefaultRequestTimeout
	}
	if t.Connect <= 0 {
		t.Connect = min(DefaultConnectTimeout, t.Request)
	}
	if t.Header <= 0 {
		t.Header = t.Request
	}
	return t
}

// NewHTTPClient is an http.Client for the API with t's timeouts (zero
// fields take their defaults).
func NewHTTPClient(t Timeouts) *http.Client {
	t = t.withDefaults()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: t.Connect, KeepAlive: 30 * time.Second}).DialContext
	tr.TLSHandshakeTimeout = t.Connect
	tr.ResponseHeaderTimeout = t.Header
	tr.ExpectContinueTimeout = time.Second
	return &http.Client{Transport: tr, Timeout: t.Request}
}

// NewClient returns a go-github client that sends token to apiURL and to
// nothing else. apiURL "" is api.github.com; a GitHub Enterprise Server URL
// ("https://ghe.example.com" or ".../api/v3") goes through
// WithEnterpriseURLs; a URL whose path already ends in "/api/v1" (Gitea,
// Forgejo) is used as it is. httpClient nil is NewHTTPClient(Timeouts{}):
// every request has a deadline.
//
// The token is added by a transport only to requests for the API's own
// scheme and host, so a redirect elsewhere does not carry it; it is never
// part of an error. A plain-http apiURL is refused unless its host is a
// loopback address, so the token does not cross a network in clear.
func NewClient(ctx context.Context, token, apiURL string, httpClient *http.Client) (*github.Client, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if strings.TrimSpace(token) == "" {
		return nil, errors.New("github: no token (set GITHUB_TOKEN)")
	}
	if httpClient == nil {
		httpClient = NewHTTPClient(Timeouts{})
	}
	hc := *httpClient
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	auth := &authTransport{token: token, base: base}
	hc.Transport = auth
	c := github.NewClient(&hc)
	if apiURL != "" {
		u, err := url.Parse(apiURL)
		if err != nil {
			// url.Error quotes the input, which could hold a password.
			return nil, fmt.Errorf("github: API URL is not a URL")
		}
		if u.User != nil {
			return nil, fmt.Errorf("github: API URL %s carries credentials: pass the token in GITHUB_TOKEN instead", u.Redacted())
		}
		switch {
		case u.Scheme == "https":
		case u.Scheme == "http" && isLoopback(u.Hostname()):
		case u.Scheme == "http":
			return nil, fmt.Errorf("github: API URL %s is plain http to a host that is not loopback: the token would cross the network in clear; use https", u.Redacted())
		default:
			return nil, fmt.Errorf("github: API URL %s: scheme must be https (or http on loopback)", u.Redacted())
		}
		if strings.HasSuffix(strings.TrimSuffix(u.Path, "/"), "/api/v1") {
			if !strings.HasSuffix(u.Path, "/") {
				u.Path += "/"
			}
			c.BaseURL = u
			up := *u
			c.UploadURL = &up
		} else {
			c, err = c.WithEnterpriseURLs(u.String(), u.String())
			if err != nil {
				return nil, fmt.Errorf("github: API URL %s: %w", u.Redacted(), err)
			}
		}
	}
	auth.scheme, auth.host = c.BaseURL.Scheme, c.BaseURL.Host
	return c, nil
}

// authTransport adds the token to requests for one scheme and host only.
type authTransport struct {
	token        string
	scheme, host string
	base         http.RoundTripper
}

func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme == t.scheme && req.URL.Host == t.host {
		req = req.Clone(req.Context())
		req.Header.Set("Authorization", "Bearer "+t.token)
	}
	return t.base.RoundTrip(req)
}

// tokenOf is the token c's transport sends, "" when c was not made by
// NewClient.
func tokenOf(c *github.Client) string {
	if t, ok := c.Client().Transport.(*authTransport); ok {
		return t.token
	}
	return ""
}

// redact replaces every secret in s: an API's answer may echo the
// Authorization header, and its text ends up in errors and logs.
func redact(s string, secrets []string) string {
	for _, sec := range secrets {
		if sec != "" {
			s = strings.ReplaceAll(s, sec, "***")
		}
	}
	return s
}

// redactedError is an error whose text had a secret: Error is the text
// without it; Unwrap still gives the cause to errors.Is and errors.As.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

func redactErr(err error, secrets []string) error {
	if err == nil {
		return nil
	}
	if msg := redact(err.Error(), secrets); msg != err.Error() {
		return &redactedError{msg: msg, err: err}
	}
	return err
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
