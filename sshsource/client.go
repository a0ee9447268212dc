package sshsource

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	sshconfig "github.com/kevinburke/ssh_config"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"
)

// Host is one host to collect over SSH.
type Host struct {
	// Name is the inventory name, recorded as the snapshot's host.
	Name string
	// Address is the host name or IP to connect to; Name when empty.
	Address string
	Port    int
	User    string
	// IdentityFiles are private keys to offer, before the options' own.
	IdentityFiles []string
	// Jump is a ProxyJump list: [user@]host[:port][,...].
	Jump string
	// Become reads the host through sudo -n (never a password prompt).
	Become bool
	// Root is the directory on the host read as its "/" ("/" when empty);
	// commands (nvidia-smi) run only when it is "/".
	Root string
}

// Options are shared by every host of a run.
type Options struct {
	// KnownHosts are known_hosts files; ~/.ssh/known_hosts when empty. The
	// first is where AcceptNew records keys.
	KnownHosts []string
	// AcceptNew records the key of a host not yet known, as OpenSSH's
	// StrictHostKeyChecking=accept-new; a changed key always fails.
	AcceptNew bool
	// IdentityFiles are offered to every host after its own.
	IdentityFiles []string
	// AgentSocket is ssh-agent's socket ($SSH_AUTH_SOCK); "" for none.
	AgentSocket string
	// Config is an ssh_config file (~/.ssh/config); nil for none.
	Config *sshconfig.Config
	// Jump is used for hosts without a jump of their own (--jump).
	Jump string
	// Passphrase returns the passphrase of an encrypted key; nil skips
	// encrypted keys.
	Passphrase func(file string) ([]byte, error)
	// ConnectTimeout bounds the TCP connect and SSH handshake.
	ConnectTimeout time.Duration
	// Retries is how many more times a connection reset is tried.
	Retries int
	// User is used when neither inventory nor ssh_config gives one.
	User string
	// NoExec runs no command besides the file stream.
	NoExec bool
	// MaxFetches caps the names one host may fetch after its stream, each
	// an exec (0: 8; negative: none); a name past it is a collection error.
	MaxFetches int
	// Version is recorded in snapshots.
	Version string
	// Home is the user's home (~ in paths); os.UserHomeDir when "".
	Home string
}

// Dialer connects to hosts, sharing keys and known_hosts between them.
type Dialer struct {
	opts Options

	mu      sync.Mutex
	signers map[string][]ssh.Signer // by identity file
	keyErrs map[string]error
	agent   agent.ExtendedAgent
	agentC  net.Conn
	khMu    sync.Mutex
	// localUser is the user for hosts nothing names one for.
	localUser string
	recorded  map[string]bool // known_hosts lines accept-new wrote
}

// NewDialer prepares a Dialer; Close releases the agent connection.
func NewDialer(opts Options) *Dialer {
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = 10 * time.Second
	}
	if opts.Home == "" {
		opts.Home, _ = os.UserHomeDir()
	}
	if len(opts.KnownHosts) == 0 {
		opts.KnownHosts = []string{filepath.Join(opts.Home, ".ssh", "known_hosts")}
	}
	d := &Dialer{opts: opts, signers: map[string][]ssh.Signer{}, keyErrs: map[string]error{}, localUser: "root", recorded: map[string]bool{}}
	if u, err := user.Current(); err == nil {
		d.localUser = u.Username
	}
	return d
}

// keyProblems says which key files could not be used, for an
// authentication failure's message: the file and why, never its contents.
func (d *Dialer) keyProblems() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for file, err := range d.keyErrs {
		var missing *ssh.PassphraseMissingError
		if errors.As(err, &missing) {
			out = append(out, file+": encrypted, and no passphrase could be asked (add it to ssh-agent)")
			continue
		}
		out = append(out, file+": "+err.Error())
	}
	slices.Sort(out)
	return strings.Join(out, "; ")
}

// Close closes the agent connection.
func (d *Dialer) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.agentC != nil {
		return d.agentC.Close()
	}
	return nil
}

// endpoint is one hop: where to connect and as whom.
type endpoint struct {
	alias     string // the name ssh_config is matched against
	host      string
	port      int
	user      string
	identites []string
}

func (e endpoint) addr() string { return net.JoinHostPort(e.host, strconv.Itoa(e.port)) }

