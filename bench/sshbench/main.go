// Command sshbench measures collection over SSH against one real sshd on
// loopback, with N inventory hosts and P in flight, side by side in one
// run: fleetaudit's full snapshot per host, one bare x/crypto/ssh exec per
// host, OpenSSH's ssh fanned out by xargs, and Ansible's raw and setup
// modules. It prints hosts/s, the ratios and each tool's peak memory.
//
//	go run ./bench/sshbench -fleetaudit bin/fleetaudit -hosts 200 -parallel 50
package main

import (
	"bytes"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
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
	failed string
}

func (m measure) rate() float64 { return float64(m.hosts) / m.wall.Seconds() }

func main() {
	bin := flag.String("fleetaudit", "bin/fleetaudit", "fleetaudit binary")
	hosts := flag.Int("hosts", 200, "inventory hosts")
	parallel := flag.Int("parallel", 50, "hosts in flight")
	root := flag.String("root", "testdata/hosts/gpu-node", "fixture root every host serves")
	ansibleHosts := flag.Int("ansible-setup-hosts", 0, "hosts for ansible -m setup (0: -hosts)")
	execMode := flag.Bool("exec-per-host", false, "internal: one x/crypto exec per host")
	flag.Parse()
	if *execMode {
		execPerHost(flag.Args())
		return
	}
	t := &tb{}
	defer func() {
		for i := len(t.cleanups) - 1; i >= 0; i-- {
			t.cleanups[i]()
		}
	}()
	absRoot, _ := filepath.Abs(*root)
	absBin, _ := filepath.Abs(*bin)
	s := sshdtest.Start(t)
	dir := t.TempDir()
	file := filepath.Join(absRoot, "etc/hostname")

	var inv, ini strings.Builder
	inv.WriteString("hosts:\n")
	ini.WriteString("[fleet]\n")
	for i := 1; i <= *hosts; i++ {
		fmt.Fprintf(&inv, "  h%03d: {address: 127.0.0.1, port: %d, user: %s, identity: %s, remote_root: %s}\n", i, s.Port, s.User, s.ClientKey, absRoot)
		fmt.Fprintf(&ini, "h%03d ansible_host=127.0.0.1\n", i)
	}
	fmt.Fprintf(&ini, "[fleet:vars]\nansible_port=%d\nansible_user=%s\nansible_ssh_private_key_file=%s\nansible_python_interpreter=/usr/bin/python3\n", s.Port, s.User, s.ClientKey)
	invFile, iniFile := filepath.Join(dir, "inventory.yaml"), filepath.Join(dir, "hosts.ini")
	os.WriteFile(invFile, []byte(inv.String()), 0o600)
	os.WriteFile(iniFile, []byte(ini.String()), 0o600)
	out := filepath.Join(dir, "snapshots")
	os.Mkdir(out, 0o755)
	env := append(os.Environ(), "HOME="+s.Dir)

	sshArgs := fmt.Sprintf("-F /dev/null -o BatchMode=yes -o UserKnownHostsFile=%s -o ControlMaster=no -o ControlPath=none -i %s -p %d", s.KnownHosts, s.ClientKey, s.Port)
	ansibleEnv := append(env, "ANSIBLE_SSH_ARGS=-o ControlMaster=no -o ControlPath=none",
		"ANSIBLE_SSH_COMMON_ARGS=", "ANSIBLE_HOST_KEY_CHECKING=False", "ANSIBLE_REMOTE_TMP="+filepath.Join(dir, "ansible-tmp"),
		"ANSIBLE_LOCAL_TEMP="+filepath.Join(dir, "ansible-local"), "ANSIBLE_GATHERING=explicit", "ANSIBLE_STDOUT_CALLBACK=oneline",
		"ANSIBLE_FORKS="+fmt.Sprint(*parallel))
	setupHosts := *hosts
	if *ansibleHosts > 0 && *ansibleHosts < *hosts {
		setupHosts = *ansibleHosts
	}
	limit := fmt.Sprintf("all[0:%d]", setupHosts-1)
	runs := []struct {
		name  string
		hosts int
		cmd   []string
		env   []string
	}{
		{"fleetaudit collect (full snapshot)", *hosts, []string{absBin, "collect", "--inventory", invFile, "--out", out, "--parallel", fmt.Sprint(*parallel), "--known-hosts", s.KnownHosts, "--ssh-config", "none"}, env},
		{"x/crypto/ssh: one exec per host", *hosts, []string{os.Args[0], "-exec-per-host", s.Addr, s.User, s.ClientKey, s.KnownHosts, fmt.Sprint(*hosts), fmt.Sprint(*parallel), "cat " + file}, env},
		{"OpenSSH: ssh HOST cat FILE, xargs -P", *hosts, []string{"sh", "-c", fmt.Sprintf("seq %d | xargs -P %d -I{} ssh %s %s@127.0.0.1 cat %s >/dev/null", *hosts, *parallel, sshArgs, s.User, file)}, env},
		{"ansible -m raw (cat FILE)", *hosts, []string{"ansible", "-i", iniFile, "all", "-m", "raw", "-a", "cat " + file, "-f", fmt.Sprint(*parallel)}, ansibleEnv},
		{"ansible -m setup", setupHosts, []string{"ansible", "-i", iniFile, limit, "-m", "setup", "-f", fmt.Sprint(*parallel)}, ansibleEnv},
	}
	var results []measure
	for _, r := range runs {
		m := measure{name: r.name, hosts: r.hosts}
		cmd := exec.Command(r.cmd[0], r.cmd[1:]...)
		cmd.Env = r.env
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = nil, &stderr
		if r.name == "ansible -m raw (cat FILE)" || r.name == "ansible -m setup" {
			cmd.Stdout = &stderr
		}
		before := sshdCPU(s.Dir)
		start := time.Now()
		err := cmd.Run()
		m.wall = time.Since(start)
		m.remote = sshdCPU(s.Dir) - before
		m.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			m.maxRSS = ru.Maxrss
		}
		if err != nil {
			m.failed = fmt.Sprintf("%v: %s", err, lastLines(stderr.String(), 3))
		}
		results = append(results, m)
		fmt.Fprintf(os.Stderr, "%-40s %4d hosts %7.2fs\n", m.name, m.hosts, m.wall.Seconds())
	}
	ref := results[0].rate()
	fmt.Printf("\nSSH collection, %d hosts on loopback, %d in flight (one sshd; sshd's fork and auth per connection is the floor)\n\n", *hosts, *parallel)
	fmt.Printf("| %-40s | %6s | %8s | %8s | %11s | %14s | %-22s | %s\n", "tool", "hosts", "hosts/s", "peak MiB", "client CPU", "sshd CPU/host", "fleetaudit is x faster", "")
	fmt.Printf("|%s|%s|%s|%s|%s|%s|%s|\n", strings.Repeat("-", 42), strings.Repeat("-", 8), strings.Repeat("-", 10), strings.Repeat("-", 10), strings.Repeat("-", 13), strings.Repeat("-", 16), strings.Repeat("-", 24))
	for _, m := range results {
		note := ""
		if m.failed != "" {
			note = "FAILED: " + m.failed
		}
		fmt.Printf("| %-40s | %6d | %8.1f | %8.1f | %10.2fs | %12.1fms | %22.2f | %s\n", m.name, m.hosts, m.rate(), float64(m.maxRSS)/1024,
			m.cpu.Seconds(), float64(m.remote.Milliseconds())/float64(m.hosts), ref/m.rate(), note)
	}
	fmt.Printf("\nfleetaudit's full snapshot is %.0f%% of one bare exec per host, %.1fx ansible -m setup\n",
		100*ref/results[1].rate(), ref/results[4].rate())
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
