package collectors

func collectOS(c *collection) {}
