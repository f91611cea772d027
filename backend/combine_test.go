package backend

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// run runs one statement as the backends' callers do (runStmt).
func (c *combiner) run(ctx context.Context, sql string, args []any, wire bool) (*Rows, time.Duration, error) {
	return c.runStmt(newCombinedStmt(ctx, sql, args, wire))
}

// TestCombinerAnswersBeforeBatchEnds checks that a statement's caller gets
// its result as soon as the sender has it, not when the whole batch is
// read: a caller waiting for the end of a long batch would leave its
// client, and the processor, idle.
func TestCombinerAnswersBeforeBatchEnds(t *testing.T) {
	firstHeld, firstGo := make(chan struct{}), make(chan struct{})
	secondGo := make(chan struct{})
	batches := 0
	c := newCombiner(1, holdFirstBatch(firstHeld, firstGo, func(ctx context.Context, batch []*combinedStmt) error {
		batches++
		for _, s := range batch {
			s.res = &Rows{Columns: []Column{{Name: s.sql}}}
			s.answer()
		}
		if batches == 2 {
			<-secondGo // the rest of the batch is still being read
		}
		return nil
	}))
	c.holdoff = time.Hour // the test's waits must not send statements alone
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	type answer struct {
		sql string
		res *Rows
		err error
	}
	answers := make(chan answer, 3)
	runOne := func(sql string) {
		res, _, err := c.run(ctx, sql, nil, false)
		answers <- answer{sql, res, err}
	}
	go runOne("a")
	<-firstHeld
	go runOne("b")
	waitPending(t, c, 1)
	go runOne("c")
	waitPending(t, c, 2)
	close(firstGo)

	// "a" ends its batch; "b" leads the next with "c", and "c" is answered
	// while "b"'s batch has not ended.
	for range 2 {
		select {
		case a := <-answers:
			if a.err != nil || a.res == nil || a.res.Columns[0].Name != a.sql {
				t.Fatalf("%s: got %+v, %v", a.sql, a.res, a.err)
			}
			if a.sql == "b" {
				t.Fatal("the leader of the second batch returned before its batch ended")
			}
		case <-ctx.Done():
			t.Fatal("a caller was not answered before its batch ended")
		}
	}
	close(secondGo)
	if a := <-answers; a.sql != "b" || a.err != nil {
		t.Fatalf("leader: got %+v", a)
	}
	if statements, batches := c.stats(); statements != 3 || batches != 2 {
		t.Fatalf("stats: %d statements in %d batches, want 3 in 2", statements, batches)
	}
}

// TestCombinerCallersGiveUp checks giving up through runStmt: a caller
// waiting for its answer in a batch it does not lead tells the batch when
// it gives up, and the caller handed the lead is watched by its context;
// the batch goes on while either still waits and ends once both have
// given up.
func TestCombinerCallersGiveUp(t *testing.T) {
	firstHeld, firstGo := make(chan struct{}), make(chan struct{})
	second := make(chan context.Context, 1)
	release := make(chan struct{}) // ends the second batch if nothing cancels it
	defer close(release)
	batches := 0
	c := newCombiner(1, holdFirstBatch(firstHeld, firstGo, func(ctx context.Context, batch []*combinedStmt) error {
		batches++
		if batches == 1 {
			for _, s := range batch {
				s.res = &Rows{}
				s.answer()
			}
			return nil
		}
		second <- ctx
		select { // a statement the server runs until cancelled
		case <-ctx.Done():
		case <-release:
		}
		return ctx.Err()
	}))
	c.holdoff = time.Hour
	done := make(chan error, 3)
	run := func(ctx context.Context, sql string) {
		_, _, err := c.run(ctx, sql, nil, false)
		done <- err
	}
	go run(context.Background(), "a")
	<-firstHeld
	bctx, endB := context.WithCancel(context.Background())
	cctx, endC := context.WithCancel(context.Background())
	defer endB()
	defer endC()
	go run(bctx, "b")
	waitPending(t, c, 1)
	go run(cctx, "c")
	waitPending(t, c, 2)
	close(firstGo) // "a" ends its batch and hands the lane to "b", which leads "b" and "c"
	if err := <-done; err != nil {
		t.Fatalf("a: %v", err)
	}
	var batch context.Context
	select {
	case batch = <-second:
	case <-time.After(10 * time.Second):
		t.Fatal("the second batch never ran")
	}

	endC() // "c" gives up while "b" still waits
	if err := <-done; err != context.Canceled {
		t.Fatalf("c gave up: got %v, want context.Canceled", err)
	}
	time.Sleep(20 * time.Millisecond)
	if batch.Err() != nil {
		t.Fatal("the batch ended while its leader's caller still waited")
	}

	endB() // the leader's caller gives up too
	select {
	case <-batch.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the batch went on after every caller gave up")
	}
	if err := <-done; err != context.Canceled {
		t.Fatalf("b gave up: got %v, want context.Canceled", err)
	}
}

