package remediate

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/fleetaudit/fleetaudit/configrepo"
	"github.com/fleetaudit/fleetaudit/internal/strictyaml"
)

// addLayer appends layer to fleet's layers in fleetaudit.yaml by editing the
// text where yaml.v3 places the list, so every other byte (comments, order,
// quoting, indentation) stays as the user wrote it. The edited file is
// parsed again and must give the old stack plus layer.
func addLayer(data []byte, fleet, layer string) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", configrepo.ManifestFile, err)
	}
	if len(doc.Content) != 1 {
		return nil, fmt.Errorf("%s: not one YAML document", configrepo.ManifestFile)
	}
	fleets := strictyaml.MapValue(doc.Content[0], "fleets")
	spec := strictyaml.MapValue(fleets, fleet)
	if spec == nil {
		return nil, fmt.Errorf("%s: no fleet %s", configrepo.ManifestFile, fleet)
	}
	seq := strictyaml.MapValue(spec, "layers")
	if seq == nil || seq.Kind != yaml.SequenceNode || len(seq.Content) == 0 {
		return nil, fmt.Errorf("%s: fleet %s: layers is not a list fleetaudit can extend", configrepo.ManifestFile, fleet)
	}
	if seq.Anchor != "" || slices.ContainsFunc(seq.Content, func(n *yaml.Node) bool { return n.Kind != yaml.ScalarNode || n.Alias != nil }) {
		return nil, fmt.Errorf("%s: fleet %s: layers uses anchors or non-scalar items; add layer %s by hand", configrepo.ManifestFile, fleet, layer)
	}
	starts := lineStarts(data)
	last := seq.Content[len(seq.Content)-1]
	lastOff := offset(starts, last.Line, last.Column)
	var out []byte
	if seq.Style&yaml.FlowStyle != 0 {
		end, err := scalarEnd(data, lastOff, last)
		if err != nil {
			return nil, err
		}
		close := bytes.IndexByte(data[end:], ']')
		if close < 0 {
			return nil, fmt.Errorf("%s: fleet %s: no ] after the layers", configrepo.ManifestFile, fleet)
		}
		out = slices.Concat(data[:end], []byte(", "+layer), data[end:])
	} else {
		// A new item line after the last item's line, indented as it is.
		lineStart := starts[last.Line-1]
		dash := bytes.LastIndexByte(data[lineStart:lastOff], '-')
		if dash < 0 || strings.TrimSpace(string(data[lineStart:lineStart+dash])) != "" {
			return nil, fmt.Errorf("%s: fleet %s: the last layer is not on a line of its own; add layer %s by hand", configrepo.ManifestFile, fleet, layer)
		}
		next := len(data)
		if last.Line < len(starts) {
			next = starts[last.Line]
		}
		item := string(data[lineStart:lineStart+dash]) + "- " + layer + "\n"
		prefix := data[:next]
		if len(prefix) > 0 && prefix[len(prefix)-1] != '\n' {
			item = "\n" + item
		}
		out = slices.Concat(prefix, []byte(item), data[next:])
	}
	m, err := configrepo.ParseManifest(out)
	if err != nil {
		return nil, fmt.Errorf("adding layer %s to fleet %s: the edited %s does not parse: %w", layer, fleet, configrepo.ManifestFile, err)
	}
	before, err := configrepo.ParseManifest(data)
	if err != nil {
		return nil, err
	}
	if want := append(slices.Clone(before.Fleets[fleet].Layers), layer); !slices.Equal(m.Fleets[fleet].Layers, want) {
		return nil, fmt.Errorf("adding layer %s to fleet %s: the edit gave layers %v, want %v", layer, fleet, m.Fleets[fleet].Layers, want)
	}
	return out, nil
}

func lineStarts(data []byte) []int {
	starts := []int{0}
	for i, b := range data {
		if b == '\n' && i+1 < len(data) {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// offset turns yaml.v3's 1-based line and column (in runes) into a byte
// offset.
func offset(starts []int, line, col int) int {
	return starts[line-1] + col - 1
}

// scalarEnd is the byte offset just past a flow item that starts at off.
func scalarEnd(data []byte, off int, n *yaml.Node) (int, error) {
	switch n.Style {
	case 0:
		if !bytes.HasPrefix(data[off:], []byte(n.Value)) {
			return 0, errors.New("unexpected layer text in " + configrepo.ManifestFile)
		}
		return off + len(n.Value), nil
	case yaml.DoubleQuotedStyle, yaml.SingleQuotedStyle:
		q := data[off]
		for i := off + 1; i < len(data); i++ {
			if data[i] == '\\' && q == '"' {
				i++
				continue
			}
			if data[i] == q {
				if q == '\'' && i+1 < len(data) && data[i+1] == '\'' {
					i++
					continue
				}
				return i + 1, nil
			}
		}
	}
	return 0, fmt.Errorf("%s: layer %q is written in a style fleetaudit does not edit", configrepo.ManifestFile, n.Value)
}
