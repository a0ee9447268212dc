package remediate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/fleetaudit/fleetaudit/internal/strictyaml"
)

// podOp is one edit of a pod: below a container (or a volume's emptyDir),
// keys lead to a scalar set to value or a list value is appended to.
type podOp struct {
	container, volume string
	keys              []string
	value             string
	appendTo          bool
}

func (op podOp) String() string {
	where := "container " + op.container
	if op.volume != "" {
		where = "volume " + op.volume + " emptyDir"
	}
	return fmt.Sprintf("%s %s=%s", where, strings.Join(op.keys, "."), op.value)
}

// editPod applies c to the pod or pod template at c.Line of a YAML
// manifest by text edits where yaml.v3 places the nodes, so comments,
// order, quoting and the other documents stay as they were. Each edit is
// checked: the edited file parses to the old one plus exactly the change.
func editPod(data []byte, c PodChange) ([]byte, error) {
	if bytes.Contains(data, []byte("{{")) {
		return nil, errors.New("the file holds {{ }}: it is a template that renders into the manifest, which fleetaudit does not edit; change the template by hand")
	}
	var ops []podOp
	for _, name := range c.AddCapabilities {
		ops = append(ops, podOp{container: c.Container, keys: []string{"securityContext", "capabilities", "add"}, value: name, appendTo: true})
	}
	for _, k := range slices.Sorted(maps.Keys(c.Limits)) {
		ops = append(ops, podOp{container: c.Container, keys: []string{"resources", "limits", k}, value: c.Limits[k]})
	}
	if c.Volume != "" {
		ops = append(ops, podOp{volume: c.Volume, keys: []string{"sizeLimit"}, value: c.Size})
	}
	for _, op := range ops {
		out, err := applyPodOp(data, c.Line, op)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		data = out
	}
	var envOps []envOp
	for _, k := range slices.Sorted(maps.Keys(c.Env)) {
		envOps = append(envOps, envOp{container: c.Container, name: k, value: c.Env[k]})
	}
	for _, k := range c.RemoveEnv {
		envOps = append(envOps, envOp{container: c.Container, name: k, remove: true})
	}
	for _, op := range envOps {
		out, err := applyEnvOp(data, c.Line, op)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		data = out
	}
	return data, nil
}

func decodeNodes(data []byte) ([]*yaml.Node, error) {
	var docs []*yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		docs = append(docs, &doc)
	}
}

func decodeValues(data []byte) ([]any, error) {
	var docs []any
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		docs = append(docs, doc)
	}
}

// editablePod is the pod a fix edits: its document's index, the pod and
// its spec, and the pod's path in the document.
type editablePod struct {
	doc       int
	pod, spec *yaml.Node
	path      []any
}

// editablePodAt finds the pod at line, refusing one whose pod or spec is
// not a plain mapping (a merge key, an alias): an edit there would change
// what other places share.
func editablePodAt(data []byte, line int) (editablePod, error) {
	docs, err := decodeNodes(data)
	if err != nil {
		return editablePod{}, fmt.Errorf("not YAML fleetaudit can read: %w", err)
	}
	doc, pod, podPath, err := findPod(docs, line)
	if err != nil {
		return editablePod{}, err
	}
	if hasMerge(pod) {
		return editablePod{}, errors.New("the pod uses a YAML merge key (<<); edit it by hand")
	}
	spec := strictyaml.MapValue(pod, "spec")
	if spec == nil || spec.Kind != yaml.MappingNode || hasMerge(spec) || spec.Alias != nil {
		return editablePod{}, errors.New("the pod's spec is not a plain mapping; edit it by hand")
	}
	return editablePod{doc: doc, pod: pod, spec: spec, path: podPath}, nil
}