// holdFirstBatch is send, its first batch held until release is closed
// (held is closed when it arrives), so that the statements sent meanwhile
// wait for the lane.
func holdFirstBatch(held, release chan struct{}, send batchSender) batchSender {
	first := true
	return func(ctx context.Context, batch []*combinedStmt) error {
		if first {
			first = false
			close(held)
			<-release
		}
		return send(ctx, batch)
	}
}

// waitPending waits until n statements wait for a lane.
func waitPending(t *testing.T, c *combiner, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		c.mu.Lock()
		got := len(c.pending)
		c.mu.Unlock()
		if got == n {
			return
		}
	}
	t.Fatalf("%d statements never waited for a lane", n)
}

// TestPipelineContextAfterAnswers checks when a batch's context ends:
// not when callers end their contexts after their answers (their
// commands are over while the batch is still read for others), but when
// every caller still waiting has given up: the leader (a) by its context,
// which the batch watches, the others (b) by telling the batch from
// runStmt (giveUp; ending b's context alone tells the batch nothing).
func TestPipelineContextAfterAnswers(t *testing.T) {
	type step func(c *combiner, a, b *combinedStmt, endA, endB context.CancelFunc)
	giveUpB := func(c *combiner, b *combinedStmt, endB context.CancelFunc) {
		endB()
		c.mu.Lock()
		c.giveUp(b)
		c.mu.Unlock()
	}
	cases := []struct {
		name string
		// bFixed: b's caller cannot give up (its context has no Done).
		bFixed bool
		before step // before the batch runs
		steps  step
		ended  bool
	}{
		{name: "answered callers leave", steps: func(c *combiner, a, b *combinedStmt, endA, endB context.CancelFunc) {
			a.answer()
			endA()
			b.answer()
			endB()
		}},
		{name: "waiting callers give up", ended: true, steps: func(c *combiner, a, b *combinedStmt, endA, endB context.CancelFunc) {
			a.answer()
			endA()
			giveUpB(c, b, endB) // b gives up before its answer
		}},
		{name: "the leader gives up last", ended: true, steps: func(c *combiner, a, b *combinedStmt, endA, endB context.CancelFunc) {
			b.answer()
			endB()
			endA() // watched: the leader's caller is busy running the batch
		}},
		{name: "a caller gives up after its answer", steps: func(c *combiner, a, b *combinedStmt, endA, endB context.CancelFunc) {
			b.answer()
			giveUpB(c, b, endB)
		}},
		{name: "gave up while the batch was gathered", ended: true,
			before: func(c *combiner, a, b *combinedStmt, endA, endB context.CancelFunc) { giveUpB(c, b, endB) },
			steps:  func(c *combiner, a, b *combinedStmt, endA, endB context.CancelFunc) { endA() }},
		{name: "a caller that cannot give up", bFixed: true, steps: func(c *combiner, a, b *combinedStmt, endA, endB context.CancelFunc) {
			endA()
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			actx, endA := context.WithCancel(context.Background())
			bctx, endB := context.WithCancel(context.Background())
			defer endA()
			defer endB()
			if tc.bFixed {
				bctx = context.Background()
			}
			c := &combiner{}
			a := &combinedStmt{ctx: actx, done: make(chan struct{}), leads: true}
			b := &combinedStmt{ctx: bctx, done: make(chan struct{})}
			if tc.before != nil {
				tc.before(c, a, b, endA, endB)
			}
			ctx, stop := c.pipelineContext([]*combinedStmt{a, b})
			defer stop()
			tc.steps(c, a, b, endA, endB)
			if tc.ended {
				select {
				case <-ctx.Done():
				case <-time.After(10 * time.Second):
					t.Fatal("the batch went on after every waiting caller gave up")
				}
				return
			}
			time.Sleep(10 * time.Millisecond) // AfterFunc runs on its own goroutine
			if ctx.Err() != nil {
				t.Fatal("the batch ended while a caller still waits or was answered")
			}
		})
	}
}

