package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// newFlagSet returns a FlagSet that reports errors as one-line usage
// errors instead of printing the whole usage. The flag package calls Usage
// on every parse error and on -help alike, so Usage prints nothing:
// parseFlags prints the usage, once, when help was asked for.
func newFlagSet(name, usage string, stdout io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	usages[fs] = func() {
		fmt.Fprint(stdout, usage)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	return fs
}

// usages prints each FlagSet's usage and flags (see newFlagSet).
var usages = map[*flag.FlagSet]func(){}

// errHelp is returned after --help printed the usage.
var errHelp = errors.New("help shown")

// parseFlags parses args, turning flag errors into usage errors that name
// the command, and rejecting stray positional arguments.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usages[fs]()
			return errHelp
		}
		return usagef("%s: %v (see ckbench %s --help)", fs.Name(), err, fs.Name())
	}
	if fs.NArg() > 0 {
		return usagef("%s: unexpected argument %q (flags go after the family, e.g. ckbench sweep attention --hd 128)", fs.Name(), strings.Join(fs.Args(), " "))
	}
	return nil
}
