package collectors

import "slices"

// systemd ≥ 254 reads the first logind.conf found in these directories
// (earlier versions only /etc/systemd); drop-ins come from all of them.
var (
	logindMainFiles = []string{
		"/etc/systemd/logind.conf",
		"/run/systemd/logind.conf",
		"/usr/local/lib/systemd/logind.conf",
		"/usr/lib/systemd/logind.conf",
	}
	logindDropinDirs = []string{
		"/etc/systemd/logind.conf.d",
		"/run/systemd/logind.conf.d",
		"/usr/local/lib/systemd/logind.conf.d",
		"/usr/lib/systemd/logind.conf.d",
	}
)

const removeIPCFact = "logind.remove_ipc"

func collectLogind(c *collection) {
	const name = "logind"
	lg := &c.snap.Logind
	lg.Files = []string{}
	if bin, ok := c.firstExisting(logindBinaries); ok {
		lg.Installed = true
		c.from("logind.installed", bin, 0)
	} else {
		c.defaulted("logind.installed", "no systemd-logind binary in /usr/lib/systemd or /lib/systemd")
	}

	var files []string
	for _, f := range c.listConfFiles(name, logindDropinDirs, ".conf") {
		files = append(files, f.Real)
	}
	// A main file that is (or links to) a drop-in is read once, as the
	// drop-in, as config_parse_many_files does.
	if main, ok := c.firstExisting(logindMainFiles); ok {
		if real := c.realPath(main); real != "/dev/null" && !slices.Contains(files, real) {
			files = append([]string{real}, files...)
		}
	}

	var last *logindAssignment
	var lastFile string
	for _, file := range files {
		data, ok := c.read(name, file)
		if !ok {
			continue
		}
		lg.Files = append(lg.Files, file)
		conf, errs := parseLogindConf(data)
		for _, err := range errs {
			// logind ignores what it cannot parse and runs with the
			// rest (conf-parser.c:252 parse_line: "Missing '=', ignoring
			// line", :929 config_parse_bool "ignoring"); a file
			// config_parse abandons (:419) ends the reading (:524), and
			// logind.c:1201 run() keeps what was parsed: "(void)
			// manager_parse_config_file(m)" (v252).
			// Either way the value below is the one logind applies.
			c.skipped(name, file, err)
		}
		if n := len(conf.RemoveIPC); n > 0 {
			last, lastFile = &conf.RemoveIPC[n-1], file
		}
		if conf.Stopped {
			break
		}
	}

	if last != nil {
		lg.RemoveIPC = logindBool(last.RemoveIPC)
		c.from(removeIPCFact, lastFile, last.Line)
		return
	}
	removeIPC, why := removeIPCDefault(c.snap.OS)
	lg.RemoveIPC = logindBool(removeIPC)
	lg.RemoveIPCDefault = true
	c.defaulted(removeIPCFact, why)
}

// logindBinaries are where distributions install systemd-logind (split-usr
// hosts keep it under /lib).
var logindBinaries = []string{"/usr/lib/systemd/systemd-logind", "/lib/systemd/systemd-logind"}

func logindBool(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
