package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/gob"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/dpproxy/dpproxy/sqltypes"
)

// SharedReleases keeps releases where every dpproxy instance on a shared
// ledger finds them (budget.PostgresStore), so that a query repeated on
// another instance gets the release already paid for instead of a fresh
// noisy one: repeating a query across instances can neither average the
// noise away nor drain the budget. Entries are opaque bytes under a
// key that names the analyst, the cost and the canonical statement.
type SharedReleases interface {
	LoadRelease(ctx context.Context, key string) ([]byte, bool, error)
	SaveRelease(ctx context.Context, key, analyst string, data []byte, ttl time.Duration) error
}

// sharedKey is key's name in a SharedReleases: a digest of every field,
// so that no two releases share one.
func (k cacheKey) sharedKey() string {
	h := sha256.New()
	fmt.Fprintf(h, "%q %v %v %q %q %q", k.analyst, k.epsilon, k.delta, k.query, k.variant, k.plan)
	return hex.EncodeToString(h.Sum(nil))
}

func init() {
	// Row values travel as interface values: gob must know their types.
	gob.Register(time.Time{})
	gob.Register(sqltypes.Decimal(""))
}

// wireRelease is a release as gob carries it: gob sends no nil pointer,
// so an interval is a value with a flag.
type wireRelease struct {
	Columns   []sqltypes.Column
	Rows      [][]any
	Tag       string
	Intervals [][]wireInterval
	Notices   []string
	Noise     []wireNoise
}

type wireNoise struct {
	sqltypes.Noise
	Set bool
}

// Its fields stay flat, as the first version had them: an instance of
// that version reads Lo and Hi of a newer one's entries.
type wireInterval struct {
	Lo, Hi, Excess float64
	Set            bool
}

// encodeRelease and decodeRelease carry a release to and from a
// SharedReleases, every value with its Go type (int64 stays int64).
func encodeRelease(r *sqltypes.Result) ([]byte, error) {
	w := wireRelease{Columns: r.Columns, Rows: r.Rows, Tag: r.Tag, Notices: r.Notices}
	for _, row := range r.Intervals {
		out := make([]wireInterval, len(row))
		for j, iv := range row {
			if iv != nil {
				out[j] = wireInterval{Lo: iv.Lo, Hi: iv.Hi, Excess: iv.Excess, Set: true}
			}
		}
		w.Intervals = append(w.Intervals, out)
	}
	for _, n := range r.Noise {
		if n == nil {
			w.Noise = append(w.Noise, wireNoise{})
		} else {
			w.Noise = append(w.Noise, wireNoise{Noise: *n, Set: true})
		}
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(w); err != nil {
		return nil, fmt.Errorf("engine: encoding a release: %w", err)
	}
	return buf.Bytes(), nil
}

func decodeRelease(data []byte) (*sqltypes.Result, error) {
	var w wireRelease
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&w); err != nil {
		return nil, fmt.Errorf("engine: decoding a release: %w", err)
	}
	r := &sqltypes.Result{Columns: w.Columns, Rows: w.Rows, Tag: w.Tag, Notices: w.Notices}
	for _, row := range w.Intervals {
		out := make([]*sqltypes.Interval, len(row))
		for j, iv := range row {
			if iv.Set {
				out[j] = &sqltypes.Interval{Lo: iv.Lo, Hi: iv.Hi, Excess: iv.Excess}
			}
		}
		r.Intervals = append(r.Intervals, out)
	}
	for _, n := range w.Noise {
		if n.Set {
			r.Noise = append(r.Noise, &n.Noise)
		} else {
			r.Noise = append(r.Noise, nil)
		}
	}
	return r, nil
}
