//go:build !unix

package budget

import "time"

// processCPU is not measured here: the benchmarks then report no CPU.
func processCPU() time.Duration { return 0 }
