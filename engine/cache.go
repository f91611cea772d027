package engine

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dpproxy/dpproxy/budget"
	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
	"github.com/hashicorp/golang-lru/v2/expirable"
)

// The result cache defeats averaging attacks: an analyst who repeats a
// query gets the answer already released instead of a fresh noisy one, and
// pays nothing for it, since it reveals nothing new. Repeating a query with
// a trivially different meaning (`WHERE 1=1`, `x+0`) misses the cache and
// is charged like any other query.
//
// Only successful DP releases are cached: never errors (a refusal or a
// failure is decided afresh each time), never public passthrough results
// (they are free and should be current).

// cacheKey identifies a release: who asked, at which privacy cost, and the
// canonical text of the parsed statement (rewrite.Canonical), so that
// whitespace, comments and keyword case do not matter but any change to
// the statement does. Analysts never share entries.
type cacheKey struct {
	analyst string
	epsilon float64
	delta   float64
	query   string
	// variant tells apart the plans the session's settings make of one
	// statement: with the bias report, with excess measurements, answered
	// by R2T.
	variant string
	// plan is the bounding the policy gives the statement (its backend
	// SQL, bounds, mechanism): instances running different versions of a
	// policy do not share releases.
	plan string
}

// keyOf is the cache key of analyst's plan of a canonical statement. It
// runs for every cache hit, so it builds its strings without fmt; they are
// exactly what fmt.Sprintf("bias=%t excess=%t r2t=%t rr=%s", ...) and
// fmt.Sprintf("%s|%q|%s|%s|%d|%d|%d|%t", ...) wrote, since the shared
// cache hashes them (shared_cache.go) and instances of two versions must
// agree.
func keyOf(analyst string, plan *rewrite.Plan, canonical string) cacheKey {
	var v strings.Builder
	v.WriteString("bias=")
	v.WriteString(strconv.FormatBool(plan.Bias != nil))
	v.WriteString(" excess=")
	v.WriteString(strconv.FormatBool(plan.HasExcess()))
	v.WriteString(" r2t=")
	v.WriteString(strconv.FormatBool(plan.R2T != nil))
	v.WriteString(" rr=")
	v.WriteString(rrVariant(plan))

	var b strings.Builder
	b.Grow(len(plan.BackendSQL) + 64)
	b.WriteString(plan.BackendSQL)
	b.WriteString("|[")
	for i, q := range plan.SideQueries {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.Quote(q))
	}
	b.WriteString("]|")
	b.WriteString(string(plan.Mechanism))
	b.WriteByte('|')
	b.WriteString(string(plan.Neighbouring))
	for _, n := range []int{plan.MaxGroupsPerUnit, plan.MaxRowsPerUnit, plan.MaxTotalRowsPerUnit} {
		b.WriteByte('|')
		b.WriteString(strconv.Itoa(n))
	}
	b.WriteByte('|')
	b.WriteString(strconv.FormatBool(plan.Selection != nil))
	return cacheKey{analyst: analyst, epsilon: plan.Epsilon, delta: plan.Delta, query: canonical, variant: v.String(), plan: b.String()}
}

// rrVariant is what makes a randomized-response release besides its SQL:
// each column's domain and bins ("" for other plans; found in review: a
// reload changing a key list must not return the old release).
func rrVariant(plan *rewrite.Plan) string {
	if plan.RR == nil {
		return ""
	}
	var sb strings.Builder
	for _, c := range plan.RR.Columns {
		fmt.Fprintf(&sb, "%q/%g;", c.Domain, c.Width)
	}
	return sb.String()
}

// resultCache is a size- and age-bounded LRU of releases plus the queries
// being answered right now, so that two identical queries racing each
// other are charged once: the second waits for the first's answer. It is
// safe for concurrent use. A nil *resultCache is a disabled cache.
type resultCache struct {
	lru *expirable.LRU[cacheKey, *sqltypes.Result]
	ttl time.Duration
	// shared, when set, holds the releases of every instance on a shared
	// ledger: consulted on a miss here, given every new release.
	shared SharedReleases
	log    *slog.Logger

	mu       sync.Mutex
	inflight map[cacheKey]*flight
}

// flight is one query being answered; done is closed once res and err are
// set.
type flight struct {
	done chan struct{}
	res  *sqltypes.Result
	err  error
}

