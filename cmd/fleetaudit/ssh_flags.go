package main

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/fleetaudit/fleetaudit/inventory"
	"github.com/fleetaudit/fleetaudit/sshsource"
	"github.com/fleetaudit/fleetaudit/transport"
)

// addSSHFlags adds the flags of collection over SSH, shared by collect
// --inventory and audit --inventory.
func addSSHFlags(f *pflag.FlagSet) {
	f.Int("parallel", 50, "SSH hosts collected at once")
	f.Duration("host-timeout", 2*time.Minute, "time budget of one host's collection over SSH")
	f.Duration("connect-timeout", 10*time.Second, "time budget of one SSH connection and handshake")
	f.Int("retries", 2, "further tries of a host whose connection was reset")
	f.String("shard", "", "only shard i of n of the hosts: the inventory's, and audit's snapshots and nodes (i/n, hosts split by a hash of their name)")
	f.StringSlice("known-hosts", nil, "known_hosts file (repeatable; default ~/.ssh/known_hosts)")
	f.Bool("accept-new-host-keys", false, "record the key of a host not in known_hosts, as ssh's StrictHostKeyChecking=accept-new; a changed key still fails")
	f.StringSliceP("identity", "i", nil, "private key file offered to every host (repeatable), after the inventory's and ~/.ssh/config's")
	f.String("ssh-config", "", "ssh_config file for User, Port, HostName, IdentityFile, ProxyJump (default ~/.ssh/config; none to read none)")
	f.String("jump", "", "ProxyJump host for hosts without one ([user@]host[:port][,...])")
	f.String("ssh-user", "", "user for hosts whose inventory and ssh_config name none (default: $USER)")
}

// shardOf keeps the inventory hosts of --shard.
func (a *app) shardOf(inv *inventory.Inventory) error {
	spec := a.v.GetString("shard")
	if spec == "" || inv == nil {
		return nil
	}
	sh, err := sshsource.ParseShard(spec)
	if err != nil {
		return usageError{fmt.Errorf("--shard: %w", err)}
	}
	inv.Hosts = slices.DeleteFunc(inv.Hosts, func(h inventory.Host) bool { return !sh.Has(h.Name) })
	return nil
}

// sshDialer builds the dialer of --inventory hosts from the flags.
func (a *app) sshDialer(noExec bool) (*sshsource.Dialer, error) {
	v := a.v
	home := a.getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	opts := sshsource.Options{
		KnownHosts:     v.GetStringSlice("known-hosts"),
		AcceptNew:      v.GetBool("accept-new-host-keys"),
		IdentityFiles:  v.GetStringSlice("identity"),
		AgentSocket:    a.getenv("SSH_AUTH_SOCK"),
		Jump:           v.GetString("jump"),
		ConnectTimeout: v.GetDuration("connect-timeout"),
		Retries:        v.GetInt("retries"),
		User:           v.GetString("ssh-user"),
		NoExec:         noExec,
		Version:        version,
		Home:           home,
	}
	if opts.Retries < 0 || opts.Retries > 10 {
		return nil, usageError{fmt.Errorf("--retries %d: want 0 to 10", opts.Retries)}
	}
	cfgFile := v.GetString("ssh-config")
	if cfgFile == "" && home != "" {
		cfgFile = home + "/.ssh/config"
		if _, err := os.Stat(cfgFile); err != nil {
			cfgFile = "none"
		}
	}
	if cfgFile != "none" {
		cfg, err := sshsource.ReadConfig(cfgFile)
		if err != nil {
			return nil, inputError{fmt.Errorf("--ssh-config: %w", err)}
		}
		opts.Config = cfg
	}
	if fd := terminalFD(a.in); fd >= 0 {
		// An encrypted key asks once, on the terminal; the passphrase is
		// never echoed, logged or kept after the key is decrypted.
		opts.Passphrase = func(file string) ([]byte, error) {
			fmt.Fprintf(a.err, "Passphrase for %s: ", file)
			defer fmt.Fprintln(a.err)
			return term.ReadPassword(fd)
		}
	}
	d := sshsource.NewDialer(opts)
	if err := d.CheckFiles(); err != nil {
		d.Close()
		return nil, inputError{err}
	}
	return d, nil
}

