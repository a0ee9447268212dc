// Command gitea is Gitea's own main (code.gitea.io/gitea v1.27.3, whose
// go.mod names the module gitea.dev), built through this wrapper module
// because `go install` refuses a module with replace directives. It exists
// only so fleetaudit's end-to-end test can run a real forge on loopback.
package main

import (
	"os"
	"runtime"
	"strings"
	"time"

	"gitea.dev/cmd"
	"gitea.dev/modules/log"
	"gitea.dev/modules/setting"

	// register supported doc types, as gitea's main does
	_ "gitea.dev/modules/markup/console"
	_ "gitea.dev/modules/markup/csv"
	_ "gitea.dev/modules/markup/jupyter"
	_ "gitea.dev/modules/markup/markdown"
	_ "gitea.dev/modules/markup/orgmode"

	"github.com/urfave/cli/v3"
)

// Set by build.sh through -ldflags -X, as gitea's Makefile does.
var (
	Version = "development"
	Tags    = ""
)

func init() {
	setting.AppVer = Version
	setting.AppBuiltWith = builtWith()
	setting.AppStartTime = time.Now().UTC()
}

func main() {
	cli.OsExiter = func(code int) {
		log.GetManager().Close()
		os.Exit(code)
	}
	app := cmd.NewMainApp(cmd.AppVersion{Version: Version, Extra: builtWith()})
	_ = cmd.RunMainApp(app, os.Args...) // RunMainApp reports its own errors
	log.GetManager().Close()
}

func builtWith() string {
	if Tags == "" {
		return " built with " + runtime.Version()
	}
	return " built with " + runtime.Version() + " : " + strings.ReplaceAll(Tags, " ", ", ")
}
