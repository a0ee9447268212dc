// Package inventory reads the list of hosts to audit: a native YAML file,
// or an Ansible inventory (YAML or INI) used as it is.
//
// Native format:
//
//	hosts:
//	  gpu-a-001: {fleet: gpu-training, labels: {rack: r12}, root: roots/gpu-a-001}
//	  web-01:    {fleet: web-serving, address: 10.0.0.7, user: audit, port: 22, groups: [edge]}
//	groups:                      # optional: group -> member hosts
//	  canary: [gpu-a-001]
//
// Every key is checked: an unknown one is an error naming file, line and key.
//
// Ansible inventories: hosts, groups, children (nested, any depth), vars and
// host ranges (gpu-a-[001:128], db-[a:f], [1:9:2]) as Ansible reads them.
// ansible_host, ansible_user and ansible_port (or their ansible_ssh_*
// aliases) give Address, User and Port, ansible_connection Connection; fleetaudit_fleet, fleetaudit_root
// and fleetaudit_labels (a mapping; in INI a quoted {'k': 'v'} literal) give
// Fleet, Root and Labels. Variables follow Ansible's precedence: host vars,
// then group vars from the deepest group up to all (ties: ansible_group_priority,
// then group name). One exception, for Fleet: when two groups of a host
// that are not parent and child set different fleets, or one host is given
// two fleets, Load fails instead of letting group depth or name order pick.
// Values are taken literally: Jinja templates are not rendered, and the
// group_vars and host_vars directories beside an inventory are not read.
//
// A host's name names its snapshot file (NAME.json), so it must be one safe
// file name (snapshot.CheckHostName): "..", a "/" or a control character is
// an error naming the line. A native host may not have both root (a tree on
// this machine) and address; the directory on the host is remote_root.
//
// In every format a relative root resolves against the inventory file's
// folder. A root that does not exist is not an error here: the audit reports
// it for that host.
package inventory

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/fleetaudit/fleetaudit/internal/safeio"
	"github.com/fleetaudit/fleetaudit/internal/strictyaml"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

// Host is one host to audit.
type Host struct {
	Name   string
	Fleet  string // empty: decided by fleet profile matching
	Labels map[string]string
	// Groups are every group the host is in, through children too, sorted;
	// Ansible's implicit all and ungrouped are left out.
	Groups []string
	// Root is a directory holding the host's files, on the machine reading
	// the inventory.
	Root string
	// Address, User and Port are for reaching the host over SSH.
	Address string
	User    string
	Port    int
	// Identity is a private key file; Jump a ProxyJump list; Become reads
	// the host through sudo -n; RemoteRoot is the directory on the host
	// read as its "/" (default "/").
	Identity   string
	Jump       string
	Become     bool
	RemoteRoot string
	// Connection is how the host is reached (Ansible's ansible_connection:
	// ssh, local, winrm...); "" is Ansible's default, SSH. Which
	// connection types fleetaudit reads is the transport package's.
	Connection string
}

// Inventory is a loaded inventory.
type Inventory struct {
	Path   string
	Format Format
	Hosts  []Host // sorted by name
	// Groups maps every group to its hosts (through children too), sorted.
	Groups map[string][]string
}

// Format names an inventory file format.
type Format string

// Formats Load understands.
const (
	FormatNative      Format = "native"
	FormatAnsibleYAML Format = "ansible-yaml"
	FormatAnsibleINI  Format = "ansible-ini"
)

// ErrInvalid is wrapped by every error about an inventory's content.
var ErrInvalid = errors.New("invalid inventory")

// ErrFleetConflict is wrapped when one host is given two different fleets.
var ErrFleetConflict = errors.New("conflicting fleets")

// maxFileBytes bounds an inventory file.
const maxFileBytes = 64 << 20

// maxHosts bounds the hosts of one inventory, ranges expanded.
const maxHosts = 1 << 20

