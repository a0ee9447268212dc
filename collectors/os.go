package collectors

// osReleaseFiles in precedence order: os-release(5) says to use /etc/os-release
// exclusively when it exists and fall back to /usr/lib/os-release otherwise.
var osReleaseFiles = []string{"/etc/os-release", "/usr/lib/os-release"}

func collectOS(c *collection) {
	for _, name := range osReleaseFiles {
		data, ok := c.read("os", name)
		if !ok {
			// Missing, or unreadable and already recorded: try the fallback.
			continue
		}
		vars, errs := parseOSRelease(data)
		for _, err := range errs {
			c.fail("os", name, err)
		}
		for _, f := range []struct {
			fact, key string
			dst       *string
		}{
			{"os.id", "ID", &c.snap.OS.ID},
			{"os.id_like", "ID_LIKE", &c.snap.OS.IDLike},
			{"os.version_id", "VERSION_ID", &c.snap.OS.VersionID},
			{"os.pretty_name", "PRETTY_NAME", &c.snap.OS.PrettyName},
		} {
			if v, ok := vars[f.key]; ok {
				*f.dst = v.Value
				c.from(f.fact, name, v.Line)
			}
		}
		return
	}
}