func applyPodOp(data []byte, line int, op podOp) ([]byte, error) {
	p, err := editablePodAt(data, line)
	if err != nil {
		return nil, err
	}
	doc, pod, podPath, spec := p.doc, p.pod, p.path, p.spec
	var target *yaml.Node
	var targetPath []any
	if op.volume != "" {
		vol, p, err := namedItem(spec, []string{"volumes"}, op.volume, "volume")
		if err != nil {
			return nil, err
		}
		target, targetPath = strictyaml.MapValue(vol, "emptyDir"), append(p, "emptyDir")
		if target == nil || target.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("volume %s is not an emptyDir", op.volume)
		}
	} else if target, targetPath, err = namedItem(spec, []string{"containers", "initContainers"}, op.container, "container"); err != nil {
		return nil, err
	}
	e := &textEdit{data: data, starts: lineStarts(data), step: indentStep(pod)}
	e.seqIndent = e.sequenceIndent(pod)
	out, err := e.ensure(target, op.keys, op.value, op.appendTo)
	if err != nil || out == nil {
		return data, err
	}
	for _, l := range e.touched {
		if text := e.line(l); templated.MatchString(text) {
			return nil, fmt.Errorf("line %d holds a template variable (%s): the value is substituted before the cluster sees it; edit by hand", l, strings.TrimSpace(text))
		}
	}
	if err := sameButOp(data, out, doc, slices.Concat(podPath, []any{"spec"}, targetPath), op); err != nil {
		return nil, err
	}
	return out, nil
}

// templated are envsubst and kustomize-style variables ($VAR, ${VAR}).
var templated = regexp.MustCompile(`\$\{|\$[A-Za-z_]`)

// findPod is the one pod, or pod template, that starts at line: a mapping
// there with spec.containers (a Pod, a List's item), or the value of a key
// there (a workload's template:).
func findPod(docs []*yaml.Node, line int) (int, *yaml.Node, []any, error) {
	type found struct {
		doc  int
		node *yaml.Node
		path []any
	}
	var hits []found
	var walk func(d int, n *yaml.Node, p []any)
	walk = func(d int, n *yaml.Node, p []any) {
		switch n.Kind {
		case yaml.MappingNode:
			if n.Line == line && podLike(n) {
				hits = append(hits, found{d, n, p})
			}
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				kp := slices.Concat(p, []any{k.Value})
				if k.Line == line && v.Line != line && podLike(v) {
					hits = append(hits, found{d, v, kp})
				}
				walk(d, v, kp)
			}
		case yaml.SequenceNode:
			for i, item := range n.Content {
				walk(d, item, slices.Concat(p, []any{i}))
			}
		}
	}
	for d, doc := range docs {
		if len(doc.Content) == 1 {
			walk(d, doc.Content[0], nil)
		}
	}
	if len(hits) != 1 {
		return 0, nil, nil, fmt.Errorf("%d pods or pod templates start at this line, want exactly one (the file changed since the audit?)", len(hits))
	}
	return hits[0].doc, hits[0].node, hits[0].path, nil
}

func podLike(n *yaml.Node) bool {
	spec := strictyaml.MapValue(n, "spec")
	c := strictyaml.MapValue(spec, "containers")
	return c != nil && c.Kind == yaml.SequenceNode
}

func hasMerge(n *yaml.Node) bool {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Tag == "!!merge" {
			return true
		}
	}
	return false
}

// namedItem is the mapping named name in one of spec's lists, and its
// path below spec.
func namedItem(spec *yaml.Node, lists []string, name, what string) (*yaml.Node, []any, error) {
	var hits []*yaml.Node
	var path []any
	for _, list := range lists {
		l := strictyaml.MapValue(spec, list)
		if l == nil || l.Kind != yaml.SequenceNode {
			continue
		}
		for i, item := range l.Content {
			if n := strictyaml.MapValue(item, "name"); item.Kind == yaml.MappingNode && n != nil && n.Value == name {
				hits = append(hits, item)
				path = []any{list, i}
			}
		}
	}
	switch {
	case len(hits) == 0:
		return nil, nil, fmt.Errorf("no %s %s in the pod", what, name)
	case len(hits) > 1:
		return nil, nil, fmt.Errorf("%d %ss named %s in the pod", len(hits), what, name)
	case hasMerge(hits[0]) || hits[0].Anchor != "":
		return nil, nil, fmt.Errorf("%s %s uses a YAML anchor or merge key; edit it by hand", what, name)
	}
	return hits[0], path, nil
}

// textEdit makes one insertion or replacement in data.
type textEdit struct {
	data   []byte
	starts []int
	// step is the file's indentation step; seqIndent how far a block
	// list's dash is indented from its key.
	step, seqIndent int
	touched         []int
}

