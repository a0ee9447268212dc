package githubpr

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetaudit/fleetaudit/internal/gittest"
	"github.com/fleetaudit/fleetaudit/internal/testpeer"
	"github.com/fleetaudit/fleetaudit/remediate"
)

// A proposal that passes validate, for servers that need not keep state.
func plainProposal() remediate.Proposal {
	return remediate.Proposal{
		Rule: "hugetlb-cma-on-gpu", Fleet: "gpu", Branch: gpuBranch, Base: "main",
		Title: "t", Body: "b\n", Fingerprint: "fp",
		Files: []remediate.FileChange{{Path: gpuFile, Content: []byte("x\n")}},
	}
}

// logBuffer is a Log whose lines the test reads.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func noSleep(context.Context, time.Duration) error { return nil }

// An API whose error answers echo the Authorization header (as some
// proxies and forges do): no error, result or log line holds the token, on
// the statuses that stop the run and on the ones that are retried.
func TestTokenEchoedByTheAPIIsNeverPrinted(t *testing.T) {
	for _, status := range []int{401, 403, 404, 422, 500} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(status)
				msg := "Bad credentials for " + r.Header.Get("Authorization")
				json.NewEncoder(w).Encode(map[string]any{"message": msg, "errors": []map[string]string{{"message": "token " + testToken + " refused"}}})
			}))
			defer srv.Close()
			gh, err := NewClient(context.Background(), testToken, srv.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			var log logBuffer
			p := New(gh, "acme", "fleet-config", Options{Log: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug})), Retry: Retry{Sleep: noSleep}})
			res, err := p.Publish(context.Background(), []remediate.Proposal{plainProposal()})
			if err == nil {
				t.Fatalf("Publish succeeded against a failing API: %+v", res)
			}
			if calls.Load() == 0 {
				t.Fatal("no call reached the server")
			}
			text := err.Error() + fmt.Sprint(res) + log.String()
			if strings.Contains(text, testToken) {
				t.Errorf("the token was printed:\nerror: %v\nresults: %+v\nlog:\n%s", err, res, log.String())
			}
			if !strings.Contains(err.Error(), fmt.Sprint(status)) || !strings.Contains(err.Error(), "Bad credentials for Bearer ***") {
				t.Errorf("error %q: want the status and the API's message, the token masked", err)
			}
		})
	}
}

// The git path: a forge whose answer to git echoes the credentials git
// sent (a "remote error", which git prints) has them masked too.
func TestTokenEchoedToGitIsNeverPrinted(t *testing.T) {
	gittest.Require(t)
	srv := httptest.NewServer(nil)
	defer srv.Close()
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/api/v3/") {
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"default_branch": "main", "clone_url": srv.URL + "/acme/fleet-config.git"})
			return
		}
		// A smart-HTTP answer that is a remote error: git prints it.
		w.Header().Set("Content-Type", "application/x-git-upload-pack-advertisement")
		msg := "ERR denied: " + r.Header.Get("Authorization") + " (token " + testToken + ")\n"
		fmt.Fprintf(w, "%04x%s", len(msg)+4, msg)
	})
	gh, err := NewClient(context.Background(), testToken, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	var log logBuffer
	p := New(gh, "acme", "fleet-config", Options{Git: &GitTransport{Token: testToken}, Log: slog.New(slog.NewTextHandler(&log, nil)), Retry: Retry{Sleep: noSleep}})
	res, err := p.Publish(context.Background(), []remediate.Proposal{plainProposal()})
	text := fmt.Sprint(err) + fmt.Sprint(res) + log.String()
	if !strings.Contains(text, "denied") {
		t.Fatalf("the forge's error was not reported: err %v, results %+v\n%s", err, res, log.String())
	}
	if strings.Contains(text, testToken) || strings.Contains(text, "Basic eC1") {
		t.Errorf("the token was printed:\nerror: %v\nresults: %+v\nlog:\n%s", err, res, log.String())
	}
}

// An API that accepts the connection and never answers: each request gives
// up after its timeout, the retries are bounded, and the error names the
// call and the endpoint (it hung until signalled).
func TestAPIThatNeverAnswers(t *testing.T) {
	addr, accepted := testpeer.Hanging(t)
	const timeout = 300 * time.Millisecond
	gh, err := NewClient(context.Background(), testToken, "http://"+addr, NewHTTPClient(Timeouts{Request: timeout}))
	if err != nil {
		t.Fatal(err)
	}
	p := New(gh, "acme", "fleet-config", Options{Retry: Retry{Sleep: noSleep}})
	done := make(chan error, 1)
	go func() {
		_, err := p.Publish(context.Background(), []remediate.Proposal{plainProposal()})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Publish succeeded against a silent API")
		}
		for _, want := range []string{"get repository", addr, "no answer in time", "gave up after 3 attempts"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q lacks %q", err, want)
			}
		}
		if n := accepted.Load(); n != 3 {
			t.Errorf("%d connections, want 3 (one per attempt)", n)
		}
	case <-time.After(3*timeout + 10*time.Second):
		t.Fatal("Publish still waiting on an API that never answers")
	}
}

// The same for git over HTTPS: a forge that takes git's request and never
// answers fails each git command after its timeout, naming the URL.
func TestGitThatNeverAnswers(t *testing.T) {
	gittest.Require(t)
	release := make(chan struct{})
	srv := httptest.NewServer(nil)
	defer srv.Close()
	defer close(release)
	var gitCalls atomic.Int32
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/api/v3/") {
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"default_branch": "main", "clone_url": srv.URL + "/acme/fleet-config.git"})
			return
		}
		gitCalls.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	const timeout = time.Second
	gh, err := NewClient(context.Background(), testToken, srv.URL, NewHTTPClient(Timeouts{Request: timeout}))
	if err != nil {
		t.Fatal(err)
	}
	p := New(gh, "acme", "fleet-config", Options{Git: &GitTransport{Token: testToken, Timeout: timeout}, Retry: Retry{Sleep: noSleep}})
	done := make(chan error, 1)
	go func() {
		res, err := p.Publish(context.Background(), []remediate.Proposal{plainProposal()})
		if err == nil && len(res) == 1 && res[0].Action == ActionFailed {
			err = fmt.Errorf("%s", res[0].Reason)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Publish succeeded against a silent forge")
		}
		for _, want := range []string{srv.URL + "/acme/fleet-config.git", "gave up after 3 attempts"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q lacks %q", err, want)
			}
		}
		if n := gitCalls.Load(); n != 3 {
			t.Errorf("%d git requests, want 3 (one per attempt)", n)
		}
	case <-time.After(3*10*timeout + 10*time.Second):
		t.Fatal("Publish still waiting on a forge that never answers git")
	}
}
