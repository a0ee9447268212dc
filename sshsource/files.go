package sshsource

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"

	sshconfig "github.com/kevinburke/ssh_config"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/fleetaudit/fleetaudit/internal/safeio"
)

// Caps on the local files the SSH path reads, each through safeio as the
// collectors' inputs are: a FIFO is never waited on, a device never read
// without a bound.
const (
	maxKeyFile        = 1 << 20
	maxKnownHostsFile = 64 << 20
	maxConfigFile     = 16 << 20
)

// maxIncludeDepth is ssh_config's own bound on nested Include lines.
const maxIncludeDepth = 5

// ReadConfig reads an ssh_config file, and first every file its Include
// lines name: the parser opens those itself, so each is checked here to be a
// regular file within the cap before it does.
func ReadConfig(file string) (*sshconfig.Config, error) {
	data, err := safeio.ReadFile(file, maxConfigFile)
	if err != nil {
		return nil, fileErr("ssh_config", file, err)
	}
	if err := checkIncludes(file, data, 0); err != nil {
		return nil, err
	}
	cfg, err := sshconfig.DecodeBytes(data)
	if err != nil {
		return nil, fmt.Errorf("ssh_config %s: %w", file, err)
	}
	return cfg, nil
}

// checkIncludes reads the files data's Include lines name, resolved as the
// ssh_config parser resolves them, and theirs in turn.
func checkIncludes(file string, data []byte, depth int) error {
	if depth > maxIncludeDepth {
		return nil // the parser refuses this depth itself
	}
	system := strings.HasPrefix(filepath.Clean(file), "/etc/ssh")
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, maxConfigFile)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		key, rest, _ := strings.Cut(line, " ")
		if k, v, ok := strings.Cut(key, "="); ok {
			key, rest = k, v+" "+rest
		}
		if !strings.EqualFold(strings.TrimSpace(key), "include") {
			continue
		}
		rest, _, _ = strings.Cut(rest, "#")
		for _, pattern := range strings.Fields(strings.TrimLeft(rest, " \t=")) {
			matches, err := filepath.Glob(includePath(pattern, system))
			if err != nil {
				return fmt.Errorf("ssh_config %s: Include %s: %w", file, pattern, err)
			}
			for _, m := range matches {
				inc, err := safeio.ReadFile(m, maxConfigFile)
				if err != nil {
					return fmt.Errorf("ssh_config %s: Include: %w", file, fileErr("file", m, err))
				}
				if err := checkIncludes(m, inc, depth+1); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// includePath is where the ssh_config parser looks for an Include pattern.
func includePath(pattern string, system bool) string {
	switch {
	case filepath.IsAbs(pattern):
		return pattern
	case system:
		return filepath.Join("/etc/ssh", pattern)
	}
	home := os.Getenv("HOME")
	if u, err := user.Current(); err == nil {
		home = u.HomeDir // as the parser: the account's, before $HOME
	}
	if rest, ok := strings.CutPrefix(pattern, "~/"); ok {
		return filepath.Join(home, rest)
	}
	return filepath.Join(home, ".ssh", pattern)
}

// readKey reads a private key file.
func readKey(file string) ([]byte, error) {
	data, err := safeio.ReadFile(file, maxKeyFile)
	if err != nil {
		return nil, fileErr("identity file", file, err)
	}
	return data, nil
}

// fileErr names what file is and what is wrong with it, once: safeio's
// errors name the path themselves.
func fileErr(what, file string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == file {
		err = pe.Err
	}
	return fmt.Errorf("%s %s: %w", what, file, err)
}

// knownHosts is the checking of the known_hosts files: each read through
// safeio, a missing one skipped as ssh skips it; nil when none exists.
// knownhosts parses only files it opens itself, so it is handed what was
// read through pipes it opens by their /proc/self/fd (/dev/fd) names,
// nothing written to disk, and its messages get the real names back.
func knownHosts(files []string) (ssh.HostKeyCallback, error) {
	names := map[string]string{}
	var copies []string
	var readers []*os.File
	var wg sync.WaitGroup
	defer func() {
		for _, r := range readers {
			r.Close() // a writer knownhosts did not drain gets EPIPE
		}
		wg.Wait()
	}()
	for _, f := range files {
		data, err := safeio.ReadFile(f, maxKnownHostsFile)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, &HostError{Class: ClassLocalFile, Err: fileErr("known_hosts", f, err)}
		}
		r, w, err := os.Pipe()
		if err != nil {
			return nil, &HostError{Class: ClassLocalFile, Err: fmt.Errorf("known_hosts %s: %w", f, err)}
		}
		readers = append(readers, r)
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.Write(data)
			w.Close()
		}()
		c := fdPath(r)
		names[c] = f
		copies = append(copies, c)
	}
	if len(copies) == 0 {
		return nil, nil
	}
	check, err := knownhosts.New(copies...)
	if err != nil {
		msg := err.Error()
		for c, f := range names {
			msg = strings.ReplaceAll(msg, c+":", f+":")
		}
		return nil, &HostError{Class: ClassLocalFile, Err: fmt.Errorf("known_hosts: %s", msg)}
	}
	return func(hostname string, remote net.Addr, key ssh.PublicKey) error {
		err := check(hostname, remote, key)
		var ke *knownhosts.KeyError
		if errors.As(err, &ke) {
			for i := range ke.Want {
				ke.Want[i].Filename = names[ke.Want[i].Filename]
			}
		}
		var re *knownhosts.RevokedError
		if errors.As(err, &re) {
			re.Revoked.Filename = names[re.Revoked.Filename]
		}
		return err
	}, nil
}

// fdPath names an open file by its descriptor, for a library that opens
// files by name.
func fdPath(f *os.File) string {
	if runtime.GOOS == "linux" {
		return "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
	}
	return "/dev/fd/" + strconv.Itoa(int(f.Fd()))
}
