package budget

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// benchmarkCommit measures Reserve + Commit through the SQLite ledger with
// the given number of concurrent committers (0: one, in the benchmark's
// own goroutine).
func benchmarkCommit(b *testing.B, committers int) {
	store, _ := openTestStore(b)
	a := newTestAccountant(b, store, map[string]Cost{"alice": {Epsilon: 1e15, Delta: 1}})
	query := "SELECT region, count(*) FROM patients GROUP BY region"
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu := time.Now(), processCPU()
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
	if committers == 0 {
		for i := 0; i < b.N; i++ {
			commit()
		}
	} else {
		var left atomic.Int64
		left.Store(int64(b.N))
		var wg sync.WaitGroup
		for range committers {
			wg.Go(func() {
				for left.Add(-1) >= 0 {
					commit()
				}
			})
		}
		wg.Wait()
	}
	elapsed, cpu := time.Since(start), processCPU()-cpu
	b.StopTimer()
	st := store.Stats()
	b.ReportMetric(float64(st.Charges)/elapsed.Seconds(), "charges/s")
	b.ReportMetric(float64(st.Transactions)/float64(st.Charges), "tx/charge")
	if cpu > 0 {
		// The whole process: committers, writer, SQLite, the kernel's
		// share of the writes and fsyncs done on its threads.
		b.ReportMetric(float64(cpu.Microseconds())/float64(st.Charges), "cpu-us/charge")
	}
}

// BenchmarkCommitParallel: 16 × GOMAXPROCS committers (32 on two cores).
func BenchmarkCommitParallel(b *testing.B) { benchmarkCommit(b, 16*runtime.GOMAXPROCS(0)) }

// BenchmarkCommit10: 10 committers, about the charges per transaction
// workload 5's 32 clients gather (bench/run.sh): the ledger's cost per
// charge at that batch size.
func BenchmarkCommit10(b *testing.B) { benchmarkCommit(b, 10) }

// BenchmarkCommitSerial: one committer, one transaction and fsync each.
func BenchmarkCommitSerial(b *testing.B) { benchmarkCommit(b, 0) }

// benchmarkSharedCommit measures Reserve + Commit on the shared
// PostgreSQL ledger by 32 committers spread over `processes` stores (each
// its own connection pool and writer, as separate dpproxy processes
// would have), all charging one analyst: the worst case, every
// transaction locking the same rows.
func benchmarkSharedCommit(b *testing.B, processes int, analysts int) {
	schema := newPGSchema(b)
	limits := map[string]Cost{}
	for i := 0; i < analysts; i++ {
		limits[fmt.Sprintf("a%d", i)] = Cost{Epsilon: 1e15, Delta: 1}
	}
	var stores []*PostgresStore
	var accts []*Accountant
	for i := 0; i < processes; i++ {
		s := openPG(b, schema, 0)
		stores = append(stores, s)
		accts = append(accts, newTestAccountant(b, s, limits))
	}
	var next atomic.Int64
	b.ResetTimer()
	start := time.Now()
	b.SetParallelism(16)
	b.RunParallel(func(pb *testing.PB) {
		i := next.Add(1)
		a := accts[int(i)%processes]
		analyst := fmt.Sprintf("a%d", int(i)%analysts)
		for pb.Next() {
			r, err := a.ReserveFor(context.Background(), analyst, []string{"visits"}, Cost{Epsilon: 0.1})
			if err != nil {
				b.Error(err)
				return
			}
			if _, err := r.Commit(context.Background(), "q"); err != nil {
				b.Error(err)
			}
		}
	})
	elapsed := time.Since(start)
	b.StopTimer()
	var charges, txs uint64
	for _, s := range stores {
		st := s.Stats()
		charges, txs = charges+st.Charges, txs+st.Transactions
	}
	b.ReportMetric(float64(charges)/elapsed.Seconds(), "charges/s")
	b.ReportMetric(float64(txs)/float64(charges), "tx/charge")
}

func BenchmarkSharedCommit1Process(b *testing.B)               { benchmarkSharedCommit(b, 1, 1) }
func BenchmarkSharedCommit3Processes(b *testing.B)             { benchmarkSharedCommit(b, 3, 1) }
func BenchmarkSharedCommit3ProcessesManyAnalysts(b *testing.B) { benchmarkSharedCommit(b, 3, 32) }
