package inventory

import (
	"errors"
	"fmt"
	"slices"

	"go.yaml.in/yaml/v3"

	"github.com/fleetaudit/fleetaudit/internal/strictyaml"
)

type nativeHost struct {
	Fleet      string            `yaml:"fleet"`
	Labels     map[string]string `yaml:"labels"`
	Root       string            `yaml:"root"`
	Address    string            `yaml:"address"`
	User       string            `yaml:"user"`
	Port       int               `yaml:"port"`
	Groups     []string          `yaml:"groups"`
	Identity   string            `yaml:"identity"`
	Jump       string            `yaml:"jump"`
	Become     bool              `yaml:"become"`
	RemoteRoot string            `yaml:"remote_root"`
	Connection string            `yaml:"connection"`
}

type nativeFile struct {
	Hosts  map[string]*nativeHost `yaml:"hosts"`
	Groups map[string][]string    `yaml:"groups"`
}

func parseNative(top *yaml.Node) (*Inventory, error) {
	if err := strictyaml.Check(top, &nativeFile{}); err != nil {
		return nil, err
	}
	inv := &Inventory{Format: FormatNative}
	var errs []error
	index := map[string]int{}
	lines := map[string]int{}
	hosts := strictyaml.MapValue(top, "hosts")
	for i := 0; hosts != nil && i+1 < len(hosts.Content); i += 2 {
		key, val := hosts.Content[i], hosts.Content[i+1]
		if err := checkHostName(key.Value); err != nil {
			errs = append(errs, fmt.Errorf("line %d: %w", key.Line, err))
			continue
		}
		if prev, dup := lines[key.Value]; dup {
			errs = append(errs, fmt.Errorf("line %d: host %s is already defined at line %d", key.Line, key.Value, prev))
			continue
		}
		lines[key.Value] = key.Line
		var nh nativeHost
		if err := val.Decode(&nh); err != nil {
			errs = append(errs, fmt.Errorf("host %s: %w", key.Value, err))
			continue
		}
		for _, g := range nh.Groups {
			if err := checkGroupName(g); err != nil {
				errs = append(errs, fmt.Errorf("line %d: host %s: %w", val.Line, key.Value, err))
			}
		}
		if nh.Port < 0 || nh.Port > 65535 {
			errs = append(errs, fmt.Errorf("line %d: host %s: port %d is not from 1 to 65535", val.Line, key.Value, nh.Port))
		}
		if nh.Root != "" && nh.Address != "" {
			// root is a tree on this machine, so the address would never be
			// used: the directory on the host is remote_root.
			errs = append(errs, fmt.Errorf("line %d: host %s has both root: (a tree on this machine, read instead of the host) and address: (the host over SSH); for the directory on the host to read as its /, use remote_root: %s", val.Line, key.Value, nh.Root))
		}
		index[key.Value] = len(inv.Hosts)
		inv.Hosts = append(inv.Hosts, Host{
			Name:       key.Value,
			Fleet:      nh.Fleet,
			Labels:     nh.Labels,
			Groups:     nh.Groups,
			Root:       nh.Root,
			Address:    nh.Address,
			User:       nh.User,
			Port:       nh.Port,
			Identity:   nh.Identity,
			Jump:       nh.Jump,
			Become:     nh.Become,
			RemoteRoot: nh.RemoteRoot,
			Connection: nh.Connection,
		})
	}
	var declared []string
	groups := strictyaml.MapValue(top, "groups")
	for i := 0; groups != nil && i+1 < len(groups.Content); i += 2 {
		key, val := groups.Content[i], groups.Content[i+1]
		if err := checkGroupName(key.Value); err != nil {
			errs = append(errs, fmt.Errorf("line %d: %w", key.Line, err))
			continue
		}
		if slices.Contains(declared, key.Value) {
			errs = append(errs, fmt.Errorf("line %d: group %s is already defined", key.Line, key.Value))
			continue
		}
		declared = append(declared, key.Value)
		var members []string
		if err := val.Decode(&members); err != nil {
			errs = append(errs, fmt.Errorf("group %s: %w", key.Value, err))
			continue
		}
		for j, m := range members {
			at, ok := index[m]
			if !ok {
				line := val.Line
				if j < len(val.Content) {
					line = val.Content[j].Line
				}
				errs = append(errs, fmt.Errorf("line %d: group %s lists %q, which is not under hosts", line, key.Value, m))
				continue
			}
			inv.Hosts[at].Groups = append(inv.Hosts[at].Groups, key.Value)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for i := range inv.Hosts {
		slices.Sort(inv.Hosts[i].Groups)
		inv.Hosts[i].Groups = slices.Compact(inv.Hosts[i].Groups)
	}
	inv.Groups = groupIndex(inv.Hosts, declared)
	return inv, nil
}
