// Command params prints the data document conftest needs to run the built-in
// rules as the engine does for one fleet: {"fleetaudit": {"params", "fleet"}}.
//
//	go run ./bench/params gpu-training > params.json
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/fleetaudit/fleetaudit/fleets"
)

func main() {
	fleet := "gpu-training"
	if len(os.Args) > 1 {
		fleet = os.Args[1]
	}
	set, err := fleets.Load(true)
	if err == nil {
		var p *fleets.Profile
		if p, err = set.Resolve(fleet); err == nil {
			err = json.NewEncoder(os.Stdout).Encode(map[string]any{"fleetaudit": map[string]any{"params": p.Params, "fleet": fleet}})
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "params:", err)
		os.Exit(1)
	}
}
