package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fleetaudit/fleetaudit/internal/testpeer"
)

// A forge whose 401 echoes the Authorization header it got: remediate
// reports the refusal (exit 2) without printing the token, through the API
// (--push api) and the git path (--push git) alike.
func TestRemediateTokenEchoedIsNeverPrinted(t *testing.T) {
	dir, _ := cmaExampleRepo(t)
	const token = "ghp_echoed-token-value-0123456789"
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/repos/acme/fleet-config" {
			// Anything but the repository: refused, echoing the header.
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("WWW-Authenticate", `Basic realm="forge"`)
			w.WriteHeader(http.StatusUnauthorized)
			json.NewEncoder(w).Encode(map[string]string{"message": "bad credentials: " + r.Header.Get("Authorization") + " / " + token})
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"default_branch": "main", "clone_url": srv.URL + "/acme/fleet-config.git"})
	}))
	defer srv.Close()
	for _, push := range []string{"api", "git"} {
		t.Run(push, func(t *testing.T) {
			r := runCLI(t, map[string]string{"GITHUB_TOKEN": token}, "remediate", "--repo", dir, "--rule", "hugetlb-cma-on-gpu",
				"--github", "acme/fleet-config", "--github-api", srv.URL+"/api/v1", "--push", push, "--format", "json", "--log-level", "debug")
			if r.code != exitError {
				t.Errorf("exit %d, want 2\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
			}
			if strings.Contains(r.stdout+r.stderr, token) {
				t.Errorf("the token was printed:\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
			}
			if !strings.Contains(r.stdout+r.stderr, "401") {
				t.Errorf("the refusal is not reported:\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
			}
		})
	}
}

// A forge that accepts the connection and never answers: remediate gives
// up after --api-timeout per attempt, three attempts, and says which
// endpoint did not answer (it waited until signalled).
func TestRemediateAPIThatNeverAnswers(t *testing.T) {
	dir, _ := cmaExampleRepo(t)
	addr, _ := testpeer.Hanging(t)
	api := "http://" + addr
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		done <- runCLI(t, map[string]string{"GITHUB_TOKEN": "t0ken-value"}, "remediate", "--repo", dir, "--rule", "hugetlb-cma-on-gpu",
			"--github", "acme/fleet-config", "--github-api", api, "--api-timeout", "500ms")
	}()
	select {
	case r := <-done:
		if r.code != exitError {
			t.Errorf("exit %d, want 2\nstderr:\n%s", r.code, r.stderr)
		}
		for _, want := range []string{api + "/api/v3/repos/acme/fleet-config", "no answer in time", "gave up after 3 attempts"} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
			}
		}
		t.Logf("gave up after %s", time.Since(start).Round(100*time.Millisecond))
	case <-time.After(60 * time.Second):
		t.Fatal("remediate still waiting on an API that never answers")
	}
}
