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
// while more sockets than there are processors made a call in the
// previous epoch of about a millisecond. Each socket counts once per
// epoch, so the cost is a clock read per call and a few atomic operations
// per socket per millisecond.

// epochShift makes an epoch 2^20 ns, about a millisecond: long enough for
// every client of a busy server to make a call in it, short enough to
// follow a load that stops.
const epochShift = 20

// activity counts, per epoch, the distinct sockets that made a call.
type activity struct {
	epoch atomic.Int64 // the epoch being counted
	count atomic.Int32 // distinct sockets seen in it so far
	busy  atomic.Bool  // the previous epoch saw more than threshold
	// threshold is the number of sockets an epoch must exceed for the
	// next one to be busy.
	threshold int32
}

// load is the process's activity. Its threshold is GOMAXPROCS at start:
// fewer sockets than processors never queue for one.
var load = activity{threshold: int32(runtime.GOMAXPROCS(0))}

// start is the origin of the epochs (time.Since reads the monotonic clock
// only).
var start = time.Now()

// now is the current epoch.
func now() int64 { return int64(time.Since(start)) >> epochShift }

// decide reports whether the socket whose last epoch is last should make
// its call raw (tests replace it to take either path).
var decide = func(last *atomic.Int64) bool { return load.note(last, now()) }

// note records that the socket whose last epoch is last made a call in
// epoch e, and reports whether calls should be raw.
func (a *activity) note(last *atomic.Int64, e int64) bool {
	if last.Load() == e {
		return a.busy.Load()
	}
	last.Store(e)
	cur := a.epoch.Load()
	if e > cur && a.epoch.CompareAndSwap(cur, e) {
		// This socket opens epoch e: the count so far is the previous
		// epoch's, and an epoch in which no socket made a call is idle.
		n := a.count.Swap(1)
		busy := e == cur+1 && n > a.threshold
		a.busy.Store(busy)
		return busy
	}
	a.count.Add(1)
	return a.busy.Load()
}