// sshProgress shows done / failed / rate / ETA on a terminal (nothing
// otherwise) and keeps each failure for the final account.
type sshProgress struct {
	bar      *progressbar.ProgressBar
	failures []sshsource.Result
	total    int
	// sessions are the commands the hosts ran: one stream each, and each
	// fetch after it.
	sessions, read int64
}

func (a *app) newSSHProgress(total int) *sshProgress {
	p := &sshProgress{total: total}
	if terminalFD(a.err) >= 0 && total > 0 {
		p.bar = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(a.err),
			progressbar.OptionSetDescription("ssh"),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString("hosts"),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionClearOnFinish(),
			progressbar.OptionThrottle(100*time.Millisecond),
		)
	}
	return p
}

func (p *sshProgress) done(r sshsource.Result, pr sshsource.Progress) {
	p.sessions += r.Sessions
	if r.Sessions > 0 {
		p.read++
	}
	if r.Err != nil {
		p.failures = append(p.failures, r)
	}
	if p.bar != nil {
		p.bar.Describe(fmt.Sprintf("ssh (%d failed)", pr.Failed))
		p.bar.Add(1)
	}
}

// account writes every host that was not read in full, and why.
func (p *sshProgress) account(w io.Writer) {
	if p.bar != nil {
		p.bar.Finish()
	}
	if p.total == 0 {
		return
	}
	slices.SortFunc(p.failures, func(a, b sshsource.Result) int { return cmp.Compare(a.Host.Name, b.Host.Name) })
	failed, interrupted := 0, 0
	for _, r := range p.failures {
		switch r.Err.Class {
		case sshsource.ClassPartial:
		case sshsource.ClassInterrupted:
			interrupted++
			failed++
		default:
			failed++
		}
	}
	fmt.Fprintf(w, "ssh: %d hosts: %d read, %d read in part, %d not read", p.total, p.total-len(p.failures), len(p.failures)-failed, failed)
	if p.read > 0 {
		fmt.Fprintf(w, "; %d commands run (%.2f a host)", p.sessions, float64(p.sessions)/float64(p.read))
	}
	fmt.Fprintln(w)
	for _, r := range p.failures {
		if r.Err.Class != sshsource.ClassInterrupted {
			fmt.Fprintf(w, "  %-24s %-18s %s\n", r.Host.Name, r.Err.Class, r.Err.Err)
		}
	}
	if interrupted > 0 {
		fmt.Fprintf(w, "  interrupted: %d hosts stopped or not started\n", interrupted)
	}
}

// transports are the transports that read hosts (transport.For), set up
// from the flags: the one place in cmd where a transport with settings is
// added. ssh is the SSH one, nil when no host is read over SSH.
func (a *app) transports(hosts []inventory.Host, noExec bool) (set transport.Set, ssh *sshsource.Transport, progress *sshProgress, err error) {
	set = transport.Set{}
	if ssh, progress, err = a.sshTransport(hosts, noExec); ssh != nil {
		set[transport.SSH] = ssh
	}
	return set, ssh, progress, err
}

// sshTransport sets up the SSH transport of the hosts read over SSH among
// hosts; nil when none is.
func (a *app) sshTransport(hosts []inventory.Host, noExec bool) (*sshsource.Transport, *sshProgress, error) {
	total := 0
	for _, h := range hosts {
		if name, _ := transport.For(h); name == transport.SSH {
			total++
		}
	}
	if total == 0 {
		return nil, nil, nil
	}
	parallel := a.v.GetInt("parallel")
	if parallel < 1 {
		return nil, nil, usageError{fmt.Errorf("--parallel %d: want at least 1", parallel)}
	}
	d, err := a.sshDialer(noExec)
	if err != nil {
		return nil, nil, err
	}
	p := a.newSSHProgress(total)
	return &sshsource.Transport{Dialer: d, Timeout: a.v.GetDuration("host-timeout"), Total: total, Done: p.done}, p, nil
}
