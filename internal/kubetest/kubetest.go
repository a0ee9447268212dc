// Package kubetest runs a real etcd and kube-apiserver on loopback for the
// tests of one package: started on first use, stopped when the package's
// tests end. The binaries are built from the Go module proxy by
// scripts/k8s-testenv/build.sh into a cache outside the repository.
//
//	var apiserver kubetest.Server
//
//	func TestMain(m *testing.M) { os.Exit(apiserver.Main(m)) }
//
//	func TestX(t *testing.T) { env := apiserver.Get(t); ... env.Config ... }
//
// Without the binaries a test skips with how to build them, except under
// CI=true (or FLEETAUDIT_REQUIRE_K8S=1), where it fails, after waiting for a
// build in progress.
package kubetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"github.com/fleetaudit/fleetaudit/internal/testpeer"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// BinDir is where the binaries are looked for: $FLEETAUDIT_K8S_BIN, else
// the user's cache directory's fleetaudit/k8s/bin (/root/.cache/... for root).
func BinDir() string {
	if d := os.Getenv("FLEETAUDIT_K8S_BIN"); d != "" {
		return d
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = "/root/.cache"
	}
	return filepath.Join(cache, "fleetaudit", "k8s", "bin")
}

// Required reports whether a missing apiserver fails the tests instead of
// skipping them: in CI, or when asked.
func Required() bool {
	return testpeer.Required("FLEETAUDIT_REQUIRE_K8S")
}

// Env is a running control plane.
type Env struct {
	// Config reaches the apiserver as a member of system:masters.
	Config *rest.Config
	// Kubeconfig is a kubeconfig file for Config (context "fleetaudit-test").
	Kubeconfig string
	// Server is the apiserver's URL.
	Server string

	dir   string
	procs []*proc
}

// proc is a server process; done closes when it has exited.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// Server starts one Env per test binary, on first use.
type Server struct {
	once sync.Once
	env  *Env
	err  error
}

// Main runs the package's tests and stops the apiserver after them.
func (s *Server) Main(m *testing.M) int {
	code := m.Run()
	if s.env != nil {
		s.env.Stop()
	}
	return code
}

