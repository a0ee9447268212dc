package collectors

func collectSysctl(c *collection) {}
