package inventory

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

func testdata(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// sampleFleet is what testdata/hosts.ini and testdata/ansible.yaml describe.
func sampleFleet(dir string) []Host {
	gpuLabels := map[string]string{"cluster": "train-east", "node.kubernetes.io/instance-type": "p5.48xlarge"}
	gpu := func(name, user string, groups ...string) Host {
		return Host{Name: name, Fleet: "gpu-training", Labels: gpuLabels, Groups: groups, User: user}
	}
	canary := gpu("gpu-a-001", "ops", "gpu", "gpu_canary", "gpu_h100")
	canary.Root = filepath.Join(dir, "roots/gpu-a-001")
	canary.Address = "10.1.0.1"
	return []Host{
		canary,
		gpu("gpu-a-002", "ops", "gpu", "gpu_h100"),
		gpu("gpu-a-003", "ops", "gpu", "gpu_h100"),
		gpu("gpu-a-004", "ops", "gpu", "gpu_h100"),
		gpu("gpu-b-a", "trainer", "gpu", "gpu_h100"),
		gpu("gpu-b-b", "trainer", "gpu", "gpu_h100"),
		gpu("gpu-b-c", "trainer", "gpu", "gpu_h100"),
		{Name: "jump-01", Address: "192.0.2.10", User: "ops"},
		{Name: "nfs-01", Groups: []string{"storage"}, Labels: map[string]string{"role": "nfs"}, User: "ops"},
		{Name: "web-01", Fleet: "web-serving", Groups: []string{"web"}, Address: "10.0.0.7", User: "audit", Port: 2222},
		{Name: "web-02.example.com", Fleet: "web-serving", Groups: []string{"web"}, User: "audit"},
	}
}

func sampleGroups() map[string][]string {
	gpus := []string{"gpu-a-001", "gpu-a-002", "gpu-a-003", "gpu-a-004", "gpu-b-a", "gpu-b-b", "gpu-b-c"}
	return map[string][]string{
		"gpu":        gpus,
		"gpu_h100":   gpus,
		"gpu_canary": {"gpu-a-001"},
		"storage":    {"nfs-01"},
		"web":        {"web-01", "web-02.example.com"},
	}
}

func TestLoadSamples(t *testing.T) {
	dir := testdata(t, "")
	tests := []struct {
		file string
		want *Inventory
	}{
		{"native.yaml", &Inventory{
			Format: FormatNative,
			Hosts: []Host{
				{Name: "db-01"},
				{Name: "gpu-a-001", Fleet: "gpu-training", Groups: []string{"gpu"},
					Labels: map[string]string{"rack": "r12", "node.kubernetes.io/instance-type": "p5.48xlarge"},
					Root:   filepath.Join(dir, "roots/gpu-a-001")},
				{Name: "gpu-a-002", Groups: []string{"canary", "gpu"}, Labels: map[string]string{"rack": "r12"},
					Root: "/srv/fleetaudit/roots/gpu-a-002"},
				{Name: "web-01", Fleet: "web-serving", Groups: []string{"edge"}, Address: "10.0.0.7", User: "audit"},
				{Name: "web-02", Groups: []string{"edge"}, Address: "10.0.0.8", User: "audit", Port: 2222},
			},
			Groups: map[string][]string{
				"canary": {"gpu-a-002"},
				"edge":   {"web-01", "web-02"},
				"empty":  {},
				"gpu":    {"gpu-a-001", "gpu-a-002"},
			},
		}},
		{"ansible.yaml", &Inventory{Format: FormatAnsibleYAML, Hosts: sampleFleet(dir), Groups: sampleGroups()}},
		{"hosts.ini", &Inventory{Format: FormatAnsibleINI, Hosts: sampleFleet(dir), Groups: sampleGroups()}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			tt.want.Path = filepath.Join(dir, tt.file)
			got, err := Load(filepath.Join("testdata", tt.file)) // relative: Load makes it absolute
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Load (-want +got):\n%s", diff)
			}
		})
	}
}