// resolve fills a hop from the inventory, then ssh_config, then defaults,
// as OpenSSH does with options given on its command line (what Ansible
// passes) before the config file.
func (d *Dialer) resolve(alias, user string, port int, ids []string) endpoint {
	e := endpoint{alias: alias, host: alias, port: port, user: user, identites: ids}
	cfg := d.opts.Config
	get := func(key string) string {
		if cfg == nil {
			return ""
		}
		v, _ := cfg.Get(alias, key)
		return v
	}
	if h := get("HostName"); h != "" {
		e.host = strings.ReplaceAll(h, "%h", alias)
	}
	if e.port == 0 {
		if p, err := strconv.Atoi(get("Port")); err == nil && p > 0 && p < 65536 {
			e.port = p
		}
	}
	if e.port == 0 {
		e.port = 22
	}
	if e.user == "" {
		e.user = get("User")
	}
	if e.user == "" {
		e.user = d.opts.User
	}
	if e.user == "" {
		e.user = d.localUser // as ssh: the local user's name
	}
	if cfg != nil {
		files, _ := cfg.GetAll(alias, "IdentityFile")
		for _, f := range files {
			if f != "" && f != "~/.ssh/identity" { // ssh_config's default list
				e.identites = append(e.identites, f)
			}
		}
	}
	e.identites = append(e.identites, d.opts.IdentityFiles...)
	if len(e.identites) == 0 {
		for _, f := range []string{"id_ed25519", "id_ecdsa", "id_rsa"} {
			e.identites = append(e.identites, filepath.Join(d.opts.Home, ".ssh", f))
		}
	}
	for i, f := range e.identites {
		if rest, ok := strings.CutPrefix(f, "~/"); ok {
			e.identites[i] = filepath.Join(d.opts.Home, rest)
		}
	}
	return e
}

// jumpHops parses a ProxyJump list.
func (d *Dialer) jumpHops(spec string) ([]endpoint, error) {
	var hops []endpoint
	for _, hop := range strings.Split(spec, ",") {
		hop = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(hop), "ssh://"))
		if hop == "" || strings.EqualFold(hop, "none") {
			continue
		}
		user := ""
		if at := strings.LastIndex(hop, "@"); at >= 0 {
			user, hop = hop[:at], hop[at+1:]
		}
		port := 0
		if h, p, err := net.SplitHostPort(hop); err == nil {
			n, err := strconv.Atoi(p)
			if err != nil || n <= 0 || n > 65535 {
				return nil, fmt.Errorf("jump host %s: bad port %q", hop, p)
			}
			hop, port = h, n
		}
		hops = append(hops, d.resolve(hop, user, port, nil))
	}
	return hops, nil
}

// Failure classes of a host that could not be read.
const (
	ClassUnreachable  = "unreachable"
	ClassAuth         = "auth failed"
	ClassHostKey      = "host key mismatch"
	ClassUnknownKey   = "unknown host key"
	ClassTimeout      = "timeout"
	ClassPartial      = "partial"
	ClassBecome       = "become failed"
	ClassRemoteFailed = "failed"
)

// HostError says why a host was not (fully) read; Class is one of the
// Class constants.
type HostError struct {
	Class string
	Err   error
}

func (e *HostError) Error() string { return e.Class + ": " + e.Err.Error() }
func (e *HostError) Unwrap() error { return e.Err }

// dial connects to the host through its jumps, with retries for
// connection resets.
func (d *Dialer) dial(ctx context.Context, h Host) (*ssh.Client, []*ssh.Client, error) {
	alias := h.Address
	if alias == "" {
		alias = h.Name
	}
	target := d.resolve(alias, h.User, h.Port, append([]string(nil), h.IdentityFiles...))
	jump := h.Jump
	if jump == "" && d.opts.Config != nil {
		jump, _ = d.opts.Config.Get(alias, "ProxyJump")
	}
	if jump == "" {
		jump = d.opts.Jump
	}
	hops, err := d.jumpHops(jump)
	if err != nil {
		return nil, nil, &HostError{Class: ClassUnreachable, Err: err}
	}
	hops = append(hops, target)
	var lastErr error
	for attempt := 0; attempt <= d.opts.Retries; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return nil, nil, classify(ctx.Err())
			case <-time.After(time.Duration(attempt) * 300 * time.Millisecond):
			}
		}
		client, via, err := d.dialHops(ctx, hops)
		if err == nil {
			return client, via, nil
		}
		lastErr = err
		if !retryable(err) {
			break
		}
	}
	return nil, nil, classify(lastErr)
}

