package policies

import (
	"context"
	"testing"

	"github.com/fleetaudit/fleetaudit/policies/internal/testhost"
	"github.com/open-policy-agent/opa/v1/rego"
)

// BenchmarkEvalHost measures one host's evaluation against the built-in
// library, over a mix of ten hosts (one with the CMA hazard, one with
// RemoveIPC and collection errors, eight clean of host findings).
// parsed-input is what EvalHost does (the snapshot converted once with
// ast.InterfaceToValue); map-input hands OPA the map instead, which it
// round-trips before converting.
func BenchmarkEvalHost(b *testing.B) {
	e := newEngine(b, Options{Fleets: gpuFleets()})
	ctx := context.Background()
	docs := make([]map[string]any, 10)
	for i := range docs {
		docs[i] = testhost.Bench(i).Doc(b)
	}

	b.Run("parsed-input", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, err := e.EvalHost(ctx, docs[i%len(docs)], "gpu-training"); err != nil {
				b.Fatal(err)
			}
			i++
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "hosts/s")
	})
	b.Run("map-input", func(b *testing.B) {
		ps := e.fleets["gpu-training"].host
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			doc := docs[i%len(docs)]
			rs, err := ps.query.Eval(ctx, rego.EvalInput(doc))
			if err != nil {
				b.Fatal(err)
			}
			host := doc["host"].(string)
			if _, err := ps.findings(rs, func(*Rule, map[string]any) (string, map[string]any, error) { return host, doc, nil }, "gpu-training", nil, nil); err != nil {
				b.Fatal(err)
			}
			i++
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "hosts/s")
	})
}