// newResultCache returns a cache of at most size releases, each kept for
// ttl (config.DefaultCacheTTL when ttl ≤ 0). size ≤ 0 disables the cache:
// newResultCache returns nil.
func newResultCache(size int, ttl time.Duration) *resultCache {
	if size <= 0 {
		return nil
	}
	if ttl <= 0 {
		ttl = config.DefaultCacheTTL
	}
	return &resultCache{
		lru:      expirable.NewLRU[cacheKey, *sqltypes.Result](size, nil, ttl),
		ttl:      ttl,
		inflight: map[cacheKey]*flight{},
	}
}

// get returns a copy of the cached release for key.
func (c *resultCache) get(key cacheKey) (*sqltypes.Result, bool) {
	if c == nil {
		return nil, false
	}
	return c.lru.Get(key)
}

// do returns the release for key: from the cache when there is one (hit is
// then true), otherwise from compute, whose successful result is cached.
// While compute runs for a key, other calls for the same key wait for it
// instead of computing (and charging) again; if it fails they try again
// themselves, since failures are not shared. A result from the cache is
// shared with it and with every other caller (see Answer): read-only. On a
// disabled cache do simply calls compute.
func (c *resultCache) do(ctx context.Context, key cacheKey, compute func() (*sqltypes.Result, error)) (res *sqltypes.Result, hit bool, err error) {
	if c == nil {
		res, err := compute()
		return res, false, err
	}
	for {
		if res, ok := c.get(key); ok {
			return res, true, nil
		}
		c.mu.Lock()
		if f, ok := c.inflight[key]; ok {
			c.mu.Unlock()
			select {
			case <-f.done:
				if f.err == nil {
					return f.res, true, nil
				}
				continue // the other query failed: try for ourselves
			case <-ctx.Done():
				return nil, false, &sqlerr.Error{Code: sqlerr.QueryCanceled, Message: "canceling statement", Err: ctx.Err()}
			}
		}
		// A leader may have finished between get and Lock: it adds to the
		// LRU before it leaves inflight, so looking again under the lock
		// cannot miss its answer.
		if res, ok := c.get(key); ok {
			c.mu.Unlock()
			return res, true, nil
		}
		f := &flight{done: make(chan struct{})}
		c.inflight[key] = f
		c.mu.Unlock()
		return c.lead(ctx, key, f, compute)
	}
}

// lead runs compute for key as the one caller doing so, publishes the
// outcome to the waiting callers and caches a success.
func (c *resultCache) lead(ctx context.Context, key cacheKey, f *flight, compute func() (*sqltypes.Result, error)) (res *sqltypes.Result, hit bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			f.err = &sqlerr.Error{Code: sqlerr.InternalError, Message: "internal error"}
			c.finish(key, f)
			panic(p)
		}
	}()
	if res := c.loadShared(ctx, key); res != nil {
		f.res = res
		c.lru.Add(key, res)
		c.finish(key, f)
		return res, true, nil
	}
	res, err = compute()
	if err == nil && res != nil {
		f.res = cloneResult(res)
		c.lru.Add(key, f.res)
		c.saveShared(ctx, key, f.res)
	} else if err == nil {
		err = &sqlerr.Error{Code: sqlerr.InternalError, Message: "internal error"}
	}
	f.err = err
	c.finish(key, f)
	return res, false, err
}

// loadShared returns another instance's release of key, or nil. A
// shared store that cannot be read only costs the cache hit: the query is
// then answered (and charged) afresh, which needs the ledger anyway.
func (c *resultCache) loadShared(ctx context.Context, key cacheKey) *sqltypes.Result {
	if c.shared == nil {
		return nil
	}
	data, ok, err := c.shared.LoadRelease(ctx, key.sharedKey())
	if err != nil {
		c.log.Warn("reading the shared release cache", "err", err)
		return nil
	}
	if !ok {
		return nil
	}
	res, err := decodeRelease(data)
	if err != nil {
		c.log.Warn("reading the shared release cache", "err", err)
		return nil
	}
	return res
}

// sharedSaveTimeout bounds how long an answer waits for its release to
// be stored for the other instances.
const sharedSaveTimeout = 2 * time.Second

// saveShared gives a new release to the other instances (best effort:
// without it they would charge the query again, which is safe).
func (c *resultCache) saveShared(ctx context.Context, key cacheKey, res *sqltypes.Result) {
	if c.shared == nil {
		return
	}
	data, err := encodeRelease(res)
	if err == nil {
		// The answer is paid for and waits: a slow ledger delays it little.
		saveCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sharedSaveTimeout)
		err = c.shared.SaveRelease(saveCtx, key.sharedKey(), key.analyst, data, c.ttl)
		cancel()
	}
	if err != nil {
		c.log.Warn("writing the shared release cache", "err", err)
	}
}