func (d *Dialer) dialHops(ctx context.Context, hops []endpoint) (*ssh.Client, []*ssh.Client, error) {
	var via []*ssh.Client
	closeAll := func() {
		for i := len(via) - 1; i >= 0; i-- {
			via[i].Close()
		}
	}
	for i, hop := range hops {
		// Keys are loaded (a passphrase asked) before the connect timeout
		// starts: it bounds the network, not a person typing.
		cfg, err := d.clientConfig(hop)
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("%s: %w", hop.addr(), err)
		}
		var conn net.Conn
		dctx, cancel := context.WithTimeout(ctx, d.opts.ConnectTimeout)
		if i == 0 {
			var nd net.Dialer
			conn, err = nd.DialContext(dctx, "tcp", hop.addr())
		} else {
			conn, err = via[i-1].DialContext(dctx, "tcp", hop.addr())
		}
		if err != nil {
			cancel()
			closeAll()
			return nil, nil, fmt.Errorf("%s: %w", hop.addr(), err)
		}
		client, err := d.handshake(dctx, conn, hop, cfg)
		cancel()
		if err != nil {
			conn.Close()
			closeAll()
			return nil, nil, fmt.Errorf("%s: %w", hop.addr(), err)
		}
		via = append(via, client)
	}
	return via[len(via)-1], via[:len(via)-1], nil
}

// handshake runs the SSH handshake over conn, bounded by ctx.
func (d *Dialer) handshake(ctx context.Context, conn net.Conn, hop endpoint, cfg *ssh.ClientConfig) (*ssh.Client, error) {
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			conn.SetDeadline(time.Unix(1, 0)) // unblock the handshake
		case <-done:
		}
	}()
	c, chans, reqs, err := ssh.NewClientConn(conn, hop.addr(), cfg)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w (SSH handshake)", context.DeadlineExceeded)
		}
		return nil, err
	}
	return ssh.NewClient(c, chans, reqs), nil
}

func (d *Dialer) clientConfig(hop endpoint) (*ssh.ClientConfig, error) {
	cb, algos, err := d.hostKeyCallback(hop)
	if err != nil {
		return nil, err
	}
	var auths []ssh.AuthMethod
	if a := d.agentClient(); a != nil {
		auths = append(auths, ssh.PublicKeysCallback(a.Signers))
	}
	var signers []ssh.Signer
	for _, f := range hop.identites {
		signers = append(signers, d.signersOf(f)...)
	}
	if len(signers) > 0 {
		auths = append(auths, ssh.PublicKeys(signers...))
	}
	return &ssh.ClientConfig{
		User:              hop.user,
		Auth:              auths,
		HostKeyCallback:   cb,
		HostKeyAlgorithms: algos,
		Timeout:           d.opts.ConnectTimeout,
	}, nil
}

