package procs

import (
	"context"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func TestControllerFollowsTheLoad(t *testing.T) {
	idle, mid, busy := load{}, load{cores: 0.7}, load{cores: 1.2}
	const one, most = true, false
	tests := []struct {
		name  string
		loads []load // each period's
		want  []bool // one processor after each
	}{
		{"light load stays on one", []load{idle, {cores: 0.5}, {cores: 0.79, blocked: 0.09}}, []bool{one, one, one}},
		{"most of a core raises at once", []load{{cores: 0.2}, {cores: 0.8}}, []bool{one, most}},
		{"waiting in system calls raises at once", []load{{cores: 0.1, blocked: 0.1}}, []bool{most}},
		{"more than a core stays up", []load{busy, {cores: 1.5}, {cores: 0.7}, {cores: 3}}, []bool{most, most, most, most}},
		{"down after four quiet periods in a row", []load{busy, idle, idle, idle, idle}, []bool{most, most, most, most, one}},
		{"a busy period restarts the count", []load{busy, idle, idle, idle, {cores: 0.7}, idle, idle, idle, idle}, []bool{most, most, most, most, most, most, most, most, one}},
		{"system calls keep it up", []load{busy, {cores: 0.1, blocked: 0.05}, {cores: 0.1, blocked: 0.5}, idle, idle, idle, idle}, []bool{most, most, most, most, most, most, one}},
		{"between the thresholds holds either state for a while", []load{{cores: 0.7}, {cores: 0.7}, busy, {cores: 0.7}, {cores: 0.7}, {cores: 0.7}, {cores: 0.7}}, []bool{one, one, most, most, most, most, most}},
		{"between the thresholds on the most, one is tried after eight periods and kept if the load fits",
			[]load{busy, mid, mid, mid, mid, mid, mid, mid, mid, mid, mid}, []bool{most, most, most, most, most, most, most, most, one, one, one}},
		{"a quiet period counts towards the try", []load{busy, mid, mid, mid, idle, mid, mid, mid, mid}, []bool{most, most, most, most, most, most, most, most, one}},
		{"a try that does not fit goes back up", []load{busy, mid, mid, mid, mid, mid, mid, mid, mid, {cores: 0.85}}, []bool{most, most, most, most, most, most, most, most, one, most}},
		{"a busy period restarts the wait for a try", []load{busy, mid, mid, mid, mid, mid, mid, mid, {cores: 1.3}, mid, mid, mid, mid, mid, mid, mid, mid}, []bool{most, most, most, most, most, most, most, most, most, most, most, most, most, most, most, most, one}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &controller{settings: defaults, one: true}
			for i, l := range tt.loads {
				if got := c.next(l); got != tt.want[i] {
					t.Fatalf("period %d (%+v): one processor = %v, want %v", i, l, got, tt.want[i])
				}
			}
		})
	}
}

// TestControllerTriesOneLessOftenWhenItDoesNotFit: a load between the
// thresholds that needs more than one processor is tried on one after 8
// calm periods, then 16, 32, 64 and 128, and never less often; a load
// above probeCores, or one that waits in system calls, is never tried.
func TestControllerTriesOneLessOftenWhenItDoesNotFit(t *testing.T) {
	tries := func(l, onOne load, periods int) (waits []int) {
		c := &controller{settings: defaults, one: true}
		c.next(load{cores: 1.5})
		since := 0
		for range periods {
			since++
			if c.next(l) {
				waits = append(waits, since)
				since = 0
				if c.next(onOne) {
					t.Fatalf("a load of %+v on one processor stayed there", onOne)
				}
			}
		}
		return waits
	}
	want := []int{8, 16, 32, 64, 128, 128, 128}
	got := tries(load{cores: 1.1}, load{cores: 0.9}, 8+16+32+64+3*128+7)
	if len(got) != len(want) {
		t.Fatalf("waits before each try %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("waits before each try %v, want %v", got, want)
		}
	}
	if got := tries(load{cores: 1.2}, load{}, 1000); len(got) != 0 {
		t.Fatalf("a load of 1.2 cores was tried on one processor after %v periods", got)
	}
	if got := tries(load{cores: 0.5, blocked: 0.05}, load{}, 1000); len(got) != 0 {
		t.Fatalf("a load waiting in system calls was tried on one processor after %v periods", got)
	}
}

// TestControllerTryOutcome: a try that turns busy within downAfter
// periods on one processor doubles the wait before the next, even if its
// first period fit; one that stayed settles, and the next rise waits
// probeAfter again.
func TestControllerTryOutcome(t *testing.T) {
	mid, over := load{cores: 0.7}, load{cores: 0.85}
	// periodsToTry runs mid loads on the most until the controller tries
	// one processor, and returns how many it took.
	periodsToTry := func(c *controller) int {
		for n := 1; n <= 1000; n++ {
			if c.next(mid) {
				return n
			}
		}
		return -1
	}
	c := &controller{settings: defaults, one: true}
	c.next(load{cores: 1.5})
	if n := periodsToTry(c); n != 8 {
		t.Fatalf("first try after %d periods, want 8", n)
	}
	c.next(mid) // fits for a period...
	if c.next(over) {
		t.Fatal("a busy period on one processor stayed there")
	}
	// ...then turned busy: the try failed.
	if n := periodsToTry(c); n != 16 {
		t.Fatalf("after a try that turned busy in its second period, the next after %d periods, want 16", n)
	}
	for range defaults.downAfter {
		if !c.next(mid) {
			t.Fatal("a fitting load left one processor")
		}
	}
	c.next(over) // a rise after the try settled
	if n := periodsToTry(c); n != 8 {
		t.Fatalf("after a try that settled, the next after %d periods, want 8", n)
	}
}

