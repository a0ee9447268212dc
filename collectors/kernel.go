package collectors

func collectKernel(c *collection) {}
