package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// newFlagSet returns a FlagSet that reports errors as one-line usage
// errors instead of printing the whole usage.
func newFlagSet(name, usage string, stdout io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		fmt.Fprint(stdout, usage)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	return fs
}

// errHelp is returned after --help printed the usage.
var errHelp = errors.New("help shown")

// parseFlags parses args, turning flag errors into usage errors that name
// the command, and rejecting stray positional arguments.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.Usage()
			return errHelp
		}
		return usagef("%s: %v (see ckbench %s --help)", fs.Name(), err, fs.Name())
	}
	if fs.NArg() > 0 {
		return usagef("%s: unexpected argument %q (flags go after the family, e.g. ckbench sweep attention --hd 128)", fs.Name(), strings.Join(fs.Args(), " "))
	}
	return nil
}