func (d *Dialer) agentClient() agent.ExtendedAgent {
	if d.opts.AgentSocket == "" {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.agent == nil {
		c, err := net.Dial("unix", d.opts.AgentSocket)
		if err != nil {
			d.opts.AgentSocket = "" // no agent: keys only
			return nil
		}
		d.agentC, d.agent = c, agent.NewClient(c)
	}
	return d.agent
}

// signersOf loads a key file once per run. A missing file is skipped, as
// OpenSSH skips its default identities; the error of a bad one is kept
// for the host's message, never its contents.
func (d *Dialer) signersOf(file string) []ssh.Signer {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s, ok := d.signers[file]; ok {
		return s
	}
	var out []ssh.Signer
	data, err := os.ReadFile(file)
	if err == nil {
		var s ssh.Signer
		s, err = ssh.ParsePrivateKey(data)
		var missing *ssh.PassphraseMissingError
		if errors.As(err, &missing) && d.opts.Passphrase != nil {
			var pass []byte
			if pass, err = d.opts.Passphrase(file); err == nil {
				s, err = ssh.ParsePrivateKeyWithPassphrase(data, pass)
				clear(pass)
			}
		}
		if err == nil {
			out = append(out, s)
		}
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		d.keyErrs[file] = err
	}
	d.signers[file] = out
	return out
}

// hostKeyCallback checks keys against known_hosts; for a host already
// known it offers only the algorithms known_hosts has, as OpenSSH does,
// so a host known by its ed25519 key is not failed for showing RSA.
func (d *Dialer) hostKeyCallback(hop endpoint) (ssh.HostKeyCallback, []string, error) {
	var files []string
	for _, f := range d.opts.KnownHosts {
		if _, err := os.Stat(f); err == nil {
			files = append(files, f)
		}
	}
	var check ssh.HostKeyCallback
	if len(files) > 0 {
		var err error
		d.khMu.Lock()
		check, err = knownhosts.New(files...)
		d.khMu.Unlock()
		if err != nil {
			return nil, nil, fmt.Errorf("known_hosts: %w", err)
		}
	}
	var algos []string
	if check != nil {
		var ke *knownhosts.KeyError
		addr := &net.TCPAddr{IP: net.IPv4zero}
		if err := check(hop.addr(), addr, probeKey{}); errors.As(err, &ke) {
			for _, k := range ke.Want {
				algos = append(algos, algorithmsFor(k.Key.Type())...)
			}
		}
	}
	cb := func(hostname string, remote net.Addr, key ssh.PublicKey) error {
		var err error
		if check != nil {
			err = check(hostname, remote, key)
		} else {
			err = &knownhosts.KeyError{}
		}
		var ke *knownhosts.KeyError
		if !errors.As(err, &ke) {
			return err
		}
		fp := ssh.FingerprintSHA256(key)
		if len(ke.Want) > 0 {
			return &HostError{Class: ClassHostKey, Err: fmt.Errorf(
				"the host key of %s changed: it shows %s %s, known_hosts %s:%d has another; someone may be intercepting the connection, or the host was reinstalled (check, then remove the old line)",
				hostname, key.Type(), fp, ke.Want[0].Filename, ke.Want[0].Line)}
		}
		if !d.opts.AcceptNew {
			return &HostError{Class: ClassUnknownKey, Err: fmt.Errorf(
				"the host key of %s is not in known_hosts (%s %s): check the fingerprint, then add it (ssh-keyscan -p %d %s >> %s) or run with --accept-new-host-keys",
				hostname, key.Type(), fp, hop.port, hop.host, d.opts.KnownHosts[0])}
		}
		return d.recordKey(hostname, key)
	}
	return cb, algos, nil
}

// recordKey appends a new host key to the first known_hosts file.
func (d *Dialer) recordKey(hostname string, key ssh.PublicKey) error {
	d.khMu.Lock()
	defer d.khMu.Unlock()
	// Two connections to one new host in a run record it once.
	line := knownhosts.Line([]string{knownhosts.Normalize(hostname)}, key)
	if d.recorded[line] {
		return nil
	}
	file := d.opts.KnownHosts[0]
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return fmt.Errorf("recording the host key of %s: %w", hostname, err)
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("recording the host key of %s: %w", hostname, err)
	}
	_, werr := fmt.Fprintln(f, line)
	if err := errors.Join(werr, f.Close()); err != nil {
		return fmt.Errorf("recording the host key of %s in %s: %w", hostname, file, err)
	}
	d.recorded[line] = true
	return nil
}

func algorithmsFor(keyType string) []string {
	if keyType == ssh.KeyAlgoRSA {
		return []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}
	}
	return []string{keyType}
}

// probeKey is a key no known_hosts line holds: checking it lists the keys
// known for a host.
type probeKey struct{}

func (probeKey) Type() string                        { return "fleetaudit-probe" }
func (probeKey) Marshal() []byte                     { return []byte("fleetaudit-probe") }
func (probeKey) Verify([]byte, *ssh.Signature) error { return errors.New("probe") }
func (probeKey) String() string                      { return "probe" }

func retryable(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNABORTED) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// classify turns a connection error into a HostError.
func classify(err error) *HostError {
	var he *HostError
	if errors.As(err, &he) {
		return he
	}
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return &HostError{Class: ClassTimeout, Err: err}
	case strings.Contains(fmt.Sprint(err), "unable to authenticate"):
		return &HostError{Class: ClassAuth, Err: err}
	case errors.Is(err, context.Canceled):
		return &HostError{Class: ClassRemoteFailed, Err: err}
	}
	return &HostError{Class: ClassUnreachable, Err: err}
}

