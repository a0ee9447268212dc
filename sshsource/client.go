package sshsource

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	sshconfig "github.com/kevinburke/ssh_config"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/fleetaudit/fleetaudit/internal/safeio"
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
	// khCheck checks known_hosts as read (nil: none exists); reread
	// after accept-new appends to it.
	khCheck  ssh.HostKeyCallback
	khLoaded bool
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

// keyProblems says which of a hop's key files could not be used, for its
// authentication failure's message: the file and why, never its contents.
// A default identity (~/.ssh/id_*) that does not exist is no problem, as
// for ssh; a file named in the inventory, ssh_config or --identity is.
func (d *Dialer) keyProblems(hop endpoint) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	seen := map[string]bool{}
	for _, file := range hop.identites {
		err := d.keyErrs[file]
		if err == nil || seen[file] || hop.defaultIDs && errors.Is(err, fs.ErrNotExist) {
			continue
		}
		seen[file] = true
		var missing *ssh.PassphraseMissingError
		if errors.As(err, &missing) {
			out = append(out, file+": encrypted, and no passphrase could be asked (add it to ssh-agent)")
			continue
		}
		out = append(out, err.Error())
	}
	return strings.Join(out, "; ")
}

// CheckFiles reads the files every host uses (known_hosts, the identity
// files of Options) before any host is dialed, so that one that cannot be
// used fails the run once, naming it, instead of every host.
func (d *Dialer) CheckFiles() error {
	if _, err := d.knownHostsCheck(); err != nil {
		var he *HostError
		if errors.As(err, &he) {
			return he.Err
		}
		return err
	}
	for _, f := range d.opts.IdentityFiles {
		d.signersOf(f)
		d.mu.Lock()
		err := d.keyErrs[f]
		d.mu.Unlock()
		var missing *ssh.PassphraseMissingError
		if err != nil && !errors.As(err, &missing) {
			return err
		}
	}
	return nil
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
	// defaultIDs: identites are ssh's default files, none being named.
	defaultIDs bool
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
		e.defaultIDs = true
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
	// ClassLocalFile: a file of this machine the connection needs
	// (known_hosts) cannot be used; the host was not contacted.
	ClassLocalFile = "local file"
	// ClassLimit is a host that sent more than a limit allows.
	ClassLimit = "over limit"
	// ClassInterrupted is a host whose run was interrupted (a signal).
	ClassInterrupted = "interrupted"
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
			if classify(err).Class == ClassAuth {
				if p := d.keyProblems(hop); p != "" {
					err = fmt.Errorf("%w (keys not used: %s)", err, p)
				}
			}
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

// signersOf loads a key file once per run, through safeio (a FIFO or a
// device is refused, not read). The error of a file that cannot be used,
// missing included, is kept for the message of a host that offered it
// (keyProblems), never its contents.
func (d *Dialer) signersOf(file string) []ssh.Signer {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s, ok := d.signers[file]; ok {
		return s
	}
	var out []ssh.Signer
	data, err := readKey(file)
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
		} else {
			err = fmt.Errorf("identity file %s: %w", file, err)
		}
		clear(data)
	}
	if err != nil {
		d.keyErrs[file] = err
	}
	d.signers[file] = out
	return out
}

// hostKeyCallback checks keys against known_hosts; for a host already
// known it offers only the algorithms known_hosts has, as OpenSSH does,
// so a host known by its ed25519 key is not failed for showing RSA.
func (d *Dialer) hostKeyCallback(hop endpoint) (ssh.HostKeyCallback, []string, error) {
	check, err := d.knownHostsCheck()
	if err != nil {
		return nil, nil, err
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

// knownHostsCheck reads the known_hosts files once, and again after
// accept-new has appended to them.
func (d *Dialer) knownHostsCheck() (ssh.HostKeyCallback, error) {
	d.khMu.Lock()
	defer d.khMu.Unlock()
	if !d.khLoaded {
		check, err := knownHosts(d.opts.KnownHosts)
		if err != nil {
			return nil, err
		}
		d.khCheck, d.khLoaded = check, true
	}
	return d.khCheck, nil
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
	// Non-blocking: a FIFO put there fails at once (ENXIO) rather than
	// waiting for a reader; only a regular file is appended to.
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0o600)
	if err != nil {
		return fmt.Errorf("recording the host key of %s in %s: %w", hostname, file, err)
	}
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = fmt.Errorf("%w (%s)", safeio.ErrNotRegular, safeio.Kind(info.Mode()))
		}
		return fmt.Errorf("recording the host key of %s in %s: %w", hostname, file, err)
	}
	_, werr := fmt.Fprintln(f, line)
	if err := errors.Join(werr, f.Close()); err != nil {
		return fmt.Errorf("recording the host key of %s in %s: %w", hostname, file, err)
	}
	d.recorded[line] = true
	d.khLoaded = false
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
	case errors.Is(err, errLimit):
		return &HostError{Class: ClassLimit, Err: err}
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

// command is one remote command in flight: its standard output read as it
// arrives, its standard error kept up to a cap. Its context ending (a host
// timeout, an interrupt, standard error past its cap) or close ends the
// remote command's process group (see wrap).
type command struct {
	sess   *ssh.Session
	stdin  io.WriteCloser
	stdout io.Reader
	stderr *limitedBuffer
	ctx    context.Context
	cancel context.CancelCauseFunc
	stop   func() bool
	killed sync.Once
	lim    limits
	eof    bool // standard output ended
}