func (e *textEdit) line(l int) string {
	if l < 1 || l > len(e.starts) {
		return ""
	}
	end := len(e.data)
	if l < len(e.starts) {
		end = e.starts[l]
	}
	return string(e.data[e.starts[l-1]:end])
}

func (e *textEdit) lineStart(l int) int {
	if l < 1 || l > len(e.starts) {
		return len(e.data)
	}
	return e.starts[l-1]
}

// off is n's byte offset; a node past the last line (an empty value at
// the end of the file) is at the end.
func (e *textEdit) off(n *yaml.Node) int {
	if n.Line < 1 || n.Line > len(e.starts) {
		return len(e.data)
	}
	return min(offset(e.starts, n.Line, n.Column), len(e.data))
}

// ensure sets keys below mapping n to value (or appends value to the list
// there), creating the keys missing. nil, nil: already so.
func (e *textEdit) ensure(n *yaml.Node, keys []string, value string, appendTo bool) ([]byte, error) {
	for i, k := range keys {
		if n.Kind != yaml.MappingNode || hasMerge(n) {
			return nil, fmt.Errorf("%s is not a plain mapping", strings.Join(keys[:i], "."))
		}
		v := strictyaml.MapValue(n, k)
		if v == nil {
			return e.insert(n, keys[i:], value, appendTo)
		}
		if v.Kind == yaml.AliasNode || v.Anchor != "" {
			return nil, fmt.Errorf("%s uses a YAML anchor or alias; edit it by hand", strings.Join(keys[:i+1], "."))
		}
		if i < len(keys)-1 {
			if v.Kind != yaml.MappingNode {
				return nil, fmt.Errorf("%s is not a mapping", strings.Join(keys[:i+1], "."))
			}
			n = v
			continue
		}
		if appendTo {
			if v.Kind != yaml.SequenceNode {
				return nil, fmt.Errorf("%s is not a list", strings.Join(keys, "."))
			}
			for _, item := range v.Content {
				if item.Value == value {
					return nil, nil
				}
			}
			return e.appendItem(v, value)
		}
		if v.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("%s is not a value", strings.Join(keys, "."))
		}
		if v.Value == value {
			return nil, nil
		}
		end, err := e.nodeEnd(v)
		if err != nil {
			return nil, err
		}
		e.touched = append(e.touched, v.Line)
		return e.splice(e.off(v), end, scalarText(value)), nil
	}
	return nil, nil
}

func (e *textEdit) splice(from, to int, text string) []byte {
	return slices.Concat(e.data[:from], []byte(text), e.data[to:])
}

// scalarText is value as YAML that reads back as the string value.
func scalarText(value string) string {
	var back any
	if err := yaml.Unmarshal([]byte(value), &back); err == nil && back == value {
		return value
	}
	return `"` + value + `"` // values are checked to need no escapes
}

// insert adds keys (nested) with value under mapping n.
func (e *textEdit) insert(n *yaml.Node, keys []string, value string, appendTo bool) ([]byte, error) {
	leaf := scalarText(value)
	if n.Style&yaml.FlowStyle != 0 {
		text := keys[len(keys)-1] + ": " + leaf
		if appendTo {
			text = keys[len(keys)-1] + ": [" + leaf + "]"
		}
		for j := len(keys) - 2; j >= 0; j-- {
			text = keys[j] + ": {" + text + "}"
		}
		return e.flowAppend(n, '{', '}', text)
	}
	keyIndent := n.Content[0].Column - 1
	end := e.blockEnd(n, keyIndent)
	var b strings.Builder
	for j, k := range keys {
		ind := strings.Repeat(" ", keyIndent+j*e.step)
		switch {
		case j < len(keys)-1:
			fmt.Fprintf(&b, "%s%s:\n", ind, k)
		case appendTo:
			fmt.Fprintf(&b, "%s%s:\n%s- %s\n", ind, k, strings.Repeat(" ", keyIndent+j*e.step+e.seqIndent), leaf)
		default:
			fmt.Fprintf(&b, "%s%s: %s\n", ind, k, leaf)
		}
	}
	return e.insertAfter(end, b.String()), nil
}

func (e *textEdit) appendItem(seq *yaml.Node, value string) ([]byte, error) {
	leaf := scalarText(value)
	if seq.Style&yaml.FlowStyle != 0 {
		return e.flowAppend(seq, '[', ']', leaf)
	}
	dash, end, err := e.itemDash(seq)
	if err != nil {
		return nil, err
	}
	return e.insertAfter(end, strings.Repeat(" ", dash)+"- "+leaf+"\n"), nil
}

