package collectors

func collectModules(c *collection) {}
