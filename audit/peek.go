package audit

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/fleetaudit/fleetaudit/internal/safeio"
	"github.com/fleetaudit/fleetaudit/policies/fleetrun"
)

// snapshotHosts reads the host name of each snapshot file, stopping at its
// "host" field; a file whose name cannot be read is left to the engine,
// which reports it.
func snapshotHosts(files *fileList) (map[string]bool, error) {
	hosts := map[string]bool{}
	for f := range files.All() {
		name, err := peekHost(f)
		if err != nil {
			continue
		}
		hosts[name] = true
	}
	return hosts, nil
}

func peekHost(file string) (string, error) {
	f, err := safeio.Open(file) // never blocks on a FIFO
	if err != nil {
		return "", err
	}
	defer f.Close()
	dec := json.NewDecoder(io.LimitReader(f, 64<<20))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return "", fmt.Errorf("%s: not a JSON object", file)
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return "", err
		}
		if key == "host" {
			var name string
			if err := dec.Decode(&name); err != nil {
				return "", err
			}
			return name, nil
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return "", err
		}
	}
	return "", fmt.Errorf("%s: no host", file)
}

// inShard reports whether snapshot file belongs to shard: by the host it
// names, or, when it names none it can be read for, by its file name (the
// name it is reported under), so exactly one shard reports it.
func inShard(shard func(string) bool, file string) bool {
	if shard == nil {
		return true
	}
	name, err := peekHost(file)
	if err != nil {
		name = fleetrun.SnapshotFile(file).Name
	}
	return shard(name)
}
