package procs

import (
	"context"
	"log/slog"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync/atomic"
	"time"
)

// settings are the controller's thresholds and clock (see the package
// doc); tests use their own.
type settings struct {
	tick           time.Duration // how often system calls are looked at
	ticksPerPeriod int           // ticks per decision
	upCores        float64       // of one core, on one processor
	upBlocked      float64       // of the ticks, on one processor
	downCores      float64       // of one core, on the maximum
	downBlocked    float64       // of the ticks, on the maximum
	downAfter      int           // quiet periods in a row
	// On the most, a load below probeCores that has not waited in system
	// calls (below downBlocked) for probeAfter periods in a row is tried
	// on one processor; a try that turns busy within downAfter periods
	// doubles the wait before the next, up to probeAfterMost periods.
	probeCores     float64
	probeAfter     int
	probeAfterMost int
}

var defaults = settings{
	tick:           10 * time.Millisecond,
	ticksPerPeriod: 25, // 250 ms
	upCores:        0.8,
	upBlocked:      0.1,
	downCores:      0.6,
	downBlocked:    0.05,
	downAfter:      4,
	probeCores:     1.2,
	probeAfter:     8,   // 2 s
	probeAfterMost: 128, // 32 s
}

// load is what one period showed.
type load struct {
	cores float64 // the CPU the process used, in cores
	// blocked is the share of ticks at which a goroutine was in a system
	// call, or the share of the period goroutines declared they waited
	// (Waited), whichever is larger.
	blocked float64
}

// waited is the time declared by Waited since the loop last read it, in
// nanoseconds.
var waited atomic.Int64

// Waited tells the sizing that a goroutine has just spent d in a call
// that waits in the kernel without using CPU: a durable commit's fsync.
// Such waits are sampled at every tick too, but on one processor the
// sample comes out low exactly when it matters: the waiter holds the only
// processor until the runtime takes it back, and the sampling goroutine
// needs that processor to look. A declared wait counts in full.
func Waited(d time.Duration) { waited.Add(int64(d)) }

// periodLoad is one period's load: cpu used in elapsed, blockedTicks of
// ticks sampled blocked, and waitedNs declared.
func periodLoad(cpu, elapsed time.Duration, blockedTicks, ticks int, waitedNs int64) load {
	return load{
		cores:   float64(cpu) / float64(elapsed),
		blocked: max(float64(blockedTicks)/float64(ticks), float64(waitedNs)/float64(elapsed)),
	}
}

// controller decides whether the next period runs on one processor or on
// the most; it holds no clock, so tests drive it with figures.
type controller struct {
	settings
	one   bool // the period in force runs on one processor
	quiet int  // periods in a row below the down thresholds, on the most
	// calm counts periods in a row on the most below probeCores and
	// downBlocked; probing marks the periods on one processor that try
	// whether the load fits there, settled of them so far (downAfter
	// settle the try); probeWait is the calm periods the next try waits
	// for (0: probeAfter).
	calm      int
	probing   bool
	settled   int
	probeWait int
}

// next reports whether the next period runs on one processor, given the
// one that ended.
func (c *controller) next(l load) bool {
	busy := l.cores >= c.upCores || l.blocked >= c.upBlocked
	quiet := l.cores < c.downCores && l.blocked < c.downBlocked
	calm := quiet || l.cores < c.probeCores && l.blocked < c.downBlocked
	if c.probeWait == 0 {
		c.probeWait = c.probeAfter
	}
	switch {
	case c.one:
		switch {
		case busy:
			// A try that did not fit waits twice as long for the next;
			// any other rise starts again from probeAfter.
			if c.probing {
				c.probeWait = min(2*c.probeWait, c.probeAfterMost)
			} else {
				c.probeWait = c.probeAfter
			}
			c.one, c.quiet, c.calm, c.probing = false, 0, 0, false
		case c.probing:
			if c.settled++; c.settled >= c.downAfter {
				c.probing = false // the load fits on one
			}
		}
	case !calm:
		c.quiet, c.calm = 0, 0
	default:
		if quiet {
			c.quiet++
		} else {
			c.quiet = 0
		}
		c.calm++
		switch {
		case c.quiet >= c.downAfter:
			c.one, c.quiet, c.calm = true, 0, 0
		case c.calm >= c.probeWait:
			// The same load costs more CPU on several processors than
			// on one (the scheduler's coordination), so one that fits on
			// one may never look quiet on the most: try one.
			c.one, c.probing, c.settled, c.quiet, c.calm = true, true, 0, 0, 0
		}
	}
	return c.one
}

