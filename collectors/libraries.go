package collectors

func collectLibraries(c *collection) {}
