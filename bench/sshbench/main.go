// Command sshbench measures collection over SSH against one real sshd on
// loopback, with N inventory hosts and P in flight, side by side in one
// run: fleetaudit's full snapshot per host (and an older build's, with
// -old), one bare x/crypto/ssh exec per host, OpenSSH's ssh fanned out by
// xargs, and Ansible's raw and setup modules. Every host reads the live
// "/" (or -root, through remote_root). With -login-delay, a second sshd
// whose login shell takes that long per command (a .bashrc running conda
// init) runs the same. It prints hosts/s, the commands sshd ran per host
// (counted by the login shell's rc file), the ratios and peak memory.
//
//	go run ./bench/sshbench -fleetaudit bin/fleetaudit -hosts 200 -parallel 10,50 -login-delay 1s
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/fleetaudit/fleetaudit/internal/sshdtest"
)

// tb runs sshdtest outside a test.
type tb struct{ cleanups []func() }

func (*tb) Helper()                   {}
func (*tb) Fatal(args ...any)         { log.Fatal(args...) }
func (*tb) Fatalf(f string, a ...any) { log.Fatalf(f, a...) }
func (*tb) Skip(args ...any)          { log.Fatal(args...) }
func (t *tb) Cleanup(f func())        { t.cleanups = append(t.cleanups, f) }
func (t *tb) TempDir() string {
	d, err := os.MkdirTemp("", "sshbench")
	if err != nil {
		log.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

type measure struct {
	name   string
	hosts  int
	wall   time.Duration
	maxRSS int64         // KiB
	cpu    time.Duration // the client's user+sys
	remote time.Duration // sshd and what it ran, user+sys
	execs  int           // commands sshd ran, -1 when not counted
	// procErrs counts the processes collector's errors in fleetaudit's
	// snapshots (a process that exited mid-collection is none).
	procErrs int
	failed   string
}

func (m measure) rate() float64 { return float64(m.hosts) / m.wall.Seconds() }

type config struct {
	bin, old        string
	hosts, oldHosts int
	setupHosts      int
	root            string
	hostTimeout     time.Duration
	noAnsible       bool
	parallel        []int
	cleanup         *tb
}

func main() {
	var c config
	flag.StringVar(&c.bin, "fleetaudit", "bin/fleetaudit", "fleetaudit binary")
	flag.StringVar(&c.old, "old", "", "an older fleetaudit binary, measured beside (with -old-hosts hosts)")
	flag.IntVar(&c.hosts, "hosts", 200, "inventory hosts")
	flag.IntVar(&c.oldHosts, "old-hosts", 50, "hosts for -old (0: -hosts)")
	par := flag.String("parallel", "10,50", "hosts in flight: one run per value")
	flag.StringVar(&c.root, "root", "/", `the tree every host serves: "/" is the live host (commands run too), anything else a fixture read through remote_root`)
	flag.IntVar(&c.setupHosts, "ansible-setup-hosts", 0, "hosts for ansible -m setup (0: -hosts)")
	flag.DurationVar(&c.hostTimeout, "host-timeout", 2*time.Minute, "fleetaudit's --host-timeout")
	delay := flag.Duration("login-delay", 0, "also run behind a login shell that takes this long per command (0: only a fast one)")
	flag.BoolVar(&c.noAnsible, "no-ansible", false, "skip Ansible (not installed)")
	execMode := flag.Bool("exec-per-host", false, "internal: one x/crypto exec per host")
	flag.Parse()
	if *execMode {
		execPerHost(flag.Args())
		return
	}
	for _, p := range strings.Split(*par, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 1 {
			log.Fatalf("-parallel %q: want a list of counts, e.g. 10,50", *par)
		}
		c.parallel = append(c.parallel, n)
	}
	c.cleanup = &tb{}
	defer func() {
		for i := len(c.cleanup.cleanups) - 1; i >= 0; i-- {
			c.cleanup.cleanups[i]()
		}
	}()
	if c.root != "/" {
		c.root, _ = filepath.Abs(c.root)
	}
	c.bin, _ = filepath.Abs(c.bin)
	if c.old != "" {
		c.old, _ = filepath.Abs(c.old)
	}
	if c.oldHosts <= 0 || c.oldHosts > c.hosts {
		c.oldHosts = c.hosts
	}
	if c.setupHosts <= 0 || c.setupHosts > c.hosts {
		c.setupHosts = c.hosts
	}
	type summary struct {
		shell    string
		parallel int
		results  []measure
	}
	var all []summary
	shells := []time.Duration{0}
	if *delay > 0 {
		shells = append(shells, *delay)
	}
	for _, d := range shells {
		s := sshdtest.StartWith(c.cleanup, sshdtest.Config{LoginRC: loginRC(d)})
		shell := "login shell starts at once"
		if d > 0 {
			shell = fmt.Sprintf("login shell takes %s per command", d)
		}
		for _, p := range c.parallel {
			all = append(all, summary{shell, p, c.run(s, p, d)})
		}
	}
	fmt.Printf("\nSSH collection of %q on loopback (one sshd; its fork and auth per connection is the floor); fleetaudit --host-timeout %s\n", c.root, c.hostTimeout)
	for _, sm := range all {
		fmt.Printf("\n%s, %d in flight\n\n", sm.shell, sm.parallel)
		fmt.Printf("| %-40s | %5s | %8s | %10s | %8s | %10s | %12s | %13s | %s\n", "tool", "hosts", "hosts/s", "execs/host", "peak MiB", "client CPU", "sshd CPU/host", "fleetaudit x", "")
		fmt.Printf("|%s|%s|%s|%s|%s|%s|%s|%s|\n", strings.Repeat("-", 42), strings.Repeat("-", 7), strings.Repeat("-", 10), strings.Repeat("-", 12), strings.Repeat("-", 10), strings.Repeat("-", 12), strings.Repeat("-", 14), strings.Repeat("-", 15))
		ref := sm.results[0].rate()
		for _, m := range sm.results {
			note := ""
			if m.procErrs > 0 {
				note = fmt.Sprintf("%d processes errors ", m.procErrs)
			}
			if m.failed != "" {
				note += "FAILED: " + m.failed
			}
			execs := "-"
			if m.execs >= 0 {
				execs = fmt.Sprintf("%.2f", float64(m.execs)/float64(m.hosts))
			}
			fmt.Printf("| %-40s | %5d | %8.2f | %10s | %8.1f | %9.2fs | %11.1fms | %13.2f | %s\n", m.name, m.hosts, m.rate(), execs, float64(m.maxRSS)/1024,
				m.cpu.Seconds(), float64(m.remote.Milliseconds())/float64(m.hosts), ref/m.rate(), note)
		}
	}
	fmt.Println()
	for _, sm := range all {
		byName := map[string]measure{}
		for _, m := range sm.results {
			byName[m.name] = m
		}
		fa := sm.results[0]
		line := fmt.Sprintf("%s, %d in flight: fleetaudit %.1f hosts/s, %.2f execs/host", sm.shell, sm.parallel, fa.rate(), float64(fa.execs)/float64(fa.hosts))
		for _, other := range []string{nameOpenSSH, nameSetup, nameOld} {
			if m, ok := byName[other]; ok && m.failed == "" {
				line += fmt.Sprintf("; %.2fx %s", fa.rate()/m.rate(), other)
			}
		}
		fmt.Println(line)
	}
}

const (
	nameFleetaudit = "fleetaudit collect (full snapshot)"
	nameOld        = "fleetaudit -old (full snapshot)"
	nameExec       = "x/crypto/ssh: one exec per host"
	nameOpenSSH    = "OpenSSH: ssh HOST cat FILE, xargs -P"
	nameRaw        = "ansible -m raw (cat FILE)"
	nameSetup      = "ansible -m setup"
)

// loginRC is the rc file text of a login shell taking d per command.
func loginRC(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return fmt.Sprintf("sleep %.3f", d.Seconds())
}

// run measures every tool against s with parallel in flight.
func (c *config) run(s *sshdtest.Server, parallel int, delay time.Duration) []measure {
	dir := c.cleanup.TempDir()
	file := filepath.Join(c.root, "etc/hostname")
	inventory := func(n int) string {
		var inv strings.Builder
		inv.WriteString("hosts:\n")
		for i := 1; i <= n; i++ {
			fmt.Fprintf(&inv, "  h%03d: {address: 127.0.0.1, port: %d, user: %s, identity: %s", i, s.Port, s.User, s.ClientKey)
			if c.root != "/" {
				fmt.Fprintf(&inv, ", remote_root: %s", c.root)
			}
			inv.WriteString("}\n")
		}
		f := filepath.Join(dir, fmt.Sprintf("inventory-%d.yaml", n))
		os.WriteFile(f, []byte(inv.String()), 0o600)
		return f
	}
	var ini strings.Builder
	ini.WriteString("[fleet]\n")
	for i := 1; i <= c.hosts; i++ {
		fmt.Fprintf(&ini, "h%03d ansible_host=127.0.0.1\n", i)
	}
	fmt.Fprintf(&ini, "[fleet:vars]\nansible_port=%d\nansible_user=%s\nansible_ssh_private_key_file=%s\nansible_python_interpreter=/usr/bin/python3\n", s.Port, s.User, s.ClientKey)
	iniFile := filepath.Join(dir, "hosts.ini")
	os.WriteFile(iniFile, []byte(ini.String()), 0o600)
	env := append(os.Environ(), "HOME="+s.Dir)
	sshArgs := fmt.Sprintf("-F /dev/null -o BatchMode=yes -o UserKnownHostsFile=%s -o ControlMaster=no -o ControlPath=none -i %s -p %d", s.KnownHosts, s.ClientKey, s.Port)
	ansibleEnv := append(env, "ANSIBLE_SSH_ARGS=-o ControlMaster=no -o ControlPath=none",
		"ANSIBLE_SSH_COMMON_ARGS=", "ANSIBLE_HOST_KEY_CHECKING=False", "ANSIBLE_REMOTE_TMP="+filepath.Join(dir, "ansible-tmp"),
		"ANSIBLE_LOCAL_TEMP="+filepath.Join(dir, "ansible-local"), "ANSIBLE_GATHERING=explicit", "ANSIBLE_STDOUT_CALLBACK=oneline",
		"ANSIBLE_FORKS="+fmt.Sprint(parallel), "ANSIBLE_TIMEOUT=60")
	collect := func(bin string, n int) []string {
		out := filepath.Join(dir, fmt.Sprintf("snapshots-%d-%s", n, filepath.Base(bin)))
		os.Mkdir(out, 0o755)
		return []string{bin, "collect", "--inventory", inventory(n), "--out", out, "--parallel", fmt.Sprint(parallel),
			"--host-timeout", c.hostTimeout.String(), "--known-hosts", s.KnownHosts, "--ssh-config", "none"}
	}
	type tool struct {
		name  string
		hosts int
		cmd   []string
		env   []string
	}
	tools := []tool{{nameFleetaudit, c.hosts, collect(c.bin, c.hosts), env}}
	if c.old != "" {
		tools = append(tools, tool{nameOld, c.oldHosts, collect(c.old, c.oldHosts), env})
	}
	tools = append(tools,
		tool{nameExec, c.hosts, []string{os.Args[0], "-exec-per-host", s.Addr, s.User, s.ClientKey, s.KnownHosts, fmt.Sprint(c.hosts), fmt.Sprint(parallel), "cat " + file}, env},
		tool{nameOpenSSH, c.hosts, []string{"sh", "-c", fmt.Sprintf("seq %d | xargs -P %d -I{} ssh %s %s@127.0.0.1 cat %s >/dev/null", c.hosts, parallel, sshArgs, s.User, file)}, env})
	if !c.noAnsible {
		tools = append(tools,
			tool{nameRaw, c.hosts, []string{"ansible", "-i", iniFile, "all", "-m", "raw", "-a", "cat " + file, "-f", fmt.Sprint(parallel)}, ansibleEnv},
			tool{nameSetup, c.setupHosts, []string{"ansible", "-i", iniFile, fmt.Sprintf("all[0:%d]", c.setupHosts-1), "-m", "setup", "-f", fmt.Sprint(parallel)}, ansibleEnv})
	}
	var results []measure
	for _, r := range tools {
		m := measure{name: r.name, hosts: r.hosts, execs: -1}
		cmd := exec.Command(r.cmd[0], r.cmd[1:]...)
		cmd.Env = r.env
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = nil, &stderr
		if strings.HasPrefix(r.name, "ansible") {
			cmd.Stdout = &stderr
		}
		before, execs := sshdCPU(s.Dir), s.Execs()
		start := time.Now()
		err := cmd.Run()
		m.wall = time.Since(start)
		m.remote = sshdCPU(s.Dir) - before
		if s.CountsExecs {
			m.execs = s.Execs() - execs
		}
		m.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			m.maxRSS = ru.Maxrss
		}
		if r.cmd[1] == "collect" {
			m.procErrs = processErrors(r.cmd[5])
		}
		if err != nil {
			m.failed = fmt.Sprintf("%v: %s", err, lastLines(stderr.String(), 3))
		}
		results = append(results, m)
		fmt.Fprintf(os.Stderr, "%-40s %4d hosts %3d in flight %7.2fs (login delay %s)\n", m.name, m.hosts, parallel, m.wall.Seconds(), delay)
	}
	return results
}

// processErrors counts the processes collector's errors in a directory of
// snapshots.
func processErrors(dir string) int {
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	n := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var snap struct {
			Errors []struct{ Collector string } `json:"errors"`
		}
		if json.Unmarshal(data, &snap) != nil {
			continue
		}
		for _, e := range snap.Errors {
			if e.Collector == "processes" {
				n++
			}
		}
	}
	return n
}

