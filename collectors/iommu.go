package collectors

func collectIOMMU(c *collection) {}