// TestCombineRecordAdmission: a text is combined once a run of it alone
// was short, and a long run alone after that (the lanes held, or an
// overloaded machine) does not take that back; never short, never
// combined; benched, not combined whatever its runs alone.
func TestCombineRecordAdmission(t *testing.T) {
	c := &combiner{shorterThan: 2 * time.Millisecond, leaveAt: 20 * time.Millisecond, readmitAfter: 4, readmitMost: 64}
	const short, long = time.Millisecond, 3 * time.Millisecond
	var r combineRecord
	for range 3 {
		c.ranAlone(&r, long, true)
	}
	if c.combines(r) {
		t.Fatal("combined with only long runs alone")
	}
	c.ranAlone(&r, short, true)
	if !c.combines(r) {
		t.Fatal("not combined after a short run alone")
	}
	for range 100 {
		c.ranAlone(&r, time.Second, true)
	}
	if !c.combines(r) {
		t.Error("long runs alone after admission stopped combining")
	}
	r.strike()
	if c.combines(r) {
		t.Error("combined right after a slow combined run")
	}
	var failed combineRecord
	c.ranAlone(&failed, short, false)
	if !c.combines(failed) {
		t.Error("a short failed run alone did not admit its text (its error comes back from a batch as from a run alone)")
	}
}

// TestStruckKeepsWhatChanged: a strike lands on the record as it is when
// the slow run ends (what runs alone wrote meanwhile stays), and runs that
// turned slow together strike once.
func TestStruckKeepsWhatChanged(t *testing.T) {
	before := combineRecord{admitted: true, strikes: 1, fitAlone: 3}
	cur := combineRecord{admitted: true, strikes: 1, fitAlone: 70}
	got, changed := struck(cur, before)
	if want := (combineRecord{admitted: true, strikes: 2}); !changed || got != want {
		t.Errorf("struck(%+v, %+v) = %+v, %v; want %+v, true", cur, before, got, changed, want)
	}
	if again, changed := struck(got, before); changed || again != got {
		t.Errorf("a second slow run of the same moment: %+v, %v; want %+v unchanged", again, changed, got)
	}
}

