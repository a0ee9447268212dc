package reports

import (
	"bytes"
	"encoding/json"
	"testing"
)

// valueSamples are evidence values as snapshots hold them (see
// examples/fleet/snapshots), and the cases json.Marshal escapes.
var valueSamples = []string{
	`null`, `"6G"`, `4`, `-1.5`, `0`, `true`, `false`, `[]`, `{}`,
	`["drm","drm_kms_helper","ib_core","nvidia","nvidia_peermem"]`,
	`{"mlx5_0":{"driver":"mlx5_core","pci_address":"0000:18:00.0","ports":{"1":{"state":"ACTIVE"}}}}`,
	`{"completion_redirect":true,"direct_translated":false,"egress_control":false,"p2p_request_redirect":true}`,
	`[{"how":"dist-info","kind":"wheel","path":"/opt/train/venv/lib/python3.12/site-packages/nvidia_nccl_cu12-2.21.5.dist-info","version":"2.21.5"}]`,
	`{"b":1,"a":[null,{"d":"x","c":[]}],"":0}`,
	`["<script>&</script>", "quote\" back\\ slash", "tab\t", "del\u007f", "é", "\u2028"]`,
	`{"<k>":1}`, `1e3`, `-0`, `12345678901234567890`, `0.25`,
}

func decodeValue(t testing.TB, s string) (any, bool) {
	d := json.NewDecoder(bytes.NewReader([]byte(s)))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil || d.More() {
		return nil, false
	}
	return v, true
}

// The encoder writes what json.Marshal writes, or leaves the value to it.
func TestValueTextIsJSONMarshals(t *testing.T) {
	for _, s := range valueSamples {
		v, ok := decodeValue(t, s)
		if !ok {
			t.Fatalf("bad sample %s", s)
		}
		var e valueEncoder
		got, fast := e.text(v)
		want := slowValueText(v)
		if fast && string(got) != want {
			t.Errorf("%s: encoder wrote %s, json.Marshal %s", s, got, want)
		}
		if valueText(v) != want {
			t.Errorf("%s: valueText %s, want %s", s, valueText(v), want)
		}
	}
	// What snapshots hold takes the fast way.
	for _, s := range valueSamples[:13] {
		v, _ := decodeValue(t, s)
		var e valueEncoder
		if _, fast := e.text(v); !fast {
			t.Errorf("%s: not written by the encoder", s)
		}
	}
}

// json.Number may hold what is not a number; json.Marshal then fails and
// valueText prints the value as fmt does.
func TestValueTextOfBadNumbers(t *testing.T) {
	for _, n := range []json.Number{"", "01", "1.", "+1", "NaN", "0x10", "1e3", "-", "-.5"} {
		for _, v := range []any{n, []any{n}, map[string]any{"n": n}} {
			var e valueEncoder
			if got, fast := e.text(v); fast && string(got) != slowValueText(v) {
				t.Errorf("%#v: encoder wrote %s, want %s", v, got, slowValueText(v))
			}
			if valueText(v) != slowValueText(v) {
				t.Errorf("%#v: valueText %s, want %s", v, valueText(v), slowValueText(v))
			}
		}
	}
}

// The encoder's reused buffers do not leak one value into the next.
func TestValueEncoderReusesItsBuffers(t *testing.T) {
	var e valueEncoder
	for range 2 {
		for _, s := range valueSamples {
			v, _ := decodeValue(t, s)
			if got, fast := e.text(v); fast && string(got) != slowValueText(v) {
				t.Errorf("%s: %s after other values", s, got)
			}
		}
	}
}

func FuzzValueText(f *testing.F) {
	for _, s := range valueSamples {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, ok := decodeValue(t, s)
		if !ok {
			return
		}
		var e valueEncoder
		if got, fast := e.text(v); fast && string(got) != slowValueText(v) {
			t.Errorf("%s: encoder wrote %s, json.Marshal %s", s, got, slowValueText(v))
		}
	})
}
