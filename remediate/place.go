package remediate

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/fleetaudit/fleetaudit/configrepo"
)

// Placement is where a fix goes in the repo.
type Placement struct {
	Fleet string `json:"fleet"`
	// Layer is the layer written to; NewLayer is set when the fix adds it
	// to the fleet's stack (its only layers were shared). For a pod fix it
	// is the fleet's manifests directory ("k8s/gpu-training").
	Layer    string `json:"layer"`
	NewLayer bool   `json:"new_layer,omitempty"`
	// Files are the repo files written, by path, whole.
	Files map[string][]byte `json:"-"`
	// Why says why this layer, for people.
	Why string `json:"why"`
}

// Paths are the files written, sorted.
func (p *Placement) Paths() []string { return slices.Sorted(maps.Keys(p.Files)) }

// Refusal is a fix that cannot be placed or was not proven, with why.
type Refusal struct{ Reason string }

func (r *Refusal) Error() string { return r.Reason }

func refuse(format string, args ...any) error { return &Refusal{Reason: fmt.Sprintf(format, args...)} }

// Place puts fix for fleet into the layers of the fleet that no unaffected
// fleet uses (the last such layer of its stack, so its drop-in is read
// last), or into a new layer of the fleet's own. affected are the fleets
// the finding holds in, fleet among them; a layer any other fleet uses is
// never written. A fix that only a shared layer could hold is refused. A
// pod fix edits the manifests its changes cite (see placePod).
func Place(co *configrepo.Checkout, m *configrepo.Manifest, fleet string, affected []string, fix Fix) (*Placement, error) {
	spec := m.Fleets[fleet]
	if spec == nil {
		return nil, refuse("fleet %s is not in %s", fleet, configrepo.ManifestFile)
	}
	if m.Render != nil {
		return nil, refuse("this repo's fleets are written by a render command (render: in %s): fleetaudit does not know which of its files the command owns, so it cannot place %s", configrepo.ManifestFile, fix)
	}
	switch fix.Kind {
	case KindPod:
		return placePod(co, m, fleet, affected, fix)
	case KindBootParam:
		if len(fix.Remove) > 0 {
			return nil, refuse("removing boot parameter %s: the kernel takes the last occurrence of a parameter, so a later drop-in can override a value but cannot take a parameter off the command line; delete it from the file that sets it (see the finding's evidence), and if that file is in a layer other fleets share, move it to their own layers", strings.Join(fix.Remove, ", "))
		}
	}
	unaffected := map[string]bool{}
	for _, name := range m.FleetNames() {
		if !slices.Contains(affected, name) && name != fleet {
			unaffected[name] = true
		}
	}
	usedBy := func(layer string) []string {
		var users []string
		for _, name := range m.FleetNames() {
			if unaffected[name] && slices.Contains(m.Fleets[name].Layers, layer) {
				users = append(users, name)
			}
		}
		return users
	}
	p := &Placement{Fleet: fleet, Files: map[string][]byte{}}
	var shared []string
	for i := len(spec.Layers) - 1; i >= 0; i-- {
		l := spec.Layers[i]
		if users := usedBy(l); len(users) > 0 {
			shared = append(shared, fmt.Sprintf("%s (also %s)", l, strings.Join(users, ", ")))
			continue
		}
		p.Layer = l
		break
	}
	if p.Layer != "" {
		p.Why = fmt.Sprintf("layer %s is the last layer of %s's stack [%s] that no unaffected fleet uses", p.Layer, fleet, strings.Join(spec.Layers, ", "))
		if len(shared) > 0 {
			slices.Reverse(shared)
			p.Why += "; shared layers left alone: " + strings.Join(shared, ", ")
		}
	} else {
		layer := fleet
		dir := "layers/" + layer + "/"
		for _, name := range m.FleetNames() {
			if slices.Contains(m.Fleets[name].Layers, layer) {
				return nil, refuse("every layer of %s is shared with fleets the finding does not hold in (%s), and the layer name %s for its own layer is already used by fleet %s; add a layer of %s's own to %s and run again", fleet, strings.Join(shared, ", "), layer, name, fleet, configrepo.ManifestFile)
			}
		}
		for name := range co.Files {
			if strings.HasPrefix(name, dir) {
				return nil, refuse("every layer of %s is shared with fleets the finding does not hold in (%s), and %s already holds files no fleet stacks; add a layer of %s's own to %s and run again", fleet, strings.Join(shared, ", "), dir, fleet, configrepo.ManifestFile)
			}
		}
		mf, ok := co.Files[configrepo.ManifestFile]
		if !ok {
			return nil, refuse("no %s", configrepo.ManifestFile)
		}
		edited, err := addLayer(mf.Data, fleet, layer)
		if err != nil {
			return nil, refuse("every layer of %s is shared with fleets the finding does not hold in (%s), and a layer of its own cannot be added: %v", fleet, strings.Join(shared, ", "), err)
		}
		p.Files[configrepo.ManifestFile] = edited
		p.Layer, p.NewLayer = layer, true
		slices.Reverse(shared)
		p.Why = fmt.Sprintf("every layer of %s is shared with a fleet the finding does not hold in (%s): a new layer %s of its own goes last in its stack", fleet, strings.Join(shared, ", "), layer)
	}
	write := func(rel string, edit func([]byte) ([]byte, error)) error {
		name := "layers/" + p.Layer + "/" + rel
		var old []byte
		for p := name; p != "."; p = path.Dir(p) {
			if why, refused := co.Refused[p]; refused {
				return refuse("%s: the repo holds %s as something fleetaudit does not write into: %s", name, p, why)
			}
		}
		if f, ok := co.Files[name]; ok {
			old = f.Data
		}
		data, err := edit(old)
		if err != nil {
			return refuse("%s: %v", name, err)
		}
		p.Files[name] = data
		return nil
	}
	plain := func(f func([]byte) []byte) func([]byte) ([]byte, error) {
		return func(b []byte) ([]byte, error) { return f(b), nil }
	}
	var err error
	switch fix.Kind {
	case KindBootParam:
		err = write(grubDropin, func(b []byte) ([]byte, error) { return editGrub(b, fix.Set) })
	case KindSysctl:
		err = write(sysctlDropin, plain(func(b []byte) []byte { return editSysctl(b, fix.Set) }))
	case KindLimits:
		err = write(limitsDropin, plain(func(b []byte) []byte { return editLimits(b, fix.Set) }))
	case KindLogind:
		err = write(logindDropin, plain(func(b []byte) []byte { return editLogind(b, fix.Set) }))
	case KindNCCLEnv:
		err = write(ncclDropin, plain(func(b []byte) []byte { return editNCCLEnv(b, fix.Set) }))
	case KindServiceLimits:
		for _, unit := range slices.Sorted(maps.Keys(fix.Services)) {
			set := fix.Services[unit]
			if err = write(serviceDropin(unit), plain(func(b []byte) []byte { return editServiceLimits(b, set) })); err != nil {
				break
			}
		}
	case KindModules:
		if len(fix.Load) > 0 {
			err = write(modulesDropin, plain(func(b []byte) []byte { return editList(b, fix.Load) }))
		}
		if err == nil && len(fix.Blacklist) > 0 {
			var lines []string
			// blacklist makes systemd-modules-load skip the module quietly
			// at boot; the install line makes a "modprobe NAME" by name (a
			// vendor's own service) fail instead of loading it.
			for _, m := range fix.Blacklist {
				lines = append(lines, "blacklist "+m, "install "+m+" /bin/false")
			}
			err = write(modprobeDropin, plain(func(b []byte) []byte { return editList(b, lines) }))
		}
	default:
		err = refuse("fix kind %s has no placement", fix.Kind)
	}
	if err != nil {
		return nil, err
	}
	// An edit that leaves a file as it was changes nothing: the value is
	// already there and is not what holds.
	for name, data := range p.Files {
		if f, ok := co.Files[name]; ok && string(f.Data) == string(data) {
			delete(p.Files, name)
		}
	}
	if len(p.Files) == 0 {
		return nil, refuse("layer %s already holds %s; the finding stays for another reason (a later layer or file overrides it)", p.Layer, fix)
	}
	return p, nil
}
