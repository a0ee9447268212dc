package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// commit and date are stamped with -ldflags "-X main.commit=... -X
// main.date=..." by make build and make release, beside main.version.
var (
	commit = ""
	date   = ""
)

func newVersionCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and build date stamped into this binary",
		Long: `version prints what the build stamped into this binary: the release version, the
commit it was built from and that commit's date (release builds are reproducible, so the date
is the commit's, not the build's), then the Go toolchain and platform. A binary built without
stamps (go install) reports what the Go toolchain recorded, or "unknown".`,
		Example: `  fleetaudit version
  fleetaudit version | sed -n 's/^commit: *//p'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s := stampedVersion()
			_, err := fmt.Fprintf(a.out, "fleetaudit %s\ncommit:   %s\ndate:     %s\ngo:       %s\nplatform: %s/%s\n",
				s.version, s.commit, s.date, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		},
	}
}

type stamp struct{ version, commit, date string }

// stampedVersion is what -ldflags set, else what go install recorded: the
// module version and, where VCS stamping was on, the revision and its time.
func stampedVersion() stamp {
	s := stamp{version: version, commit: commit, date: date}
	if info, ok := debug.ReadBuildInfo(); ok {
		if s.version == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			s.version = info.Main.Version
		}
		for _, kv := range info.Settings {
			switch {
			case kv.Key == "vcs.revision" && s.commit == "":
				s.commit = kv.Value
			case kv.Key == "vcs.time" && s.date == "":
				s.date = kv.Value
			}
		}
	}
	if s.commit == "" {
		s.commit = "unknown"
	}
	if s.date == "" {
		s.date = "unknown"
	}
	return s
}
