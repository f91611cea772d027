package directio

import (
	"runtime"
	"sync/atomic"
	"time"
)

// Raw calls pay off when the processors are contended: then an ordinary
// system call that spans a sysmon tick hands its processor to another
// thread, a wake-up through the hypervisor. With a lone client there is
// nothing to hand the processor to, and the ordinary call is the faster
// one: the runtime's bookkeeping keeps a thread awake that the next
// packet's wake-up then finds (on the development machine a lone cache
// hit took 40–43 µs p50 that way, 44–49 µs with raw calls).
//
// So the wrapped sockets go the raw way only while the process is busy:
// while more sockets than there are processors (GOMAXPROCS, read as each
// epoch opens) made a call in the previous epoch of about a millisecond.
// Each socket counts once per epoch, so the cost is a clock read per call
// and a few atomic operations per socket per millisecond.

// epochShift makes an epoch 2^20 ns, about a millisecond: long enough for
// every client of a busy server to make a call in it, short enough to
// follow a load that stops.
const epochShift = 20

// countBits is the low part of activity.state that counts sockets.
const countBits = 24

// activity counts, per epoch, the distinct sockets that made a call.
type activity struct {
	// state is the epoch being counted (high bits) and the sockets seen
	// in it so far (low countBits bits), changed together.
	state atomic.Uint64
	busy  atomic.Bool // the previous epoch saw more sockets than processors
	// processors returns the count that an epoch's sockets must exceed
	// (GOMAXPROCS, which package procs changes with the load).
	processors func() int
}

// load is the process's activity.
var load = activity{processors: func() int { return runtime.GOMAXPROCS(0) }}

// start is the origin of the epochs (time.Since reads the monotonic clock
// only).
var start = time.Now()

// now is the current epoch.
func now() uint64 { return uint64(time.Since(start)) >> epochShift }

// decide reports whether the socket whose last epoch is last should make
// its call raw (tests replace it to take either path).
var decide = func(last *atomic.Uint64) bool { return load.note(last, now()) }

// note records that the socket whose last epoch is last made a call in
// epoch e, and reports whether calls should be raw. A socket's reader and
// writer count it once between them.
func (a *activity) note(last *atomic.Uint64, e uint64) bool {
	if old := last.Load(); old == e || !last.CompareAndSwap(old, e) {
		return a.busy.Load()
	}
	for {
		old := a.state.Load()
		cur, n := old>>countBits, old&(1<<countBits-1)
		if e <= cur { // this epoch (or a socket's late look at the last)
			if n == 1<<countBits-1 || a.state.CompareAndSwap(old, old+1) {
				return a.busy.Load()
			}
			continue
		}
		// This socket opens epoch e: n is the previous epoch's count, and
		// an epoch in which no socket made a call is idle.
		if a.state.CompareAndSwap(old, e<<countBits|1) {
			busy := e == cur+1 && n > uint64(a.processors())
			a.busy.Store(busy)
			return busy
		}
	}
}
