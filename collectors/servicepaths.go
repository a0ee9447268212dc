package collectors

// JobServiceNames are the unit names and process names (/proc/<pid>/comm)
// of the services the services collector reads, for transports that fetch
// a host's files ahead of collection.
func JobServiceNames() (units, comms []string) {
	for _, js := range jobServices {
		units = append(units, js.unit)
		comms = append(comms, js.comm)
	}
	return units, comms
}