// itemDash is the column of the dash of block sequence seq's first item,
// and the line its block ends on (blockEnd): where a new item goes.
func (e *textEdit) itemDash(seq *yaml.Node) (dash, end int, err error) {
	first := seq.Content[0]
	dash = bytes.LastIndexByte(e.data[e.lineStart(first.Line):e.off(first)], '-')
	if dash < 0 {
		return 0, 0, errors.New("a list item fleetaudit cannot find the dash of")
	}
	return dash, e.blockEnd(seq, dash), nil
}

// blockEnd is the last line of block node n that is not blank or a
// comment: its last node's line, and the lines after it indented more than
// indent (a multi-line value's rest). Comments after it stay with what
// follows.
func (e *textEdit) blockEnd(n *yaml.Node, indent int) int {
	end := lastLine(n)
	for l := end + 1; l <= len(e.starts); l++ {
		text := strings.TrimRight(e.line(l), "\r\n")
		trimmed := strings.TrimSpace(text)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		// A line that closes a flow collection cannot start a sibling.
		if len(text)-len(strings.TrimLeft(text, " ")) <= indent && trimmed[0] != ']' && trimmed[0] != '}' {
			break
		}
		end = l
	}
	return end
}

func lastLine(n *yaml.Node) int {
	l := n.Line
	for _, c := range n.Content {
		l = max(l, lastLine(c))
	}
	return l
}

func (e *textEdit) insertAfter(line int, text string) []byte {
	e.touched = append(e.touched, line)
	at := len(e.data)
	if line < len(e.starts) {
		at = e.starts[line]
	}
	if bytes.HasSuffix(e.data[:at], []byte("\r\n")) {
		text = strings.ReplaceAll(text, "\n", "\r\n") // the file's line ends
	}
	if at > 0 && e.data[at-1] != '\n' {
		text = "\n" + text
	}
	return e.splice(at, at, text)
}

// flowAppend adds text as the last entry of flow collection n.
func (e *textEdit) flowAppend(n *yaml.Node, open, close byte, text string) ([]byte, error) {
	start := e.off(n)
	if start >= len(e.data) || e.data[start] != open {
		return nil, fmt.Errorf("a flow collection at line %d that fleetaudit cannot find the text of", n.Line)
	}
	if len(n.Content) == 0 {
		j := start + 1
		for j < len(e.data) && (e.data[j] == ' ' || e.data[j] == '\t') {
			j++
		}
		if j >= len(e.data) || e.data[j] != close {
			return nil, fmt.Errorf("an empty flow collection at line %d written in a way fleetaudit does not edit", n.Line)
		}
		e.touched = append(e.touched, n.Line)
		return e.splice(start+1, j, text), nil
	}
	last := n.Content[len(n.Content)-1]
	end, err := e.nodeEnd(last)
	if err != nil {
		return nil, err
	}
	e.touched = append(e.touched, last.Line)
	return e.splice(end, end, ", "+text), nil
}

// nodeEnd is the offset just past a scalar written on one line or a flow
// collection.
func (e *textEdit) nodeEnd(n *yaml.Node) (int, error) {
	off := e.off(n)
	switch {
	case n.Kind == yaml.ScalarNode && n.Style == 0 && n.Value != "":
		if !bytes.HasPrefix(e.data[off:], []byte(n.Value)) {
			return 0, fmt.Errorf("the value at line %d is written in a way fleetaudit does not edit", n.Line)
		}
		return off + len(n.Value), nil
	case n.Kind == yaml.ScalarNode && (n.Style == yaml.DoubleQuotedStyle || n.Style == yaml.SingleQuotedStyle):
		q := e.data[off]
		for i := off + 1; i < len(e.data) && e.data[i] != '\n'; i++ {
			if e.data[i] == '\\' && q == '"' {
				i++
				continue
			}
			if e.data[i] == q {
				if q == '\'' && i+1 < len(e.data) && e.data[i+1] == '\'' {
					i++
					continue
				}
				return i + 1, nil
			}
		}
	case n.Kind == yaml.MappingNode && n.Style&yaml.FlowStyle != 0, n.Kind == yaml.SequenceNode && n.Style&yaml.FlowStyle != 0:
		depth := 0
		var quote byte
		for i := off; i < len(e.data); i++ {
			b := e.data[i]
			switch {
			case quote != 0:
				if b == '\\' && quote == '"' {
					i++
				} else if b == quote {
					quote = 0
				}
			case b == '"' || b == '\'':
				quote = b
			case b == '{' || b == '[':
				depth++
			case b == '}' || b == ']':
				if depth--; depth == 0 {
					return i + 1, nil
				}
			}
		}
	}
	return 0, fmt.Errorf("the value at line %d is written in a way fleetaudit does not edit", n.Line)
}