// session runs commands on a connected host.
type session struct {
	client *ssh.Client
	become bool
}

func (s *session) output(ctx context.Context, script string) ([]byte, error) {
	out, _, err := s.run(ctx, wrap(script, s.become), maxStream)
	return out, err
}

// maxStream caps one host's stream (a real host's is about 1 MiB).
const maxStream = 64 << 20

func (s *session) run(ctx context.Context, command string, limit int64) ([]byte, []byte, error) {
	sess, err := s.client.NewSession()
	if err != nil {
		return nil, nil, err
	}
	defer sess.Close()
	var stdout, stderr capped
	stdout.max, stderr.max = limit, 64<<10
	sess.Stdout, sess.Stderr = &stdout, &stderr
	done := make(chan error, 1)
	go func() { done <- sess.Run(command) }()
	select {
	case <-ctx.Done():
		sess.Signal(ssh.SIGKILL)
		sess.Close()
		return nil, nil, ctx.Err()
	case err = <-done:
	}
	if stdout.over {
		return nil, nil, fmt.Errorf("the host sent more than %d bytes", limit)
	}
	var exit *ssh.ExitError
	if errors.As(err, &exit) {
		return stdout.Bytes(), stderr.Bytes(), &remoteExit{status: exit.ExitStatus(), msg: firstLine(stderr.Bytes())}
	}
	return stdout.Bytes(), stderr.Bytes(), err
}

type remoteExit struct {
	status int
	msg    string
}

func (e *remoteExit) Error() string {
	if e.msg != "" {
		return fmt.Sprintf("exit status %d: %s", e.status, e.msg)
	}
	return fmt.Sprintf("exit status %d", e.status)
}

func (s *session) stream(ctx context.Context, script string) (io.ReadCloser, error) {
	sess, err := s.client.NewSession()
	if err != nil {
		return nil, err
	}
	out, err := sess.StdoutPipe()
	if err != nil {
		sess.Close()
		return nil, err
	}
	var stderr capped
	stderr.max = 64 << 10
	sess.Stderr = &stderr
	if err := sess.Start(wrap(script, s.become)); err != nil {
		sess.Close()
		return nil, err
	}
	return &streamReader{r: out, sess: sess, stderr: &stderr}, nil
}

type streamReader struct {
	r      io.Reader
	sess   *ssh.Session
	stderr *capped
}

func (s *streamReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if errors.Is(err, io.EOF) {
		if werr := s.sess.Wait(); werr != nil {
			if msg := firstLine(s.stderr.Bytes()); msg != "" {
				return n, errors.New(msg)
			}
			return n, werr
		}
	}
	return n, err
}

func (s *streamReader) Close() error { return s.sess.Close() }

// runner is collectors.Runner over the session: the same command a local
// collection runs, with the same environment and error wording.
func (s *session) runner(ctx context.Context, name string, args ...string) ([]byte, error) {
	words := []string{"exec", shellQuote(name)}
	for _, a := range args {
		words = append(words, shellQuote(a))
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, stderr, err := s.run(ctx, wrap(strings.Join(words, " "), s.become), 1<<20)
	if err == nil {
		return out, nil
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("%s: timed out after %s", name, 10*time.Second)
	}
	var exit *remoteExit
	if errors.As(err, &exit) {
		if exit.status == 127 {
			return nil, &exec.Error{Name: name, Err: exec.ErrNotFound}
		}
		msg := firstLine(stderr)
		if msg == "" {
			msg = firstLine(out)
		}
		if msg != "" {
			return nil, fmt.Errorf("%s: exit status %d: %s", name, exit.status, msg)
		}
		return nil, fmt.Errorf("%s: exit status %d", name, exit.status)
	}
	return nil, fmt.Errorf("%s: %w", name, err)
}

func firstLine(out []byte) string {
	for _, line := range strings.Split(string(out), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			if len(line) > 200 {
				line = line[:200] + "..."
			}
			return line
		}
	}
	return ""
}

type capped struct {
	bytes.Buffer
	max  int64
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	room := c.max - int64(c.Len())
	if int64(len(p)) > room {
		c.over = true
		p = p[:max(room, 0)]
	}
	c.Buffer.Write(p)
	return len(p), nil
}