// Load reads the inventory at path and detects its format: a .ini file is
// Ansible INI; .yaml, .yml and .json files are YAML; other files are YAML
// when they parse as a YAML mapping and Ansible INI otherwise. A YAML file
// is native when its top level has a hosts mapping and no all group, and the
// hosts mapping is not itself an Ansible group (hosts, children, vars).
func Load(path string) (*Inventory, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("inventory %s: %w", path, err)
	}
	// Never os.Open: a FIFO would block it, and a device be read forever.
	data, err := safeio.ReadFile(abs, maxFileBytes)
	if errors.Is(err, safeio.ErrTooLarge) {
		return nil, fmt.Errorf("inventory %s: %w: larger than %d bytes", path, ErrInvalid, maxFileBytes)
	}
	if err != nil {
		return nil, fmt.Errorf("inventory: %w", err)
	}
	return Parse(abs, data)
}

// Parse reads an inventory from data; path names it in errors, chooses the
// format as in Load, and relative roots resolve against its folder.
func Parse(path string, data []byte) (*Inventory, error) {
	inv, err := parse(path, data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", path, ErrInvalid, err)
	}
	inv.Path = path
	dir := filepath.Dir(path)
	for i := range inv.Hosts {
		h := &inv.Hosts[i]
		if h.Root != "" && !filepath.IsAbs(h.Root) {
			h.Root = filepath.Join(dir, h.Root)
		}
	}
	slices.SortFunc(inv.Hosts, func(a, b Host) int { return strings.Compare(a.Name, b.Name) })
	return inv, nil
}

func parse(path string, data []byte) (*Inventory, error) {
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	switch strings.ToLower(filepath.Ext(path)) {
	case ".ini":
		return parseINI(data)
	case ".yaml", ".yml", ".json":
		doc, err := parseYAMLDoc(data)
		if err != nil {
			return nil, err
		}
		return parseYAML(doc)
	}
	doc, yamlErr := parseYAMLDoc(data)
	if yamlErr == nil {
		return parseYAML(doc)
	}
	inv, err := parseINI(data)
	if err != nil && looksLikeYAML(data) {
		return nil, yamlErr // a broken YAML file: its own error helps more
	}
	return inv, err
}

// looksLikeYAML reports whether the first significant line is a YAML
// document start or a "key:" line, which no INI inventory line is.
func looksLikeYAML(data []byte) bool {
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line == "---" {
			return true
		}
		key, _, found := strings.Cut(line, ": ")
		if !found {
			key, found = strings.CutSuffix(line, ":")
		}
		return found && !strings.ContainsAny(key, " \t[=")
	}
	return false
}

// parseYAMLDoc returns the top-level mapping of a one-document YAML file.
func parseYAMLDoc(data []byte) (*yaml.Node, error) {
	_, mapping, err := strictyaml.DecodeMapping(data)
	return mapping, err
}

func parseYAML(top *yaml.Node) (*Inventory, error) {
	if isNative(top) {
		return parseNative(top)
	}
	return parseAnsibleYAML(top)
}

func isNative(top *yaml.Node) bool {
	hosts := strictyaml.MapValue(top, "hosts")
	if hosts == nil || strictyaml.MapValue(top, "all") != nil {
		return false
	}
	if hosts.Kind == yaml.ScalarNode && hosts.Tag == "!!null" {
		return true
	}
	if hosts.Kind != yaml.MappingNode {
		return false
	}
	if len(hosts.Content) == 0 {
		return true
	}
	for i := 0; i < len(hosts.Content); i += 2 {
		switch hosts.Content[i].Value {
		case "hosts", "children", "vars":
		default:
			return true
		}
	}
	return false // a group named "hosts" in an Ansible inventory
}

// checkHostName rejects names no host can have and that would break output
// file names and reports.
func checkHostName(name string) error {
	if name == "" {
		return errors.New("empty host name")
	}
	if strings.ContainsFunc(name, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return fmt.Errorf("host name %q contains a space or control character", name)
	}
	// A host's name names its snapshot file (collect --out).
	return snapshot.CheckHostName(name)
}

func checkGroupName(name string) error {
	if name == "" || strings.ContainsFunc(name, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return fmt.Errorf("group name %q is empty or contains a space or control character", name)
	}
	return nil
}

// groupIndex builds Inventory.Groups from the hosts' groups.
func groupIndex(hosts []Host, declared []string) map[string][]string {
	groups := map[string][]string{}
	for _, g := range declared {
		groups[g] = []string{}
	}
	for _, h := range hosts {
		for _, g := range h.Groups {
			groups[g] = append(groups[g], h.Name)
		}
	}
	for _, members := range groups {
		slices.Sort(members)
	}
	return groups
}
