package directio

import (
	"sync"
	"sync/atomic"
	"testing"
)

func TestActivityTurnsRawOnOnlyWhileBusy(t *testing.T) {
	type step struct {
		epoch   uint64
		sockets int  // distinct sockets that make a call in the epoch
		want    bool // what the epoch's first call is told
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"a lone socket never", []step{{1, 1, false}, {2, 1, false}, {3, 1, false}}},
		{"as many sockets as processors: not busy", []step{{1, 2, false}, {2, 2, false}}},
		{"more sockets than processors: busy from the next epoch", []step{{1, 3, false}, {2, 3, true}, {3, 1, true}, {4, 1, false}}},
		{"an epoch without calls ends it", []step{{1, 5, false}, {2, 5, true}, {4, 5, false}, {5, 1, true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &activity{processors: func() int { return 2 }}
			sockets := make([]atomic.Uint64, 8)
			for _, s := range tt.steps {
				for i := 0; i < s.sockets; i++ {
					got := a.note(&sockets[i], s.epoch)
					if i == 0 && got != s.want {
						t.Fatalf("epoch %d: first call raw = %v, want %v", s.epoch, got, s.want)
					}
					// A socket's further calls in the epoch count once
					// and are told what its first was.
					if again := a.note(&sockets[i], s.epoch); again != s.want {
						t.Fatalf("epoch %d: a repeated call was told %v, want %v", s.epoch, again, s.want)
					}
				}
				if got := a.state.Load() & (1<<countBits - 1); got != uint64(s.sockets) {
					t.Fatalf("epoch %d: counted %d sockets, want %d", s.epoch, got, s.sockets)
				}
			}
		})
	}
}

func TestActivityFollowsTheProcessorCount(t *testing.T) {
	procs := 4
	a := &activity{processors: func() int { return procs }}
	sockets := make([]atomic.Uint64, 3)
	noteAll := func(e uint64) bool {
		var first bool
		for i := range sockets {
			if got := a.note(&sockets[i], e); i == 0 {
				first = got
			}
		}
		return first
	}
	noteAll(1)
	if noteAll(2) {
		t.Fatal("3 sockets on 4 processors: busy")
	}
	procs = 2 // package procs lowered GOMAXPROCS
	if !noteAll(3) {
		t.Fatal("3 sockets on 2 processors: not busy")
	}
}

func TestActivityCountsEachSocketOnceUnderConcurrency(t *testing.T) {
	a := &activity{processors: func() int { return 1 }}
	sockets := make([]atomic.Uint64, 64)
	var wg sync.WaitGroup
	for i := range sockets {
		for range 2 { // a socket's reader and its writer
			wg.Add(1)
			go func() {
				defer wg.Done()
				a.note(&sockets[i], 7)
			}()
		}
	}
	wg.Wait()
	if got := a.state.Load(); got != 7<<countBits|64 {
		t.Fatalf("state = epoch %d, %d sockets; want epoch 7, 64 sockets", got>>countBits, got&(1<<countBits-1))
	}
}
