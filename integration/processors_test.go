package integration

import (
	"context"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"
)

// gomaxprocs scrapes the admin listener's Go collector for the processor
// count dpproxy runs on.
func gomaxprocs(t *testing.T, adminURL string) int {
	t.Helper()
	v := metricValue(scrape(t, adminURL), "go_sched_gomaxprocs_threads", nil)
	if v < 0 {
		t.Fatal("/metrics has no go_sched_gomaxprocs_threads")
	}
	return int(v)
}

// waitProcs polls the processor count until it is want.
func waitProcs(t *testing.T, adminURL, what string, want int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	got := gomaxprocs(t, adminURL)
	for got != want {
		if time.Now().After(deadline) {
			t.Fatalf("%s: dpproxy runs on %d processors, want %d", what, got, want)
		}
		time.Sleep(100 * time.Millisecond)
		got = gomaxprocs(t, adminURL)
	}
}

// waitMoreProcs polls the processor count until it is above one.
func waitMoreProcs(t *testing.T, adminURL, what string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for gomaxprocs(t, adminURL) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("%s: dpproxy still runs on one processor", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// listen.processors fixes the count; by default dpproxy runs on one
// processor while idle and on every one while clients keep it busy.
func TestProcessorsFollowTheLoad(t *testing.T) {
	t.Run("fixed", func(t *testing.T) {
		_, adminURL, _ := operatedProxyWith(t, "  processors: 3\n")
		if got := gomaxprocs(t, adminURL); got != 3 {
			t.Fatalf("listen.processors: 3 runs dpproxy on %d processors", got)
		}
	})
	t.Run("auto", func(t *testing.T) {
		if runtime.NumCPU() < 2 || os.Getenv("GOMAXPROCS") != "" {
			t.Skip("one CPU, or GOMAXPROCS fixes the count: nothing to scale")
		}
		p, adminURL, _ := operatedProxy(t)
		waitProcs(t, adminURL, "idle", 1)

		// Clients that keep dpproxy busy (public rows from its embedded
		// SQLite backend) raise it to every processor.
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for range 2 * runtime.NumCPU() {
			conn := connectAs(t, p, "analyst")
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					rows, err := conn.Query(ctx, "SELECT clinic_id, name, city FROM clinics")
					if err == nil {
						for rows.Next() {
						}
						rows.Close()
					}
				}
			}()
		}
		waitMoreProcs(t, adminURL, "under load")
		cancel()
		wg.Wait()
		waitProcs(t, adminURL, "idle again", 1)
	})
}