func (s *session) start(ctx context.Context, cmd string) (*command, error) {
	lim := defaultLimits
	sess, err := s.client.NewSession()
	if err != nil {
		return nil, err
	}
	// Held open while the command is wanted: its end is the remote
	// command's (an empty Stdin would send EOF at once).
	stdin, err := sess.StdinPipe()
	if err != nil {
		sess.Close()
		return nil, err
	}
	stdout, err := sess.StdoutPipe()
	if err != nil {
		sess.Close()
		return nil, err
	}
	cctx, cancel := context.WithCancelCause(ctx)
	stderr := &limitedBuffer{max: lim.stderr, keep: 64 << 10, over: func() {
		cancel(overLimit("the host sent more than %s on standard error", size(lim.stderr)))
	}}
	sess.Stderr = stderr
	if err := sess.Start(cmd); err != nil {
		cancel(nil)
		sess.Close()
		return nil, err
	}
	c := &command{sess: sess, stdin: stdin, stdout: stdout, stderr: stderr, ctx: cctx, cancel: cancel, lim: lim}
	c.stop = context.AfterFunc(cctx, c.kill)
	return c, nil
}

// kill ends the remote command: EOF on its standard input ends its process
// group (sshd passes no signal to a forced command, nor before OpenSSH
// 7.9), the signal is for an sshd that passes it, and the channel closes.
func (c *command) kill() {
	c.killed.Do(func() {
		c.stdin.Close()
		c.sess.Signal(ssh.SIGKILL)
		c.sess.Close()
	})
}

// Read reads standard output; once the context has ended, its cause.
func (c *command) Read(p []byte) (int, error) {
	if c.ctx.Err() != nil {
		return 0, context.Cause(c.ctx)
	}
	n, err := c.stdout.Read(p)
	if err != nil && c.ctx.Err() != nil {
		return n, context.Cause(c.ctx)
	}
	c.eof = c.eof || errors.Is(err, io.EOF)
	return n, err
}

// wait returns how the command ended: nil, a remoteExit, or why it was
// ended.
func (c *command) wait() error {
	err := c.sess.Wait()
	if c.ctx.Err() != nil {
		return context.Cause(c.ctx)
	}
	var exit *ssh.ExitError
	if errors.As(err, &exit) {
		return &remoteExit{status: exit.ExitStatus(), msg: firstLine(c.stderr.Bytes())}
	}
	return err
}

func (c *command) close() {
	c.stop()
	c.kill()
	c.cancel(nil)
}

func (s *session) run(ctx context.Context, cmd string, limit int64) ([]byte, []byte, error) {
	c, err := s.start(ctx, cmd)
	if err != nil {
		return nil, nil, err
	}
	defer c.close()
	out, err := io.ReadAll(io.LimitReader(c, limit+1))
	if err != nil {
		return nil, nil, err
	}
	if int64(len(out)) > limit {
		return nil, nil, overLimit("the host sent more than %s on standard output", size(limit))
	}
	err = c.wait()
	var exit *remoteExit
	if errors.As(err, &exit) {
		return out, c.stderr.Bytes(), exit
	}
	return out, c.stderr.Bytes(), err
}

// load streams a snapshot command's output into t as it arrives. A stream
// that is not whole when the command ended says how it ended (exit: a
// non-zero status), with its standard error.
func (s *session) load(ctx context.Context, cmd string, t *tree) (stderr []byte, exit *remoteExit, err error) {
	c, err := s.start(ctx, cmd)
	if err != nil {
		return nil, nil, err
	}
	defer c.close()
	err = t.loadFrom(c)
	if err != nil && errors.Is(err, errStream) && c.eof {
		// The command printed what it could: its exit says why.
		if werr := c.wait(); werr != nil && !errors.As(werr, &exit) {
			return c.stderr.Bytes(), nil, werr
		}
	}
	return c.stderr.Bytes(), exit, err
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
	c, err := s.start(ctx, wrap(script, s.become))
	if err != nil {
		return nil, err
	}
	// What a read script sends at most: chatter, the marker, the file.
	limit := c.lim.preamble + int64(len(startMarker)) + maxLibraryRead
	return &streamReader{c: c, r: io.LimitReader(c, limit+1), limit: limit}, nil
}

type streamReader struct {
	c     *command
	r     io.Reader
	n     int64
	limit int64
}

func (s *streamReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	s.n += int64(n)
	if s.n > s.limit {
		return 0, overLimit("the host sent more than %s for one file", size(s.limit))
	}
	if errors.Is(err, io.EOF) {
		if werr := s.c.wait(); werr != nil {
			var exit *remoteExit
			if errors.As(werr, &exit) && exit.msg != "" {
				return n, errors.New(exit.msg)
			}
			return n, werr
		}
	}
	return n, err
}

func (s *streamReader) Close() error {
	s.c.close()
	return nil
}

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

// limitedBuffer keeps the first keep bytes written and calls over once
// more than max have come. It has only Write, so io.Copy cannot bypass it.
type limitedBuffer struct {
	mu        sync.Mutex
	buf       []byte
	n         int64
	keep, max int64
	over      func()
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.keep - int64(len(b.buf)); room > 0 {
		b.buf = append(b.buf, p[:min(int64(len(p)), room)]...)
	}
	b.n += int64(len(p))
	if b.n > b.max && b.over != nil {
		b.over()
		b.over = nil
	}
	return len(p), nil
}

func (b *limitedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf)
}
