// Command ckbench measures how a CPU runs the kernels of LLM inference:
// it sweeps kernel variants across shapes and ISA tiers, checks each
// against a reference, times it honestly and writes CSV, JSON lines and
// benchstat-ready files.
//
//	ckbench info              this machine: CPU, caches, features, tiers, counters
//	ckbench counters          read each performance counter on a calibrated loop
//	ckbench list [family]     kernels, tiers and work models
//	ckbench sweep attention   measure the attention decode kernels
//	ckbench sweep quant       measure the quantized GEMV kernels
//	ckbench verify quant      check the GGML formats against golden vectors
//	ckbench report DIR        an HTML and Markdown report of results folders
//	ckbench compare A B       put results of machines or runs side by side
//
// The command is a thin layer over the packages sweeps, results, machine
// hwcounters and kernels/...; it parses flags, reports errors and picks defaults.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/ckbench/ckbench/sweeps"
)

// version is the ckbench release; the VCS revision is appended when the
// binary carries it (go build stamps it in a git checkout), marked -dirty
// when the tree had uncommitted changes: machine.json and the report say
// which code measured.
const version = "0.1.0-dev"

func versionString() string {
	v := version
	if bi, ok := debug.ReadBuildInfo(); ok {
		rev, dirty := "", false
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && len(s.Value) >= 12:
				rev = s.Value[:12]
			case s.Key == "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if rev != "" {
			v += "+" + rev
			if dirty {
				v += "-dirty" // built from a tree with uncommitted changes
			}
		}
	}
	return v
}

// usageError is bad input: one line on stderr, exit status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

// flagError turns a library's error about a value into bad input, in the
// CLI's words: a sweeps.ParamError names its parameter, which is spelled
// --param here; any other error is given as it is.
func flagError(err error) error {
	if pe, ok := errors.AsType[*sweeps.ParamError](err); ok {
		return usagef("--%s: %s", pe.Param, pe.Msg)
	}
	return usageError{err.Error()}
}

// Exit statuses.
const (
	exitOK          = 0
	exitFailure     = 1 // the run could not complete, or a kernel failed its check
	exitUsage       = 2 // bad input
	exitInternal    = 3 // a bug: a panic caught (never 2, which says the input was bad)
	exitInterrupted = 130
)

const topUsage = `ckbench measures how this CPU runs the kernels of LLM inference.

Usage:
  ckbench info [--json]          CPU, caches, ISA features, which kernel tiers and counters work here
  ckbench counters [--events L]  read each performance counter on a calibrated loop
  ckbench list [family]          kernels, tiers, parameters and work models (FLOPs, bytes)
  ckbench sweep <family> [flags] check and time a family's kernels over a grid
                                 (families: %s)
  ckbench sweep all [--preset P] the whole suite: the roofline, every family, then the report
  ckbench verify quant [--golden DIR]  check the GGML formats byte for byte against golden vectors
  ckbench roofline [--quick]     measure compute and bandwidth ceilings (roofline.json)
  ckbench report DIR...          a report to hand on: DIR/report/index.html, report.md, charts
  ckbench compare A B [C...]     put results folders (machines, runs, builds) side by side
  ckbench compare DIR            a fleet: every results folder under DIR, nodes grouped by CPU model
  ckbench version                print the version

Run 'ckbench <command> --help' for the flags of a command.
Results go to out/<run-id>/: machine.json, points.csv, points.jsonl and bench.txt.
Compare two machines (or two builds), point by point:
  ckbench compare a b            (medians, confidence intervals, p-values, geomeans, compare.png)
  benchstat a/bench.txt b/bench.txt
Compare the tiers of one run side by side:
  benchstat -col /isa out/<run-id>/bench.txt
(go install golang.org/x/perf/cmd/benchstat@latest)
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the whole program; tests call it directly.
func run(args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(stderr, "ckbench: internal error (a bug in ckbench, please report it with this message): %v\n%s", p, debug.Stack())
			code = exitInternal
		}
	}()
	err := dispatch(args, stdout, stderr)
	var pe *sweeps.PanicError
	var ue usageError
	var ex exitError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &pe):
		fmt.Fprintf(stderr, "ckbench: %v\n", err)
		return exitInternal
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "ckbench: %s\n", oneLine(ue.msg))
		return exitUsage
	case errors.As(err, &ex):
		if ex.msg != "" {
			fmt.Fprintf(stderr, "ckbench: %s\n", ex.msg)
		}
		return ex.code
	}
	fmt.Fprintf(stderr, "ckbench: %v\n", err)
	return exitFailure
}

// oneLine escapes the line breaks of msg (a path or value given on the
// command line can hold one), so that bad input is answered by one line.
func oneLine(msg string) string {
	return strings.NewReplacer("\r", `\r`, "\n", `\n`).Replace(msg)
}

// exitError ends the program with a given status.
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string { return e.msg }

func dispatch(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintf(stderr, topUsage, strings.Join(sweeps.FamilyNames(), ", "))
		return exitError{code: exitUsage, msg: "no command given"}
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprintf(stdout, topUsage, strings.Join(sweeps.FamilyNames(), ", "))
		return nil
	case "version", "--version":
		if len(args) > 1 {
			return usagef("version: unexpected argument %q (ckbench version takes none)", strings.Join(args[1:], " "))
		}
		fmt.Fprintln(stdout, "ckbench", versionString())
		return nil
	case "info":
		return cmdInfo(args[1:], stdout)
	case "list":
		return cmdList(args[1:], stdout)
	case "sweep":
		return cmdSweep(args[1:], stdout, stderr)
	case "roofline":
		return cmdRoofline(args[1:], stdout, stderr)
	case "counters":
		return cmdCounters(args[1:], stdout)
	case "verify":
		return cmdVerify(args[1:], stdout)
	case "compare":
		return cmdCompare(args[1:], stdout, stderr)
	case "report":
		return cmdReport(args[1:], stdout, stderr)
	}
	return usagef("unknown command %q (commands: info, counters, list, sweep, roofline, report, compare, verify, version; see ckbench --help)", args[0])
}