// Ansible's default inventory is a file named hosts, without extension.
func TestDetectWithoutExtension(t *testing.T) {
	tmp := t.TempDir()
	for _, tt := range []struct {
		sample string
		want   Format
	}{
		{"hosts.ini", FormatAnsibleINI},
		{"ansible.yaml", FormatAnsibleYAML},
		{"native.yaml", FormatNative},
	} {
		data, err := os.ReadFile(testdata(t, tt.sample))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(tmp, "hosts")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		inv, err := Load(p)
		if err != nil {
			t.Fatalf("%s without extension: %v", tt.sample, err)
		}
		if inv.Format != tt.want {
			t.Errorf("%s without extension: format %s, want %s", tt.sample, inv.Format, tt.want)
		}
	}
	// A broken YAML file without an extension reports the YAML error.
	_, err := Parse("/inv/hosts", []byte("hosts:\n  web-01: {fleet: web\n"))
	if err == nil || !strings.Contains(err.Error(), "yaml:") {
		t.Errorf("broken YAML: %v, want the YAML parser's error", err)
	}
	// And a broken INI file reports the INI error.
	_, err = Parse("/inv/hosts", []byte("[gpu]\ngpu-[3:1]\n"))
	if err == nil || !strings.Contains(err.Error(), "line 2: host \"gpu-[3:1]\": range [3:1]: begin is after end") {
		t.Errorf("broken INI: %v", err)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load = %v, want ErrNotExist", err)
	}
}

// parseHosts parses an inventory given as text and returns its hosts.
func parseHosts(t *testing.T, file, src string) ([]Host, error) {
	t.Helper()
	inv, err := Parse(file, []byte(src))
	if err != nil {
		return nil, err
	}
	return inv.Hosts, nil
}

type hostCase struct {
	name string
	src  string
	want []Host // compared ignoring empty fields
	err  string // substring of the expected error
}

