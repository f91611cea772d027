package procs

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func TestControllerFollowsTheLoad(t *testing.T) {
	idle, busy := load{}, load{cores: 1.2}
	tests := []struct {
		name  string
		loads []load // each period's
		want  []int  // the count after each
	}{
		{"light load stays on one", []load{idle, {cores: 0.5}, {cores: 0.79, blocked: 0.19}}, []int{1, 1, 1}},
		{"most of a core raises at once", []load{{cores: 0.2}, {cores: 0.8}}, []int{1, 4}},
		{"waiting in system calls raises at once", []load{{cores: 0.1, blocked: 0.2}}, []int{4}},
		{"more than a core stays up", []load{busy, {cores: 1.5}, {cores: 0.7}, {cores: 3}}, []int{4, 4, 4, 4}},
		{"down after four quiet periods in a row", []load{busy, idle, idle, idle, idle}, []int{4, 4, 4, 4, 1}},
		{"a busy period restarts the count", []load{busy, idle, idle, idle, {cores: 0.7}, idle, idle, idle, idle}, []int{4, 4, 4, 4, 4, 4, 4, 4, 1}},
		{"system calls keep it up", []load{busy, {cores: 0.1, blocked: 0.05}, {cores: 0.1, blocked: 0.5}, idle, idle, idle, idle}, []int{4, 4, 4, 4, 4, 4, 1}},
		{"between the thresholds holds either state", []load{{cores: 0.7}, {cores: 0.7}, busy, {cores: 0.7}, {cores: 0.7}, {cores: 0.7}, {cores: 0.7}}, []int{1, 1, 4, 4, 4, 4, 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &controller{max: 4, cur: 1}
			for i, l := range tt.loads {
				if got := c.next(l); got != tt.want[i] {
					t.Fatalf("period %d (%+v): %d processors, want %d", i, l, got, tt.want[i])
				}
			}
		})
	}
}

// TestScaleFollowsRealLoad runs the controller on this process: idle it
// drops to one processor; goroutines spinning, or one blocked in a system
// call, raise it to the maximum; idle again brings it back to one; at the
// end the count it found is restored.
func TestScaleFollowsRealLoad(t *testing.T) {
	max := runtime.GOMAXPROCS(0)
	if max < 2 {
		t.Skip("one processor: nothing to scale")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { scale(ctx, 2*time.Millisecond, 10); close(done) }()
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
	waitFor(t, "every processor while goroutines spin", max)
	stop.Store(true)
	wg.Wait()
	waitFor(t, "one processor once idle again", 1)

	// A read of an empty blocking pipe waits in the kernel, as an fsync
	// does, using no CPU.
	var p [2]int
	if err := syscall.Pipe(p[:]); err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(p[0])
	read := make(chan struct{})
	go func() {
		var b [1]byte
		syscall.Read(p[0], b[:])
		close(read)
	}()
	waitFor(t, "every processor while a goroutine waits in a system call", max)
	syscall.Write(p[1], []byte{1})
	syscall.Close(p[1])
	<-read
	waitFor(t, "one processor once the call returned", 1)

	cancel()
	<-done
	if got := runtime.GOMAXPROCS(0); got != max {
		t.Fatalf("after Scale returned GOMAXPROCS is %d, want the %d it found", got, max)
	}
}

func waitFor(t *testing.T, what string, procs int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.GOMAXPROCS(0) != procs {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 10 s (GOMAXPROCS %d)", what, runtime.GOMAXPROCS(0))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestSyscallCounterIgnoresPermanentWaiters(t *testing.T) {
	var s syscallCounter
	period := func(counts ...uint64) (blocked int) {
		for _, n := range counts {
			if s.observe(n) {
				blocked++
			}
		}
		s.endPeriod()
		return blocked
	}
	// One goroutine always waits (os/signal's loop): not a blocked tick.
	if got := period(1, 1, 1, 1); got != 0 {
		t.Fatalf("a permanent waiter counted as blocked in %d ticks", got)
	}
	// A second one at times (an fsync): those ticks are blocked.
	if got := period(2, 1, 2, 2); got != 3 {
		t.Fatalf("blocked ticks = %d, want 3", got)
	}
	// A whole period with the fsync at every tick is still blocked: the
	// baseline remembers the earlier periods.
	if got := period(2, 2, 2, 2); got != 4 {
		t.Fatalf("a period blocked at every tick counted %d, want 4", got)
	}
	// Once the remembered periods have all seen two, two is the baseline.
	for range baselinePeriods {
		period(2, 2)
	}
	if got := period(2, 3); got != 1 {
		t.Fatalf("after the baseline rose, blocked ticks = %d, want 1", got)
	}
}
