package collectors

func collectNCCLConfig(c *collection) {}
