package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"time"
)

// cmdAlternate runs several sequential targets (a DSN and a query each)
// in turns, one query of each per round (each round starting one target
// later), and prints one Result per target with its name. Targets whose
// ratio a report takes (the rewritten SQL and its floor, say) then see
// the same machine: this machine's speed drifts by up to half from one
// second to the next (a query of 2 s took 1.9 s and 2.9 s in consecutive
// runs, every plan node slower alike), and blocks of queries run one
// target after another compared one drift with another. Targets with the
// same DSN share a connection (below).
//
//	loadgen alternate --count N [--warmup W] [--driver pgx|mysql]
//	    --target NAME --dsn DSN --query SQL [--target NAME --dsn DSN --query SQL ...]
func cmdAlternate(args []string) error {
	fs := flag.NewFlagSet("alternate", flag.ExitOnError)
	var names, dsns, queries multiFlag
	fs.Var(&names, "target", "a target's name (repeatable, with one --dsn and one --query each)")
	fs.Var(&dsns, "dsn", "the DSN of the target named before it")
	fs.Var(&queries, "query", "the query of the target named before it")
	count := fs.Int("count", 3, "measured rounds (one query of each target per round)")
	warmup := fs.Int("warmup", 1, "unmeasured queries of each target first")
	driver := fs.String("driver", "pgx", "pgx (PostgreSQL protocol) or mysql (go-sql-driver, MySQL protocol)")
	timeout := fs.Duration("timeout", time.Hour, "the whole run's limit")
	fs.Parse(args)
	if len(names) == 0 || len(dsns) != len(names) || len(queries) != len(names) || *count < 1 {
		return errors.New("alternate: each --target needs one --dsn and one --query, and --count ≥ 1")
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()

	conns := make([]client, len(names))
	// Targets with the same DSN share one connection: on PostgreSQL one
	// server process, which runs on one core at a time, and the two cores
	// here are not equally fast at any moment (the rewritten SQL and its
	// floor, pinned with taskset: 2.6 s and 2.4 s on one core, 1.75 s and
	// 1.6 s on the other).
	byDSN := map[string]client{}
	defer func() {
		for _, c := range byDSN {
			c.close()
		}
	}()
	for i := range names {
		if c, ok := byDSN[dsns[i]]; ok {
			conns[i] = c
			continue
		}
		c, err := connectClient(ctx, *driver, dsns[i], "simple")
		if err != nil {
			return fmt.Errorf("connecting %s: %w", names[i], err)
		}
		conns[i], byDSN[dsns[i]] = c, c
	}
	for i, c := range conns {
		for range *warmup {
			if _, err := c.query(ctx, queries[i], nil); err != nil {
				return fmt.Errorf("%s: %w", names[i], err)
			}
		}
	}
	lat := make([][]time.Duration, len(names))
	rows := make([]int64, len(names))
	// Each round starts one target later than the one before, so that no
	// target always follows the same other one (the database's caches).
	for round := range *count {
		for k := range conns {
			i := (round + k) % len(conns)
			c := conns[i]
			t0 := time.Now()
			n, err := c.query(ctx, queries[i], nil)
			if err != nil {
				return fmt.Errorf("%s: %w", names[i], err)
			}
			lat[i] = append(lat[i], time.Since(t0))
			rows[i] += n
		}
	}
	enc := json.NewEncoder(os.Stdout)
	for i, name := range names {
		res := Result{Target: name, Clients: 1, Driver: *driver, Mode: "simple", Queries: int64(len(lat[i])), Rows: rows[i]}
		for _, d := range lat[i] {
			res.RoundsUS = append(res.RoundsUS, us(d))
		}
		// Seconds is the time spent in this target's queries alone.
		res.Seconds = res.setLatencies(slices.Sorted(slices.Values(lat[i]))).Seconds()
		res.QPS = float64(res.Queries) / res.Seconds
		if err := enc.Encode(res); err != nil {
			return err
		}
	}
	return nil
}
