package procs

import (
	"context"
	"log/slog"
	"runtime"
	"runtime/metrics"
	"time"
)

// The controller's settings (see the package doc).
const (
	tick        = 10 * time.Millisecond
	period      = 250 * time.Millisecond
	upCores     = 0.8  // of one core, on one processor
	upBlocked   = 0.2  // of the ticks, on one processor
	downCores   = 0.6  // of one core, on the maximum
	downBlocked = 0.05 // of the ticks, on the maximum
	downAfter   = 4    // periods in a row
)

// load is what one period showed.
type load struct {
	cores   float64 // the CPU the process used, in cores
	blocked float64 // the share of ticks at which a goroutine was in a system call
}

// controller decides the processor count from each period's load; it
// holds no clock, so tests drive it with figures.
type controller struct {
	max   int // the most processors (the count the runtime chose at start)
	cur   int // the count in force
	quiet int // periods in a row below the down thresholds, at max
}

// next returns the count for the next period, given the one that ended.
func (c *controller) next(l load) int {
	busy := l.cores >= upCores || l.blocked >= upBlocked
	quiet := l.cores < downCores && l.blocked < downBlocked
	switch {
	case c.cur == 1:
		if busy {
			c.cur, c.quiet = c.max, 0
		}
	case quiet:
		if c.quiet++; c.quiet >= downAfter {
			c.cur, c.quiet = 1, 0
		}
	default:
		c.quiet = 0
	}
	return c.cur
}

// Scale sizes GOMAXPROCS to the load until ctx ends, then restores the
// count it found. It returns at once when the process has one processor,
// or its CPU time cannot be read here.
func Scale(ctx context.Context) {
	scale(ctx, tick, int(period/tick))
}

// scale is Scale with a tick and the ticks per period.
func scale(ctx context.Context, every time.Duration, ticksPerPeriod int) {
	max := runtime.GOMAXPROCS(0)
	used, ok := cpuTime()
	if max < 2 || !ok {
		return
	}
	defer runtime.GOMAXPROCS(max)
	c := &controller{max: max, cur: 1}
	runtime.GOMAXPROCS(1)
	slog.Debug("procs: sizing GOMAXPROCS to the load", "max", max)
	calls := syscallCounter{sample: []metrics.Sample{{Name: "/sched/goroutines/not-in-go:goroutines"}}}
	t := time.NewTicker(every)
	defer t.Stop()
	last, ticks, blocked := time.Now(), 0, 0
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if calls.blocked() {
				blocked++
			}
			if ticks++; ticks < ticksPerPeriod {
				continue
			}
			calls.endPeriod()
			u, _ := cpuTime()
			l := load{cores: float64(u-used) / float64(now.Sub(last)), blocked: float64(blocked) / float64(ticks)}
			used, last, ticks, blocked = u, now, 0, 0
			if before := c.cur; c.next(l) != before {
				runtime.GOMAXPROCS(c.cur)
				slog.Debug("procs: GOMAXPROCS changed", "from", before, "to", c.cur, "cores", l.cores, "blocked", l.blocked)
			}
		}
	}
}

// baselinePeriods is how many periods the fewest goroutines seen in a
// system call are remembered for (10 s).
const baselinePeriods = 40

// syscallCounter tells whether goroutines are waiting in system calls
// beyond those that always are: os/signal's loop, for one, waits for
// signals in one for the life of the process. Those are the fewest seen
// in any tick of the last baselinePeriods periods.
type syscallCounter struct {
	sample []metrics.Sample
	minima [baselinePeriods]uint64 // the fewest in each recent period
	next   int                     // the slot of the current period
	filled int                     // periods seen, up to baselinePeriods
	least  uint64                  // the fewest in the current period
	ticks  int                     // ticks in the current period
}

// blocked reads the count once and reports whether it is above the
// baseline.
func (s *syscallCounter) blocked() bool {
	metrics.Read(s.sample)
	if s.sample[0].Value.Kind() != metrics.KindUint64 {
		return false
	}
	return s.observe(s.sample[0].Value.Uint64())
}

// observe records one tick's count and reports whether it is above the
// baseline (the fewest seen this period and the remembered ones).
func (s *syscallCounter) observe(n uint64) bool {
	if s.ticks == 0 || n < s.least {
		s.least = n
	}
	s.ticks++
	base := s.least
	for _, m := range s.minima[:s.filled] {
		base = min(base, m)
	}
	return n > base
}

// endPeriod remembers the period's fewest and starts the next period.
func (s *syscallCounter) endPeriod() {
	if s.ticks == 0 {
		return
	}
	s.minima[s.next] = s.least
	s.next = (s.next + 1) % baselinePeriods
	s.filled = min(s.filled+1, baselinePeriods)
	s.ticks = 0
}
