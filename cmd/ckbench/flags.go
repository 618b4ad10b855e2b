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
	if err := parseOnce(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("%s: unexpected argument %q (flags go after the family, e.g. ckbench sweep attention --hd 128)", fs.Name(), strings.Join(fs.Args(), " "))
	}
	return nil
}

// setFlags is the names of the flags given on the command line.
func setFlags(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	return set
}

// parseOnce is fs.Parse with flag errors as usage errors that name the
// command, and --help printing the usage (errHelp).
func parseOnce(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usages[fs]()
			return errHelp
		}
		return usagef("%s: %v (see ckbench %s --help)", fs.Name(), err, fs.Name())
	}
	return nil
}

// parseInterleaved parses flags given before, between or after the
// positional arguments (compare, report), and returns those.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := parseOnce(fs, args); err != nil {
			return nil, err
		}
		// fs.Parse stops at the first argument that is not a flag: keep
		// it, and parse on after it.
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}
