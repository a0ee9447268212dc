package remediate

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/fleetaudit/fleetaudit/configrepo"
	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

// PodChange is one finding's pod fix: what changes in one container or
// volume of the pod (or workload pod template) at File:Line.
type PodChange struct {
	// File and Line are the manifest and the pod's (or template's) line,
	// from the source of the finding's evidence pods.<i>.
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	// Pod is the pod's namespace/name, for people.
	Pod             string            `json:"pod,omitempty"`
	Container       string            `json:"container,omitempty"`
	AddCapabilities []string          `json:"add_capabilities,omitempty"`
	Limits          map[string]string `json:"limits,omitempty"`
	// Volume gets emptyDir.sizeLimit Size.
	Volume string `json:"volume,omitempty"`
	Size   string `json:"size,omitempty"`
	// Env are variables of Container set to a value; RemoveEnv are
	// variables whose entries are deleted.
	Env       map[string]string `json:"env,omitempty"`
	RemoveEnv []string          `json:"remove_env,omitempty"`
}

var (
	// objectName is a container or volume name (a DNS label, loosely).
	objectName     = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$`)
	capabilityName = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
	// envVarName is a C identifier, what a shell can export.
	envVarName   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	resourceName = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._/-]*[A-Za-z0-9])?$`)
	quantity     = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?([EPTGMK]i|[EPTGMkmun]|[eE][0-9]+)?$`)
)

func parsePodChange(raw map[string]any) (PodChange, error) {
	var c PodChange
	str := func(key string) (string, error) {
		v, ok := raw[key]
		if !ok {
			return "", nil
		}
		s, ok := v.(string)
		if !ok {
			return "", fmt.Errorf("%s: want a string, not %T", key, v)
		}
		return s, nil
	}
	var err error
	if c.File, err = str("file"); err != nil {
		return c, err
	}
	if c.Container, err = str("container"); err != nil {
		return c, err
	}
	if c.AddCapabilities, err = stringList(raw, "add_capabilities"); err != nil {
		return c, err
	}
	vol, err := stringMap(raw, "volume_size_limit")
	if err != nil {
		return c, err
	}
	for k := range vol {
		if k != "volume" && k != "size" {
			return c, fmt.Errorf("volume_size_limit.%s: want volume and size", k)
		}
	}
	if vol != nil {
		c.Volume, c.Size = vol["volume"], vol["size"]
		if !objectName.MatchString(c.Volume) || !quantity.MatchString(c.Size) {
			return c, fmt.Errorf("volume_size_limit: volume %q size %q: want a volume name and a quantity", c.Volume, c.Size)
		}
	}
	if res, ok := raw["resources"]; ok {
		m, ok := res.(map[string]any)
		if !ok {
			return c, errors.New("resources: want an object")
		}
		for k := range m {
			if k != "limits" {
				return c, fmt.Errorf("resources.%s: only limits are set", k)
			}
		}
		if c.Limits, err = stringMap(m, "limits"); err != nil {
			return c, fmt.Errorf("resources: %w", err)
		}
		for k, v := range c.Limits {
			if !resourceName.MatchString(k) || !quantity.MatchString(v) {
				return c, fmt.Errorf("resources.limits: %q: %q: want a resource name and a quantity", k, v)
			}
		}
	}
	if c.Env, err = stringMap(raw, "env"); err != nil {
		return c, err
	}
	for k, v := range c.Env {
		if !envVarName.MatchString(k) || !safeValue.MatchString(v) || v == "" {
			return c, fmt.Errorf("env: %q=%q: want a variable name and a non-empty value of letters, digits and _.,:/@%%+=-", k, v)
		}
	}
	if c.RemoveEnv, err = stringList(raw, "remove_env"); err != nil {
		return c, err
	}
	for _, k := range c.RemoveEnv {
		if !envVarName.MatchString(k) {
			return c, fmt.Errorf("remove_env: %q is not a variable name", k)
		}
		if _, set := c.Env[k]; set {
			return c, fmt.Errorf("env and remove_env both name %s", k)
		}
	}
	for _, capName := range c.AddCapabilities {
		if !capabilityName.MatchString(capName) {
			return c, fmt.Errorf("add_capabilities: %q is not a capability name", capName)
		}
	}
	if (len(c.AddCapabilities) > 0 || len(c.Limits) > 0 || len(c.Env) > 0 || len(c.RemoveEnv) > 0) && !objectName.MatchString(c.Container) {
		return c, fmt.Errorf("container %q: a capability, limit or env change needs the container's name", c.Container)
	}
	if len(c.AddCapabilities)+len(c.Limits)+len(c.Env)+len(c.RemoveEnv) == 0 && c.Volume == "" {
		return c, errors.New("nothing to set")
	}
	return c, nil
}

func (c PodChange) equal(o PodChange) bool {
	return c.File == o.File && c.Line == o.Line && c.Container == o.Container && c.Volume == o.Volume && c.Size == o.Size &&
		slices.Equal(c.AddCapabilities, o.AddCapabilities) && maps.Equal(c.Limits, o.Limits) &&
		maps.Equal(c.Env, o.Env) && slices.Equal(c.RemoveEnv, o.RemoveEnv)
}

func (c PodChange) String() string {
	var b strings.Builder
	if c.File != "" {
		fmt.Fprintf(&b, "%s:%d ", c.File, c.Line)
	}
	if c.Pod != "" {
		fmt.Fprintf(&b, "pod %s ", c.Pod)
	}
	var parts []string
	if len(c.AddCapabilities) > 0 {
		parts = append(parts, fmt.Sprintf("container %s: add capability %s", c.Container, strings.Join(c.AddCapabilities, " ")))
	}
	if len(c.Limits) > 0 {
		parts = append(parts, fmt.Sprintf("container %s: limits %s", c.Container, describeSet(c.Limits)))
	}
	if c.Volume != "" {
		parts = append(parts, fmt.Sprintf("volume %s: emptyDir sizeLimit %s", c.Volume, c.Size))
	}
	if len(c.Env) > 0 {
		parts = append(parts, fmt.Sprintf("container %s: env %s", c.Container, describeSet(c.Env)))
	}
	if len(c.RemoveEnv) > 0 {
		parts = append(parts, fmt.Sprintf("container %s: remove env %s", c.Container, strings.Join(c.RemoveEnv, " ")))
	}
	return b.String() + strings.Join(parts, ", ")
}

// podFact is the evidence path of a pod: "pods.<i>".
var podFact = regexp.MustCompile(`^pods\.[0-9]+$`)

// locatePods is the pod fix of rule's findings in the repo (the ones the
// gate must see resolved), each change placed at the manifest file and
// line its evidence pods.<i> cites.
func locatePods(findings []policies.Finding, rule string) (Fix, error) {
	out := Fix{Kind: KindPod}
	for _, f := range findings {
		if f.Rule != rule {
			continue
		}
		fix, err := ParseFix(f.Fix)
		if errors.Is(err, ErrNoFix) {
			return Fix{}, refuse("%s: the rule gives no fix for this pod (%s), so a fix of the others would leave the finding in the fleet", f.Message, sources(f))
		}
		if err != nil {
			return Fix{}, refuse("%s: %v", f.Message, err)
		}
		if fix.Kind != KindPod || len(fix.Pods) != 1 {
			return Fix{}, refuse("%s: the rule's findings ask for fixes of kinds pod and %s", f.Message, fix.Kind)
		}
		c := fix.Pods[0]
		var where []snapshot.Provenance
		for _, e := range f.Evidence {
			if !podFact.MatchString(e.Fact) {
				continue
			}
			where = append(where, snapshot.ParseProvenance(e.Source))
			if pod, ok := e.Value.(map[string]any); ok {
				if meta, ok := pod["metadata"].(map[string]any); ok {
					c.Pod = fmt.Sprintf("%v/%v", meta["namespace"], meta["name"])
				}
			}
		}
		if len(where) != 1 || where[0].File == "" || where[0].Line == 0 || where[0].Layer != "" || len(where[0].More) > 0 || where[0].Baseline != "" {
			return Fix{}, refuse("%s: its evidence does not name one pod in a manifest file and line (%s), so fleetaudit cannot tell which manifest to edit", f.Message, sources(f))
		}
		if c.File != "" && c.File != where[0].File {
			return Fix{}, refuse("%s: the fix names file %s but the evidence cites %s", f.Message, c.File, where[0].File)
		}
		c.File, c.Line = where[0].File, where[0].Line
		if !slices.ContainsFunc(out.Pods, c.equal) {
			out.Pods = append(out.Pods, c)
		}
	}
	if len(out.Pods) == 0 {
		return Fix{}, refuse("no finding of %s in the repo locates a pod", rule)
	}
	return out, nil
}

// k8sDir is the repo directory of fleet's manifests as configrepo.Render
// finds it: k8s: in the manifest, else k8s/<fleet> when that is a
// directory; "" when the fleet has none.
func k8sDir(co *configrepo.Checkout, m *configrepo.Manifest, fleet string) string {
	spec := m.Fleets[fleet]
	if spec == nil {
		return ""
	}
	if spec.K8s != "" {
		return path.Clean(spec.K8s)
	}
	dir := "k8s/" + fleet
	for name := range co.Files {
		if strings.HasPrefix(name, dir+"/") {
			return dir
		}
	}
	return ""
}

// placePod edits the manifests the fix's changes cite, each one the
// fleet's own: a file an unaffected fleet also renders is never written.
func placePod(co *configrepo.Checkout, m *configrepo.Manifest, fleet string, affected []string, fix Fix) (*Placement, error) {
	own := k8sDir(co, m, fleet)
	if own == "" {
		return nil, refuse("fleet %s has no manifests directory (k8s/%s or k8s: in %s)", fleet, fleet, configrepo.ManifestFile)
	}
	byFile := map[string][]PodChange{}
	for _, c := range fix.Pods {
		if c.File == "" || c.Line == 0 {
			return nil, refuse("the pod fix (%s) names no manifest file and line", c)
		}
		byFile[c.File] = append(byFile[c.File], c)
	}
	p := &Placement{Fleet: fleet, Layer: own, Files: map[string][]byte{}}
	var others []string
	for _, file := range slices.Sorted(maps.Keys(byFile)) {
		if !strings.HasPrefix(file, own+"/") {
			return nil, refuse("%s is not under fleet %s's manifests (%s)", file, fleet, own)
		}
		for _, name := range m.FleetNames() {
			if name == fleet {
				continue
			}
			dir := k8sDir(co, m, name)
			if dir == "" || !strings.HasPrefix(file, dir+"/") {
				continue
			}
			if !slices.Contains(affected, name) {
				return nil, refuse("%s is also rendered for fleet %s (its manifests are %s), which the finding does not hold in: editing it would change that fleet's pods too; give %s a manifest of its own and run again", file, name, dir, fleet)
			}
			others = append(others, name)
		}
		for q := file; q != "."; q = path.Dir(q) {
			if why, refused := co.Refused[q]; refused {
				return nil, refuse("%s: the repo holds %s as something fleetaudit does not write into: %s", file, q, why)
			}
		}
		f, ok := co.Files[file]
		if !ok {
			return nil, refuse("%s: no such file in the repo", file)
		}
		if ext := strings.ToLower(path.Ext(file)); ext == ".json" || bytes.HasPrefix(bytes.TrimLeft(f.Data, " \t\r\n"), []byte("{")) {
			return nil, refuse("%s is JSON: fleetaudit edits only YAML manifests in place; apply %s by hand", file, fix)
		}
		changes := byFile[file]
		// Later pods first: an edit moves only the lines after it.
		slices.SortStableFunc(changes, func(a, b PodChange) int { return b.Line - a.Line })
		data := f.Data
		for _, c := range changes {
			var err error
			if data, err = editPod(data, c); err != nil {
				return nil, refuse("%s:%d: %v", file, c.Line, err)
			}
		}
		if !bytes.Equal(data, f.Data) {
			p.Files[file] = data
		}
	}
	if len(p.Files) == 0 {
		return nil, refuse("the manifests already hold %s; the finding stays for another reason", fix)
	}
	p.Why = fmt.Sprintf("the pods are in fleet %s's manifests (%s)", fleet, own)
	if len(others) > 0 {
		slices.Sort(others)
		p.Why += fmt.Sprintf(", also rendered for %s, where the finding holds too", strings.Join(slices.Compact(others), ", "))
	} else {
		p.Why += ", which no other fleet renders"
	}
	return p, nil
}
