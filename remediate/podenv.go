package remediate

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/fleetaudit/fleetaudit/internal/strictyaml"
)

// envOp sets (or removes) one variable of a container's env list.
type envOp struct {
	container, name, value string
	remove                 bool
}

func (op envOp) String() string {
	if op.remove {
		return fmt.Sprintf("container %s: remove env %s", op.container, op.name)
	}
	return fmt.Sprintf("container %s: env %s=%s", op.container, op.name, op.value)
}

// applyEnvOp edits the env list of op.container in the pod at line. A
// variable is set by replacing its value, or by appending an entry when
// the list has none; it is removed by deleting its entry's lines. Like
// applyPodOp, the edited file must parse to the old one plus exactly the
// change. What fleetaudit cannot change without guessing is refused: a
// value from valueFrom (a ConfigMap, Secret or field), two entries of one
// name, a removal the container's envFrom or a $(NAME) reference would see.
func applyEnvOp(data []byte, line int, op envOp) ([]byte, error) {
	p, err := editablePodAt(data, line)
	if err != nil {
		return nil, err
	}
	doc, pod, podPath, spec := p.doc, p.pod, p.path, p.spec
	ctr, ctrPath, err := namedItem(spec, []string{"containers", "initContainers"}, op.container, "container")
	if err != nil {
		return nil, err
	}
	env := strictyaml.MapValue(ctr, "env")
	if env != nil && (env.Kind == yaml.AliasNode || env.Anchor != "") {
		return nil, errors.New("env uses a YAML anchor or alias; edit it by hand")
	}
	if env != nil && env.Kind != yaml.SequenceNode {
		return nil, errors.New("env is not a list; edit it by hand")
	}
	var entries []*yaml.Node
	if env != nil {
		for _, item := range env.Content {
			if item.Kind != yaml.MappingNode || hasMerge(item) || item.Anchor != "" {
				return nil, fmt.Errorf("env item at line %d is not a plain mapping; edit it by hand", item.Line)
			}
			if n := strictyaml.MapValue(item, "name"); n != nil && n.Value == op.name {
				entries = append(entries, item)
			}
		}
	}
	e := &textEdit{data: data, starts: lineStarts(data), step: indentStep(pod)}
	e.seqIndent = e.sequenceIndent(pod)
	var out []byte
	if op.remove {
		out, err = e.removeEnv(data, ctr, env, entries, op)
	} else {
		out, err = e.setEnv(ctr, env, entries, op)
	}
	if err != nil || out == nil {
		return data, err
	}
	for _, l := range e.touched {
		if text := e.line(l); templated.MatchString(text) {
			return nil, fmt.Errorf("line %d holds a template variable (%s): the value is substituted before the cluster sees it; edit by hand", l, strings.TrimSpace(text))
		}
	}
	path := slices.Concat(podPath, []any{"spec"}, ctrPath)
	if err := sameBut(data, out, doc, path, op.String(), func(m map[string]any) { op.applyTo(m) }); err != nil {
		return nil, err
	}
	return out, nil
}

// applyTo makes op's change to a decoded container, for sameBut.
func (op envOp) applyTo(ctr map[string]any) {
	l, _ := ctr["env"].([]any)
	var kept []any
	found := false
	for _, x := range l {
		item, _ := x.(map[string]any)
		if item == nil || item["name"] != op.name {
			kept = append(kept, x)
			continue
		}
		found = true
		if !op.remove {
			item["value"] = op.value
			kept = append(kept, item)
		}
	}
	if !op.remove && !found {
		kept = append(kept, map[string]any{"name": op.name, "value": op.value})
	}
	if len(kept) == 0 {
		delete(ctr, "env")
		return
	}
	ctr["env"] = kept
}