func TestPeriodLoad(t *testing.T) {
	tests := []struct {
		name            string
		cpu, elapsed    time.Duration
		blocked, ticks  int
		waited          time.Duration
		cores, blockedF float64
	}{
		{"idle", 0, time.Second, 0, 25, 0, 0, 0},
		{"sampled", 500 * time.Millisecond, time.Second, 5, 25, 0, 0.5, 0.2},
		{"declared beyond the samples", 0, 250 * time.Millisecond, 1, 25, 50 * time.Millisecond, 0, 0.2},
		{"samples beyond the declared", 0, 250 * time.Millisecond, 10, 25, 50 * time.Millisecond, 0, 0.4},
	}
	for _, tt := range tests {
		l := periodLoad(tt.cpu, tt.elapsed, tt.blocked, tt.ticks, int64(tt.waited))
		if math.Abs(l.cores-tt.cores) > 1e-9 || math.Abs(l.blocked-tt.blockedF) > 1e-9 {
			t.Errorf("%s: %+v, want cores %v blocked %v", tt.name, l, tt.cores, tt.blockedF)
		}
	}
}

func TestSyscallCounterIgnoresPermanentWaiters(t *testing.T) {
	var s syscallCounter
	count := func(counts ...uint64) (blocked int) {
		for _, n := range counts {
			if s.observe(n) {
				blocked++
			}
		}
		return blocked
	}
	// One goroutine always waits (os/signal's loop): not a blocked tick.
	if got := count(1, 1, 1, 1); got != 0 {
		t.Fatalf("a permanent waiter counted as blocked at %d ticks", got)
	}
	// A second one at times (an fsync): those ticks are blocked.
	if got := count(2, 1, 2, 2); got != 3 {
		t.Fatalf("blocked ticks = %d, want 3", got)
	}
	// One that waits at every tick for as long as it likes stays blocked.
	if got := count(2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2); got != 12 {
		t.Fatalf("a long wait counted %d of 12 ticks", got)
	}
	// Fewer than ever before lowers the baseline.
	if got := count(0, 1); got != 1 {
		t.Fatalf("after the baseline fell, blocked ticks = %d, want 1", got)
	}
}

// testSettings are the defaults on a fast clock, with a lower CPU
// threshold: the spinning goroutines must raise the count even while
// other test processes share the cores.
var testSettings = settings{
	tick: 2 * time.Millisecond, ticksPerPeriod: 10,
	upCores: 0.4, upBlocked: 0.1, downCores: 0.3, downBlocked: 0.05, downAfter: 4,
	probeCores: 0.6, probeAfter: 8, probeAfterMost: 128,
}

// TestScaleFollowsRealLoad runs the controller on this process: idle it
// runs one processor; goroutines spinning, or one blocked in a system
// call, give it the default count; idle again brings it back to one; at
// the end the default is restored.
func TestScaleFollowsRealLoad(t *testing.T) {
	most := runtime.GOMAXPROCS(0)
	if most < 2 {
		t.Skip("one processor: nothing to scale")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	loop := start(testSettings)
	if got := runtime.GOMAXPROCS(0); loop == nil || got != 1 {
		t.Fatalf("start: GOMAXPROCS %d, want 1 at once", got)
	}
	go func() { loop(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	waitFor(t, "one processor while idle", 1)

	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
			}
		}()
	}
	waitFor(t, "every processor while goroutines spin", most)
	stop.Store(true)
	wg.Wait()
	waitFor(t, "one processor once idle again", 1)

	// A read of an empty blocking pipe waits in the kernel, as an fsync
	// does, using no CPU.
	var p [2]int
	if err := syscall.Pipe(p[:]); err != nil {
		t.Fatal(err)
	}
	read := make(chan struct{})
	go func() {
		var b [1]byte
		syscall.Read(p[0], b[:])
		close(read)
	}()
	writeOnce := sync.OnceFunc(func() { syscall.Write(p[1], []byte{1}) })
	t.Cleanup(func() { writeOnce(); <-read; syscall.Close(p[0]); syscall.Close(p[1]) })
	waitFor(t, "every processor while a goroutine waits in a system call", most)
	writeOnce()
	<-read
	waitFor(t, "one processor once the call returned", 1)

	// Waits declared with Waited count even when no tick sees them.
	stop.Store(false)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			time.Sleep(time.Millisecond)
			Waited(time.Millisecond)
		}
	}()
	waitFor(t, "every processor while goroutines declare waits", most)
	stop.Store(true)
	wg.Wait()
	waitFor(t, "one processor once no wait is declared", 1)

	cancel()
	<-done
	if got := runtime.GOMAXPROCS(0); got != most {
		t.Fatalf("after Scale returned GOMAXPROCS is %d, want the default %d", got, most)
	}
}

func waitFor(t *testing.T, what string, procs int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for runtime.GOMAXPROCS(0) != procs {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 30 s (GOMAXPROCS %d)", what, runtime.GOMAXPROCS(0))
		}
		time.Sleep(5 * time.Millisecond)
	}
}
