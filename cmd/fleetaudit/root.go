package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/fleetaudit/fleetaudit/reports"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// Exit codes shared by every command.
const (
	exitOK       = 0
	exitFindings = 1
	exitError    = 2
)

type streams struct {
	in       io.Reader
	out, err io.Writer
}

// app holds what every command needs; commands never reach for globals.
type app struct {
	streams
	getenv func(string) string
	v      *viper.Viper
	log    *slog.Logger
}

// usageError marks errors that are the caller's fault (exit 2 with usage hint).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// inputError marks a file a flag names that cannot be used (unreadable,
// invalid): exit 2, without the usage hint, since the flags were right.
type inputError struct{ err error }

func (e inputError) Error() string { return e.err.Error() }
func (e inputError) Unwrap() error { return e.err }

func run(ctx context.Context, args []string, s streams, getenv func(string) string) int {
	a := &app{streams: s, getenv: getenv, v: viper.New()}
	root := newRootCmd(a)
	root.SetArgs(args)
	root.SetIn(s.in)
	root.SetOut(s.out)
	root.SetErr(s.err)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var exit exitCodeError
	if errors.As(err, &exit) {
		return exit.code
	}
	if ctx.Err() != nil {
		// Say what stopped it: the command's error says what was kept.
		err = fmt.Errorf("interrupted (%w): %w", context.Cause(ctx), err)
	}
	// Errors quote file names and host or repo content: escape controls.
	fmt.Fprintf(s.err, "fleetaudit: %s\n", reports.EscapeText(err.Error()))
	var usage usageError
	if errors.As(err, &usage) {
		fmt.Fprintln(s.err, "Run 'fleetaudit --help' for usage.")
	}
	return exitError
}

// exitCodeError ends a command with a specific exit code after it has already
// reported what happened.
type exitCodeError struct{ code int }

func (e exitCodeError) Error() string { return fmt.Sprintf("exit %d", e.code) }

func newRootCmd(a *app) *cobra.Command {
	var configFile, logLevel string
	root := &cobra.Command{
		Use:   "fleetaudit",
		Short: "Audit server fleets for configuration hazards and drift",
		Long: `fleetaudit checks the configuration each host really runs with (boot command line,
sysctls, pam limits, logind, drivers, NCCL and CUDA libraries, RDMA devices) against the
workload of its fleet, and says which file set each value.`,
		Example: `  # Snapshot this host
  fleetaudit collect -o /tmp/$(hostname).json

  # Audit a fleet's snapshots against the rules of each host's fleet
  fleetaudit audit --inventory hosts.ini --snapshots /var/lib/fleetaudit/snapshots

  # What does this config repo change plant in each fleet?
  fleetaudit gate --repo . --base origin/main

  # The rules, and why each exists
  fleetaudit policies list --fleet gpu-training`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			unread, err := a.loadConfig(cmd, configFile)
			if err != nil {
				return err
			}
			level, err := parseLevel(a.v.GetString("log-level"))
			if err != nil {
				return usageError{err}
			}
			a.log = slog.New(slog.NewTextHandler(a.err, &slog.HandlerOptions{Level: level}))
			for _, u := range unread {
				a.log.Warn("environment variable not read: a command's flag comes from FLEETAUDIT_<COMMAND>_<FLAG>", "variable", u[0], "use", u[1])
			}
			return nil
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.PersistentFlags().StringVar(&configFile, "config", "", "config file (default $XDG_CONFIG_HOME/fleetaudit/config.yaml)")
	root.PersistentFlags().StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn, error")
	root.AddCommand(newCollectCmd(a), newAuditCmd(a), newGateCmd(a), newRemediateCmd(a), newPoliciesCmd(a), newVersionCmd(a))
	root.AddCommand(newHistoryCmd(a), newDriftCmd(a), newReportCmd(a))
	registerCompletions(root)
	return root
}

// loadConfig binds flags, FLEETAUDIT_* variables and the config file into one
// viper instance: flags win over env, env over file. Only the global keys
// and the running command's own (its section of the file, its
// FLEETAUDIT_<COMMAND>_<FLAG> variables) apply, so a setting for one command
// never changes another. The working directory is never searched: there a
// fleetaudit.yaml is a config repo's manifest. It returns the variables of
// the old unsectioned form (FLEETAUDIT_FORMAT) that were set and not read,
// each with the name to use.
func (a *app) loadConfig(cmd *cobra.Command, explicit string) (unread [][2]string, err error) {
	v := a.v
	layout := layoutOf(cmd.Root())
	section := topCommand(cmd).Name()
	var bindErr error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if !slices.Contains(notConfigKeys, f.Name) {
			// Env is applied through the flag (not viper's AutomaticEnv) so
			// the injected environment is honoured and a flag given on the
			// command line still wins.
			env := layout.envName(section, f)
			if val := a.getenv(env); val != "" && !f.Changed {
				if err := f.Value.Set(val); err != nil && bindErr == nil {
					bindErr = usageError{fmt.Errorf("%s=%q: %w", env, val, err)}
				}
				f.Changed = true
			}
			if old := "FLEETAUDIT_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_")); old != env && a.getenv(old) != "" {
				unread = append(unread, [2]string{old, env})
			}
		}
		if err := v.BindPFlag(f.Name, f); err != nil && bindErr == nil {
			bindErr = err
		}
	})
	if bindErr != nil {
		return nil, bindErr
	}
	file := explicit
	if file == "" {
		file = a.getenv("FLEETAUDIT_CONFIG")
	}
	if file == "" {
		dir := a.getenv("XDG_CONFIG_HOME")
		if dir == "" {
			if home := a.getenv("HOME"); home != "" {
				dir = filepath.Join(home, ".config")
			}
		}
		if dir == "" {
			return unread, nil
		}
		file = filepath.Join(dir, "fleetaudit", "config.yaml")
		if _, err := os.Stat(file); err != nil {
			return unread, nil
		}
	}
	values, err := readConfig(file, layout, section)
	if err != nil {
		return nil, inputError{err}
	}
	return unread, v.MergeConfigMap(values)
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("invalid --log-level %q: want debug, info, warn or error", s)
	}
	return l, nil
}