// TestCombineRecordReadmits: a text benched by a slow combined run comes
// back after readmitAfter runs alone shorter than leaveAt in a row (short
// or not: a busy machine makes every run longer than shorterThan), twice
// as many for each slow run before, up to readmitMost; never while its
// runs alone take leaveAt or more; and failed runs do not count.
func TestCombineRecordReadmits(t *testing.T) {
	c := &combiner{shorterThan: 2 * time.Millisecond, leaveAt: 20 * time.Millisecond, readmitAfter: 4, readmitMost: 32}
	const fits, slow = 5 * time.Millisecond, 30 * time.Millisecond
	r := combineRecord{admitted: true}
	c.ranAlone(&r, slow, true)
	if c.benched(r) {
		t.Fatal("a slow run alone benched a text never slow in a batch")
	}
	var waits []int
	for range 5 {
		r.strike()
		var n int
		for n = 0; c.benched(r) && n <= 1000; n++ {
			c.ranAlone(&r, fits, true)
		}
		waits = append(waits, n)
	}
	if want := []int{4, 8, 16, 32, 32}; !slices.Equal(waits, want) {
		t.Errorf("runs alone before each return %v, want %v", waits, want)
	}
	r.strike()
	c.ranAlone(&r, fits, true)
	c.ranAlone(&r, slow, true)
	for range 31 {
		c.ranAlone(&r, fits, true)
	}
	c.ranAlone(&r, time.Millisecond, false)
	if !c.benched(r) {
		t.Error("readmitted after 31 fitting runs alone since a slow one (32 needed; a failed run does not count)")
	}
	c.ranAlone(&r, fits, true)
	if c.benched(r) {
		t.Error("still benched after 32 fitting runs alone in a row at the most")
	}
	if !c.combines(r) {
		t.Error("readmitted but not combined")
	}
}

// TestCombinerSpareLanes: with the lane held by a slow statement, a
// statement arriving after the holdoff leads a batch on a spare lane; one
// that begins to wait just after (the stall clock restarted by the spare
// lane) gets a spare lane too once the holdoff has passed again, not when
// the slow statement ends; with every spare lane held as well, a new
// statement runs alone; and when all is done no lane stays taken.
func TestCombinerSpareLanes(t *testing.T) {
	release := make(chan struct{})
	slowSent := make(chan string, 4)
	c := newCombiner(1, func(ctx context.Context, batch []*combinedStmt) error {
		for _, s := range batch {
			if strings.HasPrefix(s.sql, "slow") {
				slowSent <- s.sql
				<-release
			}
			s.res = &Rows{Columns: []Column{{Name: s.sql}}}
			s.answer()
		}
		return nil
	})
	c.holdoff = 20 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var slow sync.WaitGroup
	runSlow := func(sql string) {
		slow.Add(1)
		go func() {
			defer slow.Done()
			if _, _, err := c.run(ctx, sql, nil, false); err != nil {
				t.Errorf("%s: %v", sql, err)
			}
		}()
		<-slowSent
	}
	runFast := func(sql string) (time.Duration, error) {
		start := time.Now()
		res, _, err := c.run(ctx, sql, nil, false)
		if err == nil && res.Columns[0].Name != sql {
			t.Errorf("%s answered with %q's result", sql, res.Columns[0].Name)
		}
		return time.Since(start), err
	}

	runSlow("slow1") // holds the lane
	time.Sleep(2 * c.holdoff)
	if took, err := runFast("fast1"); err != nil || took > time.Second {
		t.Fatalf("fast1, the lane stalled: %v after %v, want a spare lane's answer", err, took)
	}
	// The spare lane just closed: fast2 waits, and the stall check must
	// give it a spare lane while slow1 still holds the lane.
	if took, err := runFast("fast2"); err != nil || took > time.Second {
		t.Fatalf("fast2, waiting from just after a spare lane closed: %v after %v", err, took)
	}
	if statements, _ := c.stats(); statements != 3 {
		t.Errorf("%d statements combined, want 3", statements)
	}

	time.Sleep(2 * c.holdoff)
	runSlow("slow2") // holds the spare lane
	time.Sleep(2 * c.holdoff)
	if _, err := runFast("fast3"); !errors.Is(err, errCombinerBusy) {
		t.Errorf("fast3, the lane and the spare lane held: %v, want errCombinerBusy (run alone)", err)
	}

	close(release)
	slow.Wait()
	c.mu.Lock()
	leading, pending := c.leading, len(c.pending)
	c.mu.Unlock()
	if leading != 0 || pending != 0 {
		t.Errorf("after everything: %d lanes taken, %d statements waiting", leading, pending)
	}
}

