package githubpr

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/go-github/v60/github"
)

// NewClient returns a go-github client that sends token to apiURL and to
// nothing else. apiURL "" is api.github.com; a GitHub Enterprise Server URL
// ("https://ghe.example.com" or ".../api/v3") goes through
// WithEnterpriseURLs; a URL whose path already ends in "/api/v1" (Gitea,
// Forgejo) is used as it is. httpClient nil is a fresh http.Client.
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
		httpClient = &http.Client{}
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

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
