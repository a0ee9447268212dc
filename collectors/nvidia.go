package collectors

func collectNVIDIA(c *collection) {}