// indentStep is the file's indentation: how far a nested block mapping's
// keys are from its key in the pod; 2 when the pod has none.
func indentStep(pod *yaml.Node) int {
	var find func(n *yaml.Node) int
	find = func(n *yaml.Node) int {
		for i := 0; n.Kind == yaml.MappingNode && i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if v.Kind == yaml.MappingNode && v.Style&yaml.FlowStyle == 0 && len(v.Content) > 0 && v.Line > k.Line && v.Content[0].Column > k.Column {
				return v.Content[0].Column - k.Column
			}
		}
		for _, c := range n.Content {
			if s := find(c); s > 0 {
				return s
			}
		}
		return 0
	}
	if s := find(pod); s > 0 {
		return s
	}
	return 2
}

// sequenceIndent is how far the dash of a block list under a key is
// indented from the key in the pod (0 or the step, as the file writes its
// containers:).
func (e *textEdit) sequenceIndent(pod *yaml.Node) int {
	var find func(n *yaml.Node) int
	find = func(n *yaml.Node) int {
		for i := 0; n.Kind == yaml.MappingNode && i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if v.Kind == yaml.SequenceNode && v.Style&yaml.FlowStyle == 0 && len(v.Content) > 0 {
				first := v.Content[0]
				dash := bytes.LastIndexByte(e.data[e.lineStart(first.Line):e.off(first)], '-')
				if dash >= 0 && dash >= k.Column-1 {
					return dash - (k.Column - 1)
				}
			}
		}
		for _, c := range n.Content {
			if s := find(c); s >= 0 {
				return s
			}
		}
		return -1
	}
	if s := find(pod); s >= 0 {
		return s
	}
	return e.step
}

// sameButOp checks that the edited file is the old one with op applied to
// the pod at path in document doc, and nothing else changed.
func sameButOp(old, edited []byte, doc int, path []any, op podOp) error {
	return sameBut(old, edited, doc, path, op.String(), func(m map[string]any) {
		for i, k := range op.keys {
			if i == len(op.keys)-1 {
				if op.appendTo {
					l, _ := m[k].([]any)
					m[k] = append(l, op.value)
				} else {
					m[k] = op.value
				}
				break
			}
			next, ok := m[k].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[k] = next
			}
			m = next
		}
	})
}

// sameBut checks that the edited file is the old one with change applied
// to the mapping at path in document doc (what names the change), and
// nothing else changed.
func sameBut(old, edited []byte, doc int, path []any, what string, change func(m map[string]any)) error {
	before, err := decodeValues(old)
	if err != nil {
		return err
	}
	after, err := decodeValues(edited)
	if err != nil {
		return fmt.Errorf("the edited file does not parse: %w", err)
	}
	if len(before) != len(after) || doc >= len(before) {
		return fmt.Errorf("the edit changed the number of documents (%d -> %d)", len(before), len(after))
	}
	var v any = before[doc]
	for _, step := range path {
		switch s := step.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return fmt.Errorf("the pod's path %v is not plain mappings", path)
			}
			v = m[s]
		case int:
			l, ok := v.([]any)
			if !ok || s >= len(l) {
				return fmt.Errorf("the pod's path %v is not plain lists", path)
			}
			v = l[s]
		}
	}
	m, ok := v.(map[string]any)
	if !ok {
		return errors.New("the edited mapping does not decode as one")
	}
	change(m)
	if !reflect.DeepEqual(before, after) {
		return fmt.Errorf("the edited file is not the old one plus %s alone (a YAML anchor shares the edited part, or the layout is one fleetaudit misread); edit by hand", what)
	}
	return nil
}
