package collectors

func collectPCI(c *collection) {}