// Get returns the running Env, starting it on first use. A missing binary
// skips the test, or fails it when Required.
func (s *Server) Get(t testing.TB) *Env {
	t.Helper()
	s.once.Do(func() {
		// CI starts the build in the background: wait for it here.
		if Required() {
			if err := testpeer.WaitForBuild(filepath.Join(BinDir(), ".build.lock"), testpeer.BuildDeadline(t, 40*time.Minute)); err != nil {
				s.err = err
				return
			}
		}
		var missing []string
		for _, b := range []string{"etcd", "kube-apiserver"} {
			if _, err := os.Stat(filepath.Join(BinDir(), b)); err != nil {
				missing = append(missing, b)
			}
		}
		if len(missing) > 0 {
			s.err = fmt.Errorf("%w: %s not in %s; build them with scripts/k8s-testenv/build.sh (12-20 minutes)", errMissing, strings.Join(missing, " and "), BinDir())
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		s.env, s.err = Start(ctx, BinDir())
	})
	if errors.Is(s.err, errMissing) && !Required() {
		t.Skip(s.err)
		return nil
	}
	if s.err != nil {
		t.Fatal(s.err)
		return nil
	}
	return s.env
}

var errMissing = errors.New("no kube-apiserver for the integration tests")

// Start runs etcd and kube-apiserver from bin on free loopback ports, with
// their state in a new temporary directory, and waits until the apiserver
// is ready. Ports are chosen free just before use; a start that loses a
// port to another process is tried again.
func Start(ctx context.Context, bin string) (*Env, error) {
	var err error
	for range 3 {
		var env *Env
		env, err = start(ctx, bin)
		if err == nil {
			return env, nil
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, err
}

func start(ctx context.Context, bin string) (env *Env, err error) {
	dir, err := os.MkdirTemp("", "fleetaudit-kube-")
	if err != nil {
		return nil, err
	}
	env = &Env{dir: dir}
	defer func() {
		if err != nil {
			env.Stop()
			env = nil
		}
	}()
	ports, err := freePorts(3)
	if err != nil {
		return env, err
	}
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	apiPort := ports[2]
	if err := env.run(filepath.Join(bin, "etcd"), "etcd.log",
		"--name", "fleetaudit-test", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "fleetaudit-test="+peerURL,
		"--unsafe-no-fsync", "--log-level", "warn"); err != nil {
		return env, err
	}
	if err := env.wait(ctx, etcdURL+"/health", "", nil, "etcd.log"); err != nil {
		return env, err
	}

	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return env, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return env, err
	}
	if err := writeFile(dir, "sa.key", pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(saKey)})); err != nil {
		return env, err
	}
	if err := writeFile(dir, "sa.pub", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})); err != nil {
		return env, err
	}
	tok := make([]byte, 16)
	if _, err := rand.Read(tok); err != nil {
		return env, err
	}
	token := hex.EncodeToString(tok)
	if err := writeFile(dir, "tokens.csv", []byte(token+",fleetaudit-test,fleetaudit-test,system:masters\n")); err != nil {
		return env, err
	}
	env.Server = fmt.Sprintf("https://127.0.0.1:%d", apiPort)
	// --endpoint-reconciler-type=none: with a loopback advertise address the
	// default reconciler refuses to start.
	if err := env.run(filepath.Join(bin, "kube-apiserver"), "apiserver.log",
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", apiPort),
		"--cert-dir="+filepath.Join(dir, "certs"),
		"--service-account-issuer="+env.Server+"/",
		"--service-account-key-file="+filepath.Join(dir, "sa.pub"),
		"--service-account-signing-key-file="+filepath.Join(dir, "sa.key"),
		"--service-cluster-ip-range=10.0.0.0/24",
		"--authorization-mode=RBAC",
		"--token-auth-file="+filepath.Join(dir, "tokens.csv"),
		"--allow-privileged=true",
		"--disable-admission-plugins=ServiceAccount",
		"--endpoint-reconciler-type=none"); err != nil {
		return env, err
	}
	insecure := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} // only to poll /readyz before the CA is known
	if err := env.wait(ctx, env.Server+"/readyz", token, insecure, "apiserver.log"); err != nil {
		return env, err
	}
	ca, err := os.ReadFile(filepath.Join(dir, "certs", "apiserver.crt"))
	if err != nil {
		return env, err
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["fleetaudit-test"] = &clientcmdapi.Cluster{Server: env.Server, CertificateAuthorityData: ca}
	kc.AuthInfos["fleetaudit-test"] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["fleetaudit-test"] = &clientcmdapi.Context{Cluster: "fleetaudit-test", AuthInfo: "fleetaudit-test"}
	kc.CurrentContext = "fleetaudit-test"
	env.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, env.Kubeconfig); err != nil {
		return env, err
	}
	env.Config = &rest.Config{Host: env.Server, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}
	return env, nil
}

// Stop ends the processes (apiserver first) and removes the state.
func (e *Env) Stop() {
	for i := len(e.procs) - 1; i >= 0; i-- {
		p := e.procs[i]
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
	e.procs = nil
	if e.dir != "" {
		os.RemoveAll(e.dir)
	}
}

// run starts a server with its output in log under the state directory.
// It dies with the test binary (Pdeathsig), so a killed test leaves none.
func (e *Env) run(path, log string, args ...string) error {
	out, err := os.Create(filepath.Join(e.dir, log))
	if err != nil {
		return err
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		out.Close()
		return fmt.Errorf("starting %s: %w", path, err)
	}
	out.Close()
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	e.procs = append(e.procs, p)
	return nil
}

// wait polls url until it answers 200, the process dies or ctx ends.
func (e *Env) wait(ctx context.Context, url, token string, tr *http.Transport, log string) error {
	client := &http.Client{Timeout: 2 * time.Second}
	if tr != nil {
		client.Transport = tr
	}
	p := e.procs[len(e.procs)-1]
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited before it was ready: %s", filepath.Base(p.cmd.Path), e.tail(log))
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %w: %s", url, ctx.Err(), e.tail(log))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// tail is the end of a server's log, for an error message.
func (e *Env) tail(log string) string {
	b, _ := os.ReadFile(filepath.Join(e.dir, log))
	b = bytes.TrimSpace(b)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

func writeFile(dir, name string, data []byte) error {
	return os.WriteFile(filepath.Join(dir, name), data, 0o600)
}

// freePorts finds n distinct free loopback ports, held open until all are
// found so none is handed out twice.
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
