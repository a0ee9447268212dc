package collectors

func collectLimits(c *collection) {}
