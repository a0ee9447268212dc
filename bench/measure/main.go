// Command measure runs a command and prints its wall time, CPU time (user
// plus system) and peak resident memory, from the kernel's accounting of
// the child: "wall_s cpu_s maxrss_kib exit_code". The command's output goes
// to /dev/null unless -stdout names a file.
//
//	go run ./bench/measure -- fleetaudit audit --snapshots dir --format json -o out.json
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

func main() {
	stdout := flag.String("stdout", "", "write the command's standard output to FILE")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "measure: no command")
		os.Exit(2)
	}
	cmd := exec.Command(flag.Arg(0), flag.Args()[1:]...)
	cmd.Stderr = os.Stderr
	if *stdout != "" {
		f, err := os.Create(*stdout)
		if err != nil {
			fmt.Fprintln(os.Stderr, "measure:", err)
			os.Exit(2)
		}
		defer f.Close()
		cmd.Stdout = f
	}
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		fmt.Fprintln(os.Stderr, "measure:", err)
		os.Exit(2)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		fmt.Fprintln(os.Stderr, "measure: no resource usage on this system")
		os.Exit(2)
	}
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	fmt.Printf("%.2f %.2f %d %d\n", wall.Seconds(), cpu.Seconds(), ru.Maxrss, cmd.ProcessState.ExitCode())
}
