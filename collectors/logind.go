package collectors

func collectLogind(c *collection) {}
