package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// cmdTurns runs one query with C clients against several targets in
// turns: each target in slices of S, one after another, each slice
// starting one target later than the one before, until every target has
// run for D; and prints one Result per target with its name, totals over
// its slices and each slice's queries/s and CPU per query in order
// (SlicesQPS, SlicesCPUUS). The k-th slices of two targets ran within the
// same seconds, so a report can pair them: this machine's speed drifts by
// up to half within seconds, and one target's whole run after another's
// compares one drift with another (workload 4's TPS ratio spread over
// 0.83–1.21 in five runs that way). Every target's connections are open
// (and warmed up) before the first slice; the targets not running sit
// idle.
//
//	loadgen turns --query SQL [--clients C] [--mode M] [--driver D] [--param-max K]
//	    [--slice S] [--duration D] --target NAME --dsn DSN [--pid PID] [--target ...]
func cmdTurns(args []string) error { return turns(args, os.Stdout) }

// turns is cmdTurns writing its results to out.
func turns(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("turns", flag.ContinueOnError)
	var names, dsns, pids multiFlag
	fs.Var(&names, "target", "a target's name (repeatable, with one --dsn and optionally one --pid after it)")
	fs.Var(&dsns, "dsn", "the DSN of the target named before it")
	fs.Var(&pids, "pid", "the process (the proxy under test) of the target named before it whose CPU time per query to report; 0 for none")
	query := fs.String("query", "", "the query")
	clients := fs.Int("clients", 1, "concurrent clients of each target")
	duration := fs.Duration("duration", 4*time.Second, "how long each target runs in all")
	slice := fs.Duration("slice", time.Second, "how long each target runs at a time")
	warmup := fs.Int("warmup", 3, "unmeasured queries per client first")
	mode := fs.String("mode", "simple", "simple, extended or prepared (pgx only) protocol")
	paramMax := fs.Int("param-max", 25, "$1 (? with mysql) is a random integer in [1, param-max]")
	driver := fs.String("driver", "pgx", "pgx (PostgreSQL protocol) or mysql (go-sql-driver, MySQL protocol)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	// --pid may be left out for a target only when no target has one.
	if len(pids) == 0 {
		pids = make(multiFlag, len(names))
	}
	if *query == "" || len(names) == 0 || len(dsns) != len(names) || len(pids) != len(names) ||
		*clients < 1 || *slice <= 0 || *duration < *slice || *paramMax < 1 {
		return errors.New("turns: --query, and for each --target one --dsn (and one --pid for all or none); --clients ≥ 1, 0 < --slice ≤ --duration, --param-max ≥ 1")
	}
	placeholder := "$1"
	if *driver == "mysql" {
		placeholder = "?"
	}
	nSlices := int((*duration + *slice - 1) / *slice)
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(len(names))**duration+5*time.Minute)
	defer cancel()

	targets := make([]*turnTarget, len(names))
	defer func() {
		for _, t := range targets {
			if t != nil {
				closeClients(t.conns)
			}
		}
	}()
	for i, name := range names {
		pid := 0
		if pids[i] != "" {
			var err error
			if pid, err = strconv.Atoi(pids[i]); err != nil {
				return fmt.Errorf("turns: --pid %q: %w", pids[i], err)
			}
		}
		t := &turnTarget{name: name, pid: pid}
		targets[i] = t
		var err error
		if t.conns, err = connectClients(ctx, *driver, *mode, *clients, func(int) string { return dsns[i] }); err != nil {
			return fmt.Errorf("turns: connecting %s: %w", name, err)
		}
	}
	run := func(t *turnTarget, d time.Duration, measure bool) {
		var wg sync.WaitGroup
		// The slice's clock and CPU readings start before its clients do,
		// so that every query counted falls within the time measured
		// (reading /proc takes milliseconds on a busy machine).
		var cpu0, busy0, all0 time.Duration
		var cores int
		if measure {
			cpu0 = procCPU(t.pid)
			busy0, all0, cores = machineCPU()
		}
		t0 := time.Now()
		deadline := t0.Add(d)
		lat := make([][]time.Duration, len(t.conns))
		var nrows, nerr atomic.Int64
		for i, c := range t.conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(uint64(i), uint64(time.Now().UnixNano())))
				for n := 0; measure || n < *warmup; n++ {
					if measure && time.Now().After(deadline) {
						break
					}
					var param any
					if strings.Contains(*query, placeholder) {
						param = int32(1 + r.IntN(*paramMax))
					}
					t0 := time.Now()
					k, err := c.query(ctx, *query, param)
					if !measure {
						continue
					}
					if err != nil {
						if nerr.Add(1) == 1 {
							t.firstErr.CompareAndSwap(nil, err.Error())
						}
						if ctx.Err() != nil {
							return
						}
						continue
					}
					nrows.Add(k)
					lat[i] = append(lat[i], time.Since(t0))
				}
			}()
		}
		if !measure {
			wg.Wait()
			return
		}
		wg.Wait()
		elapsed := time.Since(t0)
		cpu1 := procCPU(t.pid)
		busy1, all1, _ := machineCPU()
		n := 0
		for _, l := range lat {
			n += len(l)
			t.lat = append(t.lat, l...)
		}
		t.queries += int64(n)
		t.errors += nerr.Load()
		t.rows += nrows.Load()
		t.seconds += elapsed.Seconds()
		t.slicesQPS = append(t.slicesQPS, float64(n)/elapsed.Seconds())
		if t.pid > 0 && cpu0 >= 0 && cpu1 >= 0 && n > 0 {
			t.cpu += cpu1 - cpu0
			t.slicesCPU = append(t.slicesCPU, us(cpu1-cpu0)/float64(n))
		}
		if all1 > all0 {
			t.busy += busy1 - busy0
			t.all += all1 - all0
			t.cores = cores
		}
	}
	for _, t := range targets {
		run(t, 0, false)
	}
	for k := range nSlices {
		d := min(*slice, *duration-time.Duration(k)**slice)
		for j := range targets {
			run(targets[(k+j)%len(targets)], d, true)
		}
	}
	enc := json.NewEncoder(out)
	for _, t := range targets {
		if err := enc.Encode(t.result(*clients, *driver, *mode)); err != nil {
			return err
		}
	}
	return nil
}

// turnTarget is one target of cmdTurns and what its slices measured.
type turnTarget struct {
	name     string
	pid      int
	conns    []client
	firstErr atomic.Value

	queries, errors, rows int64
	seconds               float64
	lat                   []time.Duration
	cpu, busy, all        time.Duration
	cores                 int
	slicesQPS, slicesCPU  []float64
}

// result is the target's Result over all its slices.
func (t *turnTarget) result(clients int, driver, mode string) Result {
	res := Result{Target: t.name, Clients: clients, Driver: driver, Mode: mode, Queries: t.queries, Errors: t.errors,
		Seconds: t.seconds, Rows: t.rows, SlicesQPS: t.slicesQPS, SlicesCPUUS: t.slicesCPU}
	if s, ok := t.firstErr.Load().(string); ok {
		res.FirstErr = s
	}
	if t.seconds > 0 {
		res.QPS = float64(t.queries) / t.seconds
	}
	if t.pid > 0 && t.queries > 0 && len(t.slicesCPU) > 0 {
		res.ProcCPUUS = us(t.cpu) / float64(t.queries)
	}
	if t.all > 0 && t.queries > 0 {
		res.MachineCPUUS = us(t.busy) / float64(t.queries)
		res.MachineBusy = float64(t.busy) / float64(t.all)
		res.MachineCores = t.cores
	}
	slices.Sort(t.lat)
	res.setLatencies(t.lat)
	return res
}
