//go:build unix

package procs

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time (user and system) the process has used.
func cpuTime() (time.Duration, bool) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
