package directio

import (
	"sync/atomic"
	"testing"
)

func TestActivityTurnsRawOnOnlyWhileBusy(t *testing.T) {
	type step struct {
		epoch   int64
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
			a := &activity{threshold: 2}
			sockets := make([]atomic.Int64, 8)
			for _, s := range tt.steps {
				for i := 0; i < s.sockets; i++ {
					got := a.note(&sockets[i], s.epoch)
					if i == 0 && got != s.want {
						t.Fatalf("epoch %d: first call raw = %v, want %v", s.epoch, got, s.want)
					}
					// A socket's further calls in the epoch count once.
					if again := a.note(&sockets[i], s.epoch); again != a.busy.Load() {
						t.Fatalf("epoch %d: a repeated call was told %v, the epoch is %v", s.epoch, again, a.busy.Load())
					}
				}
				if got := a.count.Load(); got != int32(s.sockets) {
					t.Fatalf("epoch %d: counted %d sockets, want %d", s.epoch, got, s.sockets)
				}
			}
		})
	}
}