// TestCombinerStallFollowsBatchTime: where batches have lately taken
// 100 ms, a lane taken 5 ms ago, or 25 ms, has not stalled: a statement
// arriving then waits for it and goes in the next batch, where the 2 ms
// holdoff alone would have opened a spare lane (on an overloaded machine,
// for nearly every statement).
func TestCombinerStallFollowsBatchTime(t *testing.T) {
	held, release := make(chan struct{}), make(chan struct{})
	var inFlight, most atomic.Int32
	c := newCombiner(1, func(ctx context.Context, batch []*combinedStmt) error {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		for _, s := range batch {
			if s.sql == "hold" {
				close(held)
				<-release
			}
			s.res = &Rows{Columns: []Column{{Name: s.sql}}}
			s.answer()
		}
		return nil
	})
	c.leaveAt = time.Second
	c.batchTime.Store(int64(100 * time.Millisecond))
	if got := c.stallAfter(); got != 400*time.Millisecond {
		t.Fatalf("stallAfter after 100 ms batches: %v, want 400ms", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	holdDone, nextDone := make(chan error, 1), make(chan error, 1)
	go func() { _, _, err := c.run(ctx, "hold", nil, false); holdDone <- err }()
	<-held
	time.Sleep(5 * time.Millisecond)
	go func() { _, _, err := c.run(ctx, "next", nil, false); nextDone <- err }()
	// next waits (or, wrongly, is answered on a spare lane); then the
	// stall check must not fire for 20 ms.
	for waiting := 0; waiting == 0 && len(nextDone) == 0; time.Sleep(time.Millisecond) {
		c.mu.Lock()
		waiting = len(c.pending)
		c.mu.Unlock()
	}
	time.Sleep(20 * time.Millisecond)
	close(release)
	for _, done := range []chan error{holdDone, nextDone} {
		if err := <-done; err != nil {
			t.Errorf("a statement: %v", err)
		}
	}
	if most.Load() != 1 {
		t.Errorf("%d batches at once, want 1: the lane counted as stalled after 5–25 ms where batches take 100 ms", most.Load())
	}
	if statements, batches := c.stats(); statements != 2 || batches != 2 {
		t.Errorf("%d statements in %d batches, want 2 in 2", statements, batches)
	}
}

// TestStallAfter: the lanes count as stalled after stallFactor times the
// batches' moving average, never sooner than the holdoff nor later than
// leaveAt; a batch longer than leaveAt counts as leaveAt.
func TestStallAfter(t *testing.T) {
	c := newCombiner(1, nil)
	if got := c.stallAfter(); got != combineHoldoff {
		t.Errorf("no batch yet: %v, want the holdoff %v", got, combineHoldoff)
	}
	for range 64 {
		c.timeBatch(time.Millisecond)
	}
	if got := c.stallAfter(); got < 3900*time.Microsecond || got > stallFactor*time.Millisecond {
		t.Errorf("after 1 ms batches: %v, want about %v", got, stallFactor*time.Millisecond)
	}
	c.timeBatch(time.Hour)
	if avg := time.Duration(c.batchTime.Load()); avg > time.Millisecond+combineLeaveAt/8 {
		t.Errorf("one batch of an hour moved the average to %v: a sample counts as leaveAt at most", avg)
	}
	for range 64 {
		c.timeBatch(time.Hour)
	}
	if got := c.stallAfter(); got != combineLeaveAt {
		t.Errorf("after batches of an hour: %v, want leaveAt %v", got, combineLeaveAt)
	}
	for range 64 {
		c.timeBatch(10 * time.Microsecond)
	}
	if got := c.stallAfter(); got != combineHoldoff {
		t.Errorf("after 10 µs batches: %v, want the holdoff %v", got, combineHoldoff)
	}
}
