// Command gen writes N host snapshots for benchmarks (see
// internal/fleetgen): -unique makes every host differ in facts rules read.
//
//	go run ./bench/gen -n 10000 -o /tmp/snaps
//	go run ./bench/gen -n 10000 -unique -o /tmp/unique
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/fleetaudit/fleetaudit/internal/fleetgen"
)

func main() {
	var o fleetgen.Options
	flag.IntVar(&o.N, "n", 1000, "snapshots to write")
	flag.StringVar(&o.Dir, "o", "", "output directory (created)")
	flag.StringVar(&o.Roots, "roots", "testdata/hosts", "directory of fixture roots")
	flag.Uint64Var(&o.Seed, "seed", 1, "variation seed")
	flag.BoolVar(&o.Unique, "unique", false, "every host differs: its own collection time, memlock limit, sysctls and boot parameters; versions drawn")
	flag.Parse()
	if o.Dir == "" {
		fmt.Fprintln(os.Stderr, "gen: -o DIR is required")
		os.Exit(2)
	}
	if err := fleetgen.Generate(o); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
