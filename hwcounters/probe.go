package hwcounters

// Probe opens evs on the calling thread and closes them again: which
// events this machine, kernel and user can count. It does not need a
// locked thread (availability does not depend on the thread).
func Probe(evs []Event) []Status {
	c, st := Open(evs)
	c.Close()
	return st
}
