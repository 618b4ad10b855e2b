package results

import "golang.org/x/sys/unix"

// freeBytes is the space an unprivileged process may still write in the
// file system holding dir; ok is false where it cannot be read.
func freeBytes(dir string) (free int64, ok bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail) * st.Bsize, true
}
