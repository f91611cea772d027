package main

import (
	"context"
	"strconv"
	"sync"

	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/session"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// runFresh runs sql `runs` times at eps over `workers` sessions, fresh
// releases each (the cache is off), and hands every answer to each, one
// at a time. settings are statements each session runs first (SET ...).
func (e *env) runFresh(ctx context.Context, sql string, eps float64, runs, workers int, each func(*sqltypes.Result), settings ...string) error {
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	next := make(chan int)
	go func() {
		for i := 0; i < runs; i++ {
			next <- i
		}
		close(next)
	}()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := session.New(e.srv, "analyst", rewrite.PostgresFrontEnd)
			if err == nil {
				defer s.Close()
				_, err = s.Execute(ctx, "SET dpproxy.epsilon = "+strconv.FormatFloat(eps, 'g', -1, 64))
			}
			for _, set := range settings {
				if err == nil {
					_, err = s.Execute(ctx, set)
				}
			}
			for range next {
				if err != nil {
					continue // drain
				}
				var res []*sqltypes.Result
				if res, err = s.Execute(ctx, sql); err != nil {
					continue
				}
				mu.Lock()
				each(res[0])
				mu.Unlock()
			}
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return firstErr
}
