//go:build !unix

package procs

import "time"

// cpuTime cannot be read here: Start leaves the processor count alone.
func cpuTime() (time.Duration, bool) { return 0, false }