func runHostCases(t *testing.T, file string, tests []hostCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseHosts(t, file, tt.src)
			if tt.err != "" {
				if err == nil {
					t.Fatalf("Parse succeeded with %+v, want error containing %q", got, tt.err)
				}
				if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Parse error\n%v\nwant it to contain\n%s", err, tt.err)
				}
				if !strings.HasPrefix(err.Error(), file+": invalid inventory: ") {
					t.Errorf("error does not name the file: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("hosts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAnsibleINI(t *testing.T) {
	runHostCases(t, "/inv/hosts.ini", []hostCase{
		{name: "numeric range keeps zero padding", src: "[gpu]\ngpu-a-[001:003]\n", want: []Host{
			{Name: "gpu-a-001", Groups: []string{"gpu"}},
			{Name: "gpu-a-002", Groups: []string{"gpu"}},
			{Name: "gpu-a-003", Groups: []string{"gpu"}},
		}},
		{name: "unpadded range, step, two ranges", src: "n[8:12:2]-[a:b]\n", want: []Host{
			{Name: "n10-a"}, {Name: "n10-b"}, {Name: "n12-a"}, {Name: "n12-b"}, {Name: "n8-a"}, {Name: "n8-b"},
		}},
		{name: "host vars on a range apply to every host", src: "[web]\nweb-[1:2] ansible_user=audit ansible_port=2200\n", want: []Host{
			{Name: "web-1", Groups: []string{"web"}, User: "audit", Port: 2200},
			{Name: "web-2", Groups: []string{"web"}, User: "audit", Port: 2200},
		}},
		{name: "host:port, inline ansible_port wins", src: "a:2222\nb:2222 ansible_port=22\n[v6]\n[fe80::1]:2200\nfe80::2\n", want: []Host{
			{Name: "a", Port: 2222}, {Name: "b", Port: 22},
			{Name: "fe80::1", Groups: []string{"v6"}, Port: 2200},
			{Name: "fe80::2", Groups: []string{"v6"}},
		}},
		{name: "comments and quoting", src: `
# comment
; comment too
[g]   # trailing comment on a section
h1 fleetaudit_root="/srv/a b" ansible_user='o#ps' # comment
h2 ansible_user=ops#not-part-of-the-value
h3 fleetaudit_root="'/quoted/twice'"
`, want: []Host{
			{Name: "h1", Groups: []string{"g"}, Root: "/srv/a b", User: "o#ps"},
			{Name: "h2", Groups: []string{"g"}, User: "ops"},
			{Name: "h3", Groups: []string{"g"}, Root: "/quoted/twice"},
		}},
		{name: "children declared later, nested, vars precedence", src: `
[all:vars]
ansible_user=everyone
fleetaudit_root=/srv/all

[dc:children]
gpu

[dc:vars]
ansible_user=dc
fleetaudit_root=/srv/dc

[gpu:children]
h100

[gpu:vars]
ansible_user=gpu

[h100]
gpu-1
gpu-2 ansible_user=root
`, want: []Host{
			{Name: "gpu-1", Groups: []string{"dc", "gpu", "h100"}, User: "gpu", Root: "/srv/dc"},
			{Name: "gpu-2", Groups: []string{"dc", "gpu", "h100"}, User: "root", Root: "/srv/dc"},
		}},
		{name: "same depth: later group name wins, unless ansible_group_priority", src: `
[a]
h
[b]
h
[c]
h2
[d]
h2
[a:vars]
ansible_user=from-a
[b:vars]
ansible_user=from-b
[c:vars]
ansible_user=from-c
ansible_group_priority=10
[d:vars]
ansible_user=from-d
`, want: []Host{
			{Name: "h", Groups: []string{"a", "b"}, User: "from-b"},
			{Name: "h2", Groups: []string{"c", "d"}, User: "from-c"},
		}},
		{name: "ungrouped hosts and [ungrouped:vars]", src: "lone\n[ungrouped:vars]\nansible_user=u\n[g]\nother\n", want: []Host{
			{Name: "lone", User: "u"},
			{Name: "other", Groups: []string{"g"}},
		}},
		{name: "duplicate host merges groups and vars", src: "[a]\nh ansible_user=x\n[b]\nh ansible_host=10.0.0.1\n", want: []Host{
			{Name: "h", Groups: []string{"a", "b"}, User: "x", Address: "10.0.0.1"},
		}},
		{name: "fleet: host over group, child group over parent", src: `
[parent:children]
child
[parent:vars]
fleetaudit_fleet=web-serving
[child]
c1
c2 fleetaudit_fleet=special
[child:vars]
fleetaudit_fleet=gpu-training
[parent]
p1
`, want: []Host{
			{Name: "c1", Groups: []string{"child", "parent"}, Fleet: "gpu-training"},
			{Name: "c2", Groups: []string{"child", "parent"}, Fleet: "special"},
			{Name: "p1", Groups: []string{"parent"}, Fleet: "web-serving"},
		}},
		{name: "fleet: two groups agreeing is fine", src: "[a]\nh\n[b]\nh\n[a:vars]\nfleetaudit_fleet=f\n[b:vars]\nfleetaudit_fleet=f\n", want: []Host{
			{Name: "h", Groups: []string{"a", "b"}, Fleet: "f"},
		}},
		{name: "labels from a dict literal", src: "[g]\nh fleetaudit_labels=\"{'rack': 'r1', 'node.kubernetes.io/instance-type': 'p5.48xlarge', 'n': 4}\"\n", want: []Host{
			{Name: "h", Groups: []string{"g"}, Labels: map[string]string{"rack": "r1", "node.kubernetes.io/instance-type": "p5.48xlarge", "n": "4"}},
		}},
		{name: "[g:hosts] is [g]", src: "[g:hosts]\nh\n", want: []Host{{Name: "h", Groups: []string{"g"}}}},
		{name: "ansible_connection, from the host or its group", src: "[win]\nw1 ansible_host=10.0.0.9\nw2 ansible_connection=psrp\n[win:vars]\nansible_connection=winrm\n[self]\nlocalhost ansible_connection=local\n", want: []Host{
			{Name: "localhost", Groups: []string{"self"}, Connection: "local"},
			{Name: "w1", Groups: []string{"win"}, Address: "10.0.0.9", Connection: "winrm"},
			{Name: "w2", Groups: []string{"win"}, Connection: "psrp"},
		}},
		{name: "empty file", src: "# nothing\n", want: nil},

		{name: "fleet conflict on one host", src: "[a]\nh fleetaudit_fleet=gpu-training\n[b]\nh fleetaudit_fleet=web-serving\n",
			err: `line 4: host h: conflicting fleets: fleetaudit_fleet is "web-serving" here and "gpu-training" at line 2`},
		{name: "fleet conflict between unrelated groups", src: "[gpu]\nh\n[web]\nh\n[gpu:vars]\nfleetaudit_fleet=gpu-training\n[web:vars]\nfleetaudit_fleet=web-serving\n",
			err: `host h: conflicting fleets: group gpu (line 6) says "gpu-training" and group web (line 8) says "web-serving"`},
		{name: "fleet conflict across depths", src: "[top]\nh\n[a:children]\nb\n[b]\nh\n[top:vars]\nfleetaudit_fleet=x\n[b:vars]\nfleetaudit_fleet=y\n",
			err: `host h: conflicting fleets: group b (line 10) says "y" and group top (line 8) says "x"`},
		{name: "children of an undeclared group", src: "[gpu:children]\nh100\n",
			err: "line 2: section [gpu:children] includes group h100, which is not declared"},
		{name: "vars for an undeclared group", src: "[h]\nx\n[gpu:vars]\na=b\n",
			err: "line 3: section [gpu:vars] is for group gpu, which is not declared"},
		{name: "unknown section type", src: "[gpu:child]\n", err: `line 1: section [gpu:child] has unknown type "child"`},
		{name: "space in section", src: "[gpu nodes]\n", err: "line 1: invalid section [gpu nodes]"},
		{name: "vars line without =", src: "[g]\nh\n[g:vars]\njust-a-word\n", err: "line 4: want key=value in [g:vars]"},
		{name: "host var without =", src: "h ansible_user\n", err: `line 1: want key=value host variable, got "ansible_user"`},
		{name: "unterminated quote", src: "h ansible_user='ops\n", err: "line 1: host line \"h ansible_user='ops\": no closing quotation"},
		{name: "child loop", src: "[a:children]\nb\n[b:children]\na\n", err: "line 4: adding group a as a child of b would make a loop"},
		{name: "bad range", src: "gpu-[001:10]\n", err: "a zero-padded begin needs an end of the same width"},
		{name: "reversed range", src: "gpu-[9:1]\n", err: "begin is after end"},
		{name: "huge range", src: "gpu-[0:9999999]\n", err: "more than 262144 values"},
		{name: "trailing colon", src: "web-01:\n", err: `host "web-01:": a trailing ':' is reserved for a port`},
		{name: "bad port", src: "web-01:99999\n", err: `port "99999" is not a number from 1 to 65535`},
		{name: "bad ansible_port", src: "web-01 ansible_port=ssh\n", err: `host web-01: ansible_port: port "ssh" is not a number`},
		{name: "bad labels", src: "h fleetaudit_labels=rack\n", err: "host h: fleetaudit_labels: want a mapping of label to value"},
		{name: "yaml in an .ini file", src: "---\nall:\n", err: "looks like a YAML file"},
	})
}

func TestAnsibleYAML(t *testing.T) {
	runHostCases(t, "/inv/inventory.yml", []hostCase{
		{name: "group names at the top level, not only all", src: "gpu:\n  hosts:\n    g1:\nweb:\n  hosts: w1\n", want: []Host{
			{Name: "g1", Groups: []string{"gpu"}},
			{Name: "w1", Groups: []string{"web"}},
		}},
		{name: "ranges, ports and scalars kept as written", src: `
all:
  children:
    gpu:
      hosts:
        gpu-[01:02]:2222:
          ansible_host: 010.0.0.1
          fleetaudit_root: roots/x
`, want: []Host{
			{Name: "gpu-01", Groups: []string{"gpu"}, Port: 2222, Address: "010.0.0.1", Root: "/inv/roots/x"},
			{Name: "gpu-02", Groups: []string{"gpu"}, Port: 2222, Address: "010.0.0.1", Root: "/inv/roots/x"},
		}},
		{name: "a group under two parents, host vars win", src: `
all:
  vars: {ansible_user: all}
  children:
    a:
      children:
        shared:
          hosts:
            h: {ansible_user: host}
            h2:
    b:
      vars: {ansible_user: b}
      children:
        shared:
`, want: []Host{
			{Name: "h", Groups: []string{"a", "b", "shared"}, User: "host"},
			{Name: "h2", Groups: []string{"a", "b", "shared"}, User: "b"},
		}},
		{name: "anchors and aliases", src: `
all:
  children:
    gpu:
      vars: &gpuvars
        fleetaudit_fleet: gpu-training
        fleetaudit_labels: &labels {rack: r1}
      hosts: {g1: }
    gpu2:
      vars: *gpuvars
      hosts:
        g2: {fleetaudit_labels: *labels}
`, want: []Host{
			{Name: "g1", Groups: []string{"gpu"}, Fleet: "gpu-training", Labels: map[string]string{"rack": "r1"}},
			{Name: "g2", Groups: []string{"gpu2"}, Fleet: "gpu-training", Labels: map[string]string{"rack": "r1"}},
		}},
		{name: "labels values kept as written", src: "all:\n  hosts:\n    h:\n      fleetaudit_labels: {gen: 5, big: 1.10, on: true}\n", want: []Host{
			{Name: "h", Labels: map[string]string{"gen": "5", "big": "1.10", "on": "true"}},
		}},
		{name: "null vars and hosts", src: "all:\n  vars:\n  hosts:\n  children:\n    empty:\n", want: nil},

		{name: "misspelt hosts key", src: "all:\n  children:\n    gpu:\n      host:\n        g1:\n",
			err: `line 4: group gpu: unknown key "host" (known: children, hosts, vars)`},
		{name: "hosts as a list", src: "all:\n  hosts:\n    - h1\n", err: "line 3: group all: hosts: want a mapping"},
		{name: "group not a mapping", src: "all: [a, b]\n", err: "group all: want a mapping with hosts, children or vars"},
		{name: "host vars not a mapping", src: "all:\n  hosts:\n    h1: 22\n", err: "line 3: host h1: want a mapping of variables"},
		{name: "conflicting fleets", src: `
all:
  children:
    gpu: {hosts: {h: {fleetaudit_fleet: gpu-training}}}
    web: {hosts: {h: {fleetaudit_fleet: web-serving}}}
`, err: `line 5: host h: conflicting fleets: fleetaudit_fleet is "web-serving" here and "gpu-training" at line 4`},
		{name: "child loop", src: "a:\n  children:\n    b:\n      children:\n        a:\n", err: "line 3: adding group b as a child of a would make a loop"},
		{name: "recursive alias", src: "all: &x\n  children:\n    g: *x\n", err: "nested deeper than 64"},
		{name: "plugin configuration", src: "plugin: amazon.aws.aws_ec2\nregions: [us-east-1]\n", err: `dynamic inventory plugin "amazon.aws.aws_ec2"`},
		{name: "labels not a mapping", src: "all:\n  hosts:\n    h: {fleetaudit_labels: [a]}\n", err: "line 3: host h: fleetaudit_labels: want a mapping"},
		{name: "list as fleet", src: "all:\n  vars: {fleetaudit_fleet: [a]}\n  hosts: {h: }\n", err: "group all: fleetaudit_fleet: want a single value"},
		{name: "two documents", src: "all:\n---\nall:\n", err: "line 2: more than one YAML document"},
		{name: "top level list", src: "- a\n", err: "want a mapping at the top level"},
	})
}

func TestNative(t *testing.T) {
	runHostCases(t, "/inv/fleet.yaml", []hostCase{
		{name: "minimal", src: "hosts:\n  a:\n  b: {root: b}\n", want: []Host{{Name: "a"}, {Name: "b", Root: "/inv/b"}}},
		{name: "empty", src: "hosts: {}\n", want: nil},
		{name: "label values kept as text", src: "hosts:\n  a: {labels: {gen: 5, zone: '01'}}\n", want: []Host{
			{Name: "a", Labels: map[string]string{"gen": "5", "zone": "01"}},
		}},
		{name: "a host named hosts is still native", src: "hosts:\n  hosts: {fleet: x}\n  other:\n", want: []Host{
			{Name: "hosts", Fleet: "x"}, {Name: "other"},
		}},

		{name: "unknown host key", src: "hosts:\n  gpu-a-001:\n    fleet: gpu-training\n    rooot: roots/a\n",
			err: `line 4: unknown key "rooot" in hosts.gpu-a-001 (known: address, become, connection, fleet, groups, identity, jump, labels, port, remote_root, root, user)`},
		{name: "unknown top-level key", src: "hosts:\n  a:\nvars:\n  x: 1\n",
			err: `line 3: unknown key "vars" in the top level (known: groups, hosts)`},
		{name: "ansible variable in native", src: "hosts:\n  a: {ansible_host: 10.0.0.1}\n",
			err: `line 2: unknown key "ansible_host" in hosts.a`},
		{name: "duplicate host", src: "hosts:\n  a:\n  a:\n", err: "line 3: host a is already defined at line 2"},
		{name: "group member not a host", src: "hosts:\n  a:\ngroups:\n  g: [a, b]\n", err: `line 4: group g lists "b", which is not under hosts`},
		{name: "bad port", src: "hosts:\n  a: {port: 70000}\n", err: "host a: port 70000 is not from 1 to 65535"},
		{name: "wrong type", src: "hosts:\n  a: {port: ssh}\n", err: "host a: yaml: unmarshal errors"},
		{name: "space in host name", src: "hosts:\n  'a b':\n", err: `line 2: host name "a b" contains a space`},
		{name: "host name escaping its directory", src: "hosts:\n  ../../../../etc/cron.d/x: {address: 10.0.0.1}\n",
			err: `line 2: host name "../../../../etc/cron.d/x": not a safe file name: it contains a path separator`},
		{name: "host name dot dot", src: "hosts:\n  '..': {address: 10.0.0.1}\n", err: `host name "..": not a safe file name`},
		{name: "root and address", src: "hosts:\n  a: {root: /srv/a, address: 10.0.0.1}\n",
			err: "line 2: host a has both root: (a tree on this machine, read instead of the host) and address: (the host over SSH); for the directory on the host to read as its /, use remote_root: /srv/a"},
	})
}

func TestAnsibleHostNamesAreFileNames(t *testing.T) {
	for _, src := range []string{
		"[g]\n../../../../etc/cron.d/x ansible_host=10.0.0.1\n",
		"all:\n  hosts:\n    ../../x: {ansible_host: 10.0.0.1}\n",
		"[g]\n.. ansible_host=10.0.0.1\n",
	} {
		_, err := Parse("/inv/hosts", []byte(src))
		if !errors.Is(err, snapshot.ErrBadHostName) || !errors.Is(err, ErrInvalid) {
			t.Errorf("Parse(%q) = %v, want ErrBadHostName", src, err)
		}
	}
}

func TestFleetConflictIsTyped(t *testing.T) {
	for _, src := range []string{
		"[a]\nh fleetaudit_fleet=x\n[b]\nh fleetaudit_fleet=y\n",
		"[a]\nh\n[b]\nh\n[a:vars]\nfleetaudit_fleet=x\n[b:vars]\nfleetaudit_fleet=y\n",
		"[a:vars]\nfleetaudit_fleet=x\n[a:vars]\nfleetaudit_fleet=y\n[a]\nh\n",
	} {
		_, err := Parse("/inv/hosts", []byte(src))
		if !errors.Is(err, ErrFleetConflict) || !errors.Is(err, ErrInvalid) {
			t.Errorf("Parse(%q) = %v, want ErrFleetConflict and ErrInvalid", src, err)
		}
	}
}

func TestRelativeRoots(t *testing.T) {
	tests := []struct{ path, root, want string }{
		{"/etc/fleetaudit/inventory.yaml", "roots/a", "/etc/fleetaudit/roots/a"},
		{"/etc/fleetaudit/inventory.yaml", "../images/a", "/etc/images/a"},
		{"/etc/fleetaudit/inventory.yaml", "/abs/a", "/abs/a"},
		{"inventory.yaml", "roots/a", "roots/a"},
	}
	for _, tt := range tests {
		inv, err := Parse(tt.path, []byte("hosts:\n  a: {root: "+tt.root+"}\n"))
		if err != nil {
			t.Fatal(err)
		}
		if got := inv.Hosts[0].Root; got != tt.want {
			t.Errorf("Parse(%s) root %s = %s, want %s", tt.path, tt.root, got, tt.want)
		}
	}
	// A root that does not exist is the audit's finding, not a load error.
	inv, err := Parse(testdata(t, "x.yaml"), []byte("hosts:\n  a: {root: no/such/dir}\n"))
	if err != nil || inv.Hosts[0].Root != testdata(t, "no/such/dir") {
		t.Errorf("missing root: %v, %+v", err, inv)
	}
}

func TestLabelsAreNotShared(t *testing.T) {
	inv, err := Parse("/inv/hosts", []byte("[g]\na\nb\n[g:vars]\nfleetaudit_labels={'r': '1'}\n"))
	if err != nil {
		t.Fatal(err)
	}
	inv.Hosts[0].Labels["r"] = "changed"
	if inv.Hosts[1].Labels["r"] != "1" {
		t.Error("changing one host's labels changed another's")
	}
}

func TestExpandHostPattern(t *testing.T) {
	tests := []struct {
		in   string
		want []string
		err  string
	}{
		{in: "web-01", want: []string{"web-01"}},
		{in: "gpu-[01:03]", want: []string{"gpu-01", "gpu-02", "gpu-03"}},
		{in: "h[8:10]", want: []string{"h8", "h9", "h10"}},
		{in: "h[:2]", want: []string{"h0", "h1", "h2"}},
		{in: "h[1:010]", want: []string{"h1", "h2", "h3", "h4", "h5", "h6", "h7", "h8", "h9", "h10"}},
		{in: "h[01:10:4]", want: []string{"h01", "h05", "h09"}},
		{in: "db-[a:c].ex", want: []string{"db-a.ex", "db-b.ex", "db-c.ex"}},
		{in: "[y:B]", want: []string{"y", "z", "A", "B"}},
		{in: "[a:e:2]", want: []string{"a", "c", "e"}},
		{in: "r[1:2]n[a:b]", want: []string{"r1na", "r1nb", "r2na", "r2nb"}},
		{in: "10.0.0.[1:2]", want: []string{"10.0.0.1", "10.0.0.2"}},
		{in: "h[1:]", err: "no end value"},
		{in: "h[1]", err: "want begin:end"},
		{in: "h[1:2:3:4]", err: "want begin:end"},
		{in: "h[1:5:0]", err: "step \"0\" is not a positive integer"},
		{in: "h[c:a]", err: "begin is after end"},
		{in: "h[a:5]", err: "bounds must both be"},
		{in: "h[1:2", err: "without a closing"},
		{in: "h]1:2[", err: "without a closing"},
		{in: "h1:2]", err: "unbalanced"},
		{in: "h[0:1][0:999][0:999]", err: "expands to more than"},
	}
	for _, tt := range tests {
		got, err := expandHostPattern(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("expandHostPattern(%q) = %v, %v; want error %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("expandHostPattern(%q): %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("expandHostPattern(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestShlexSplit(t *testing.T) {
	// Expected values are Python's shlex.split(s, comments=True).
	tests := []struct {
		in   string
		want []string
		err  bool
	}{
		{in: "a b=c", want: []string{"a", "b=c"}},
		{in: "a b=c#d e", want: []string{"a", "b=c"}},
		{in: `a k="x # y" z`, want: []string{"a", "k=x # y", "z"}},
		{in: `k="a\"b\\c\n"`, want: []string{`k=a"b\c\n`}},
		{in: `k='a\'`, want: []string{`k=a\`}},
		{in: `k=a\ b`, want: []string{"k=a b"}},
		{in: `mysecret="'03#pa33w0rd'"`, want: []string{`mysecret='03#pa33w0rd'`}},
		{in: `''`, want: []string{""}},
		{in: "# all comment", want: nil},
		{in: `k="open`, err: true},
		{in: `k=\`, err: true},
	}
	for _, tt := range tests {
		got, err := shlexSplit(tt.in)
		if (err != nil) != tt.err {
			t.Errorf("shlexSplit(%q) error = %v, want error %v", tt.in, err, tt.err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("shlexSplit(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}
