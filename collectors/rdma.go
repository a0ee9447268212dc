package collectors

func collectRDMA(c *collection) {}
