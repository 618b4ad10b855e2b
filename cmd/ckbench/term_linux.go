package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// terminal reports whether f is a terminal: it answers the terminal ioctl.
func terminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
