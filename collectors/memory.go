package collectors

func collectMemory(c *collection) {}
