package budget

import (
	"context"
	"testing"
	"time"
)

// benchmarkCommit measures Reserve + Commit through the SQLite ledger with
// parallelism × GOMAXPROCS concurrent committers (0: one committer).
func benchmarkCommit(b *testing.B, parallelism int) {
	store, _ := openTestStore(b)
	a := newTestAccountant(b, store, map[string]Cost{"alice": {Epsilon: 1e15, Delta: 1}})
	query := "SELECT region, count(*) FROM patients GROUP BY region"
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	commit := func() {
		r, err := a.Reserve(context.Background(), "alice", Cost{Epsilon: 0.1, Delta: 1e-9})
		if err != nil {
			b.Error(err)
			return
		}
		if _, err := r.Commit(ctx, query); err != nil {
			b.Error(err)
		}
	}
	if parallelism == 0 {
		for i := 0; i < b.N; i++ {
			commit()
		}
	} else {
		b.SetParallelism(parallelism)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				commit()
			}
		})
	}
	elapsed := time.Since(start)
	b.StopTimer()
	st := store.Stats()
	b.ReportMetric(float64(st.Charges)/elapsed.Seconds(), "charges/s")
	b.ReportMetric(float64(st.Transactions)/float64(st.Charges), "tx/charge")
}

// BenchmarkCommitParallel: 16 × GOMAXPROCS committers (32 on two cores).
func BenchmarkCommitParallel(b *testing.B) { benchmarkCommit(b, 16) }

// BenchmarkCommitSerial: one committer, one transaction and fsync each.
func BenchmarkCommitSerial(b *testing.B) { benchmarkCommit(b, 0) }
