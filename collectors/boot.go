package collectors

func collectBoot(c *collection) {}