// Start sizes GOMAXPROCS to the load until ctx ends, from a goroutine of
// its own, then gives the count back to the runtime's default. The
// process is on one processor when Start returns, so that what is sized
// from GOMAXPROCS as the process starts (the backends' pipeline lanes)
// always sees the count it starts with. It does nothing when the
// GOMAXPROCS environment variable fixes the count, when the runtime's
// default is one processor, or when the process's CPU time cannot be read
// here.
func Start(ctx context.Context) {
	if n, err := strconv.Atoi(os.Getenv("GOMAXPROCS")); err == nil && n > 0 {
		return
	}
	if scale := start(defaults); scale != nil {
		go scale(ctx)
	}
}

// start goes down to one processor and returns the loop that sizes the
// count from then on, or nil when there is nothing to size (see Start).
func start(s settings) func(context.Context) {
	used, ok := cpuTime()
	if runtime.GOMAXPROCS(0) < 2 || !ok {
		return nil
	}
	runtime.GOMAXPROCS(1)
	return func(ctx context.Context) { scale(ctx, s, used) }
}

func scale(ctx context.Context, s settings, used time.Duration) {
	// The runtime's default follows the machine (and its CPU limit), and
	// setting a count stops that: the most is always the default's.
	defer runtime.SetDefaultGOMAXPROCS()
	c := &controller{settings: s, one: true}
	calls := newSyscallCounter()
	t := time.NewTicker(s.tick)
	defer t.Stop()
	last, ticks, blocked := time.Now(), 0, 0
	waited.Store(0)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if calls.blocked() {
			blocked++
		}
		if ticks++; ticks < s.ticksPerPeriod {
			continue
		}
		u, ok := cpuTime()
		now := time.Now()
		if !ok {
			continue // this period is not judged; the next one is longer
		}
		l := periodLoad(u-used, now.Sub(last), blocked, ticks, waited.Swap(0))
		used, last, ticks, blocked = u, now, 0, 0
		if before := c.one; c.next(l) != before {
			if c.one {
				runtime.GOMAXPROCS(1)
			} else {
				runtime.SetDefaultGOMAXPROCS()
			}
			slog.Debug("procs: GOMAXPROCS changed", "to", runtime.GOMAXPROCS(0), "cores", l.cores, "blocked", l.blocked)
		}
	}
}

// syscallCounter tells whether goroutines are waiting in system calls
// beyond those that always are: os/signal's loop, for one, waits for
// signals in one for the life of the process. Those are the fewest ever
// seen (os/signal's loop starts before Start does); a waiter that starts
// for good later counts as blocked, which errs towards every processor.
type syscallCounter struct {
	sample []metrics.Sample
	seen   bool   // a count was read
	least  uint64 // the fewest seen
}

func newSyscallCounter() *syscallCounter {
	s := &syscallCounter{sample: []metrics.Sample{{Name: "/sched/goroutines/not-in-go:goroutines"}}}
	metrics.Read(s.sample)
	if s.sample[0].Value.Kind() != metrics.KindUint64 {
		slog.Warn("procs: this Go runtime does not count goroutines in system calls; sizing by CPU time alone")
		s.sample = nil
	}
	return s
}

// blocked reads the count once and reports whether it is above the
// baseline.
func (s *syscallCounter) blocked() bool {
	if s.sample == nil {
		return false
	}
	metrics.Read(s.sample)
	return s.observe(s.sample[0].Value.Uint64())
}

// observe records one count and reports whether it is above the fewest
// seen.
func (s *syscallCounter) observe(n uint64) bool {
	if !s.seen || n < s.least {
		s.seen, s.least = true, n
	}
	return n > s.least
}