func (e *textEdit) setEnv(ctr, env *yaml.Node, entries []*yaml.Node, op envOp) ([]byte, error) {
	name, value := scalarText(op.name), scalarText(op.value)
	flowItem := "{name: " + name + ", value: " + value + "}"
	switch {
	case len(entries) > 1:
		return nil, fmt.Errorf("%d env entries named %s: the last one wins; remove the others by hand", len(entries), op.name)
	case len(entries) == 1:
		if strictyaml.MapValue(entries[0], "valueFrom") != nil {
			return nil, fmt.Errorf("env %s takes its value from valueFrom (a ConfigMap, Secret or field), which the finding cannot see; change it there or by hand", op.name)
		}
		return e.ensure(entries[0], []string{"value"}, op.value, false)
	case env == nil && ctr.Style&yaml.FlowStyle != 0:
		return e.flowAppend(ctr, '{', '}', "env: ["+flowItem+"]")
	case env == nil:
		keyIndent := ctr.Content[0].Column - 1
		end := e.blockEnd(ctr, keyIndent)
		dash := strings.Repeat(" ", keyIndent+e.seqIndent)
		return e.insertAfter(end, fmt.Sprintf("%senv:\n%s- name: %s\n%s  value: %s\n", strings.Repeat(" ", keyIndent), dash, name, dash, value)), nil
	case env.Style&yaml.FlowStyle != 0:
		return e.flowAppend(env, '[', ']', flowItem)
	}
	first := env.Content[0]
	dash, end, err := e.itemDash(env)
	if err != nil {
		return nil, err
	}
	if first.Style&yaml.FlowStyle != 0 {
		return e.insertAfter(end, strings.Repeat(" ", dash)+"- "+flowItem+"\n"), nil
	}
	keyCol := dash + 2
	if len(first.Content) > 0 && first.Content[0].Line == first.Line {
		keyCol = first.Content[0].Column - 1
	}
	return e.insertAfter(end, fmt.Sprintf("%s- %sname: %s\n%svalue: %s\n", strings.Repeat(" ", dash), strings.Repeat(" ", keyCol-dash-2), name, strings.Repeat(" ", keyCol), value)), nil
}

// removeEnv deletes the lines of the entries named op.name, or the whole
// env key when they are all it holds. nil, nil: there is none.
func (e *textEdit) removeEnv(data []byte, ctr, env *yaml.Node, entries []*yaml.Node, op envOp) ([]byte, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	if strictyaml.MapValue(ctr, "envFrom") != nil {
		return nil, fmt.Errorf("container %s also takes variables from envFrom, which may set %s too: removing the entry could bring that value in; edit by hand", op.container, op.name)
	}
	if bytes.Contains(data, []byte("$("+op.name+")")) {
		return nil, fmt.Errorf("the file refers to $(%s), which Kubernetes expands from the container's env: removing it changes that text; edit by hand", op.name)
	}
	if env.Style&yaml.FlowStyle != 0 {
		return nil, errors.New("env is written in flow style ([...]); edit it by hand")
	}
	type span struct{ from, to int } // lines, inclusive
	var spans []span
	for _, item := range entries {
		if item.Style&yaml.FlowStyle != 0 && item.Line != lastLine(item) {
			return nil, fmt.Errorf("env item at line %d spans lines in flow style; edit it by hand", item.Line)
		}
		before := e.data[e.lineStart(item.Line):e.off(item)]
		dash := bytes.LastIndexByte(before, '-')
		if dash < 0 || strings.TrimSpace(string(before[:dash])) != "" || strings.TrimSpace(string(before[dash+1:])) != "" {
			return nil, fmt.Errorf("env item at line %d does not start its line with \"- \"; edit it by hand", item.Line)
		}
		spans = append(spans, span{item.Line, e.blockEnd(item, dash)})
	}
	if len(entries) == len(env.Content) {
		// Nothing left: remove the key too, so the container reads as one
		// that never had env (an empty "env:" is null, not a list).
		var key *yaml.Node
		for i := 0; i+1 < len(ctr.Content); i += 2 {
			if ctr.Content[i+1] == env {
				key = ctr.Content[i]
			}
		}
		if key == nil || ctr.Style&yaml.FlowStyle != 0 || key.Line >= env.Content[0].Line {
			return nil, errors.New("env is written in a way fleetaudit does not edit; edit it by hand")
		}
		spans = []span{{key.Line, spans[len(spans)-1].to}}
	}
	out := e.data
	for i := len(spans) - 1; i >= 0; i-- {
		from, to := e.lineStart(spans[i].from), e.lineStart(spans[i].to+1)
		out = slices.Concat(out[:from], out[to:])
	}
	return out, nil
}