// finish removes f from the in-flight map and wakes its waiters.
func (c *resultCache) finish(key cacheKey, f *flight) {
	c.mu.Lock()
	delete(c.inflight, key)
	c.mu.Unlock()
	close(f.done)
}

// cloneResult copies a result deeply enough that its computing caller
// cannot change the cached release's rows: values themselves are
// immutable. Rows and intervals are copied into one backing array each.
func cloneResult(r *sqltypes.Result) *sqltypes.Result {
	return &sqltypes.Result{Columns: slices.Clone(r.Columns), Rows: cloneTable(r.Rows), Tag: r.Tag,
		Intervals: cloneTable(r.Intervals), Notices: slices.Clone(r.Notices), Noise: slices.Clone(r.Noise)}
}

// cloneTable copies the rows of a table into one backing array.
func cloneTable[T any](rows [][]T) [][]T {
	n := 0
	for _, row := range rows {
		n += len(row)
	}
	cells := make([]T, 0, n)
	out := make([][]T, len(rows))
	for i, row := range rows {
		start := len(cells)
		cells = append(cells, row...)
		out[i] = cells[start:len(cells):len(cells)]
	}
	return out
}

// Release names one release: an analyst's plan of a canonical statement
// (rewrite.Canonical), the result cache's key. An empty canonical text
// (the statement could not be re-emitted) makes a release the cache
// neither keeps nor finds. The key's text is built once, by
// Engine.Release: a session keeps the Release of each statement it has
// analyzed, so that a repeated query costs the cache a lookup, not the
// key's text.
type Release struct {
	analyst   string
	plan      *rewrite.Plan
	cacheable bool
	key       cacheKey
}

// Release returns the release of analyst's plan of a canonical
// statement (its key built only when the engine has a cache).
func (e *Engine) Release(analyst string, plan *rewrite.Plan, canonical string) *Release {
	r := &Release{analyst: analyst, plan: plan, cacheable: canonical != "" && e.cache != nil}
	if r.cacheable {
		r.key = keyOf(analyst, plan, canonical)
	}
	return r
}

// Answer makes a release for its analyst: the budgeted release. It
// answers from the cache when the analyst has had the same release (same
// canonical statement, ε and δ) within the cache's TTL, at no cost;
// otherwise it reserves the plan's ε and δ, runs the bounded query on the
// backend, adds the noise, commits the charge durably and only then
// returns the rows (and caches them). queryText is the client's text,
// which the analyst's query log records with the charge (white space
// collapsed). The cache is consulted before anything is reserved. The
// returned Result comes with the Outcome (also when an error is returned
// after a charge); one from the cache (Outcome.CacheHit) is the cached
// release itself, shared with every session that asks for it: callers
// never change a Result they are given (they copy what they change), and
// a hit allocates nothing for its rows.
func (e *Engine) Answer(ctx context.Context, r *Release, queryText string) (*sqltypes.Result, Outcome, error) {
	var out Outcome
	charged := func() (*sqltypes.Result, error) {
		res, cost, err := e.chargedAnswer(ctx, r.analyst, r.plan, queryText)
		out.Charged = cost
		return res, err
	}
	if !r.cacheable {
		res, err := charged()
		return res, out, err
	}
	res, hit, err := e.cache.do(ctx, r.key, charged)
	if hit && e.log.Enabled(ctx, slog.LevelDebug) { // its arguments would allocate on every answer
		e.log.Debug("answered from the cache at no cost", "analyst", r.analyst, "epsilon", r.plan.Epsilon)
	}
	out.CacheHit = hit
	return res, out, err
}

// Outcome is what answering a plan did: the charge recorded (zero for a
// cache hit, or a query refused or refunded before it reached the data)
// and whether the answer came from the cache.
type Outcome struct {
	Charged  budget.Cost
	CacheHit bool
}

// CachesReleases reports whether the engine keeps releases (policy
// cache.size > 0): without it nothing can be answered from an earlier one.
func (e *Engine) CachesReleases() bool { return e.cache != nil }

// Released returns the release the cache holds for r — this instance's,
// or another's on a shared ledger — without computing or charging
// anything; ok is false if there is none. The Result is the cached
// release itself: read-only, as Answer's.
func (e *Engine) Released(ctx context.Context, r *Release) (*sqltypes.Result, bool) {
	if e.cache == nil || !r.cacheable {
		return nil, false
	}
	if res, ok := e.cache.get(r.key); ok {
		return res, true
	}
	if res := e.cache.loadShared(ctx, r.key); res != nil {
		e.cache.lru.Add(r.key, res)
		return res, true
	}
	return nil, false
}
