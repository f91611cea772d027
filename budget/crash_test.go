//go:build unix

package budget

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// crashChildEnv names the ledger the child process commits to.
const crashChildEnv = "BUDGET_CRASH_CHILD_LEDGER"

// TestCrashChild is the child side of TestCrashDurability. It does nothing
// unless started by it. It commits charges from several goroutines and
// prints "charge <id> <analyst> <ε>" after each Commit returns, which is
// the moment the proxy would send the answer.
func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashChildEnv)
	if path == "" {
		t.Skip("helper process for TestCrashDurability")
	}
	store, err := OpenSQLite(ctx, path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	limits := map[string]Cost{}
	for i := 0; i < 4; i++ {
		limits[fmt.Sprint("analyst", i)] = Cost{Epsilon: 1e12, Delta: 1}
	}
	a, err := NewAccountant(ctx, store, limits)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	var out sync.Mutex
	deadline := time.Now().Add(60 * time.Second) // in case the parent is gone
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			analyst := fmt.Sprint("analyst", g%4)
			for i := 0; time.Now().Before(deadline); i++ {
				cost := Cost{Epsilon: 0.25 * float64(1+i%3), Delta: 1e-9}
				r, err := a.Reserve(context.Background(), analyst, cost)
				if err != nil {
					fmt.Fprintln(os.Stderr, "child:", err)
					os.Exit(2)
				}
				ch, err := r.Commit(ctx, fmt.Sprintf("SELECT %d FROM g%d", i, g))
				if err != nil {
					fmt.Fprintln(os.Stderr, "child:", err)
					os.Exit(2)
				}
				line := fmt.Sprintf("charge %d %s %v\n", ch.ID, ch.Analyst, ch.Cost.Epsilon)
				out.Lock()
				os.Stdout.WriteString(line) // one write(2): the "answer sent"
				out.Unlock()
			}
		}(g)
	}
	wg.Wait()
	os.Exit(0)
}

type printedCharge struct {
	analyst string
	epsilon float64
}

// TestCrashDurability runs the child, SIGKILLs it after it has reported a
// number of committed charges, reopens the ledger and checks that every
// reported charge is there. It repeats on the same ledger so recovery of a
// WAL left by a killed process is exercised more than once.
func TestCrashDurability(t *testing.T) {
	if os.Getenv(crashChildEnv) != "" {
		t.Skip("in the child")
	}
	path := filepath.Join(t.TempDir(), "ledger.db")
	printed := map[int64]printedCharge{}
	for round, lines := range []int{50, 300, 1000} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+path)
		cmd.Stderr = os.Stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		seen, killed := 0, false
		for sc.Scan() {
			var id int64
			var analyst string
			var eps float64
			if _, err := fmt.Sscanf(sc.Text(), "charge %d %s %g", &id, &analyst, &eps); err != nil {
				continue // not ours (test framework output)
			}
			if _, dup := printed[id]; dup {
				t.Fatalf("round %d: charge ID %d reported twice", round, id)
			}
			printed[id] = printedCharge{analyst, eps}
			seen++
			if seen == lines && !killed {
				// Lines already in the pipe were printed before the kill
				// and are read (and checked) below as well.
				if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				killed = true
			}
		}
		err = cmd.Wait()
		if !killed {
			t.Fatalf("round %d: child exited after %d charges: %v", round, seen, err)
		}
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("round %d: child was not killed by SIGKILL: %v", round, err)
		}
		t.Logf("round %d: child killed after reporting %d charges", round, seen)

		store, err := OpenSQLite(ctx, path)
		if err != nil {
			t.Fatalf("round %d: reopening after crash: %v", round, err)
		}
		inLedger := map[int64]Charge{}
		h, err := store.History(ctx)
		if err != nil {
			t.Fatal(err)
		}
		spent := h.Spent
		for i := 0; i < 4; i++ {
			analyst := fmt.Sprint("analyst", i)
			cs, err := store.Charges(ctx, analyst, 0)
			if err != nil {
				t.Fatal(err)
			}
			var sum float64
			for _, c := range cs {
				inLedger[c.ID] = c
				sum += c.Cost.Epsilon
			}
			if !approx(sum, spent[analyst].Epsilon) {
				t.Fatalf("round %d: Spent(%s) = %v, charges sum to %v", round, analyst, spent[analyst].Epsilon, sum)
			}
		}
		if err := store.Close(); err != nil {
			t.Fatal(err)
		}
		var missing []string
		for id, p := range printed {
			c, ok := inLedger[id]
			if !ok || c.Analyst != p.analyst || c.Cost.Epsilon != p.epsilon {
				missing = append(missing, strconv.FormatInt(id, 10))
			}
		}
		if len(missing) > 0 {
			t.Fatalf("round %d: %d reported charges lost or altered after kill -9: %s",
				round, len(missing), strings.Join(missing, " "))
		}
		t.Logf("round %d: all %d reported charges present (ledger holds %d)", round, len(printed), len(inLedger))
	}
}