// sshdCPU is the CPU time sshd's children (sessions and the commands they
// ran) have used, from the listener's cumulative children times.
func sshdCPU(dir string) time.Duration {
	pid, err := os.ReadFile(filepath.Join(dir, "sshd.pid"))
	if err != nil {
		return 0
	}
	stat, err := os.ReadFile("/proc/" + strings.TrimSpace(string(pid)) + "/stat")
	if err != nil {
		return 0
	}
	// Fields after the command name: state is 3; cutime and cstime 16, 17.
	rest := string(stat[strings.LastIndexByte(string(stat), ')')+2:])
	f := strings.Fields(rest)
	var cu, cs int64
	fmt.Sscan(f[13], &cu)
	fmt.Sscan(f[14], &cs)
	return time.Duration(cu+cs) * time.Second / 100 // USER_HZ
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// execPerHost: addr user key known_hosts hosts parallel command.
func execPerHost(args []string) {
	if len(args) != 7 {
		log.Fatal("exec-per-host: addr user key known_hosts hosts parallel command")
	}
	addr, user, keyFile, kh, command := args[0], args[1], args[2], args[3], args[6]
	var hosts, parallel int
	fmt.Sscan(args[4], &hosts)
	fmt.Sscan(args[5], &parallel)
	data, err := os.ReadFile(keyFile)
	if err != nil {
		log.Fatal(err)
	}
	signer, err := ssh.ParsePrivateKey(data)
	if err != nil {
		log.Fatal(err)
	}
	check, err := knownhosts.New(kh)
	if err != nil {
		log.Fatal(err)
	}
	cfg := &ssh.ClientConfig{User: user, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)}, HostKeyCallback: check, Timeout: 30 * time.Second}
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed := 0
	for range hosts {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			err := func() error {
				c, err := ssh.Dial("tcp", addr, cfg)
				if err != nil {
					return err
				}
				defer c.Close()
				sess, err := c.NewSession()
				if err != nil {
					return err
				}
				defer sess.Close()
				_, err = sess.Output(command)
				return err
			}()
			if err != nil {
				mu.Lock()
				failed++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if failed > 0 {
		log.Fatalf("%d of %d hosts failed", failed, hosts)
	}
}
