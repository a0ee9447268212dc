package collectors

func collectProcesses(c *collection) {}
