package pgwire

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dpproxy/dpproxy/sqltypes"
)

// TestTextFormatAgainstPostgres compares appendText with a real PostgreSQL
// server's output for random floats and timestamps. It runs only when
// PGWIRE_COMPARE_PG holds a connection string, e.g.
// PGWIRE_COMPARE_PG="host=/tmp port=5432 user=postgres".
func TestTextFormatAgainstPostgres(t *testing.T) {
	dsn := os.Getenv("PGWIRE_COMPARE_PG")
	if dsn == "" {
		t.Skip("PGWIRE_COMPARE_PG not set")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn+" default_query_exec_mode=simple_protocol")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "set timezone = 'UTC'; set datestyle = 'ISO, MDY'; set extra_float_digits = 1"); err != nil {
		t.Fatal(err)
	}

	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 2))
	type check struct {
		literal string // SQL expression
		typ     sqltypes.Type
		v       any
	}
	var checks []check
	// Powers of two (asymmetric rounding intervals), their neighbours, and
	// large round integers (decimals exactly halfway between two floats).
	var floats []float64
	for i := -1074; i < 1024; i++ {
		floats = append(floats, math.Ldexp(1, i), math.Ldexp(3, i), math.Nextafter(math.Ldexp(1, i), 0))
	}
	n := 20000
	if s := os.Getenv("PGWIRE_COMPARE_N"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	for range n {
		switch rng.IntN(5) {
		case 4:
			floats = append(floats, float64(math.Float32frombits(rng.Uint32())))
		case 0:
			floats = append(floats, math.Float64frombits(rng.Uint64()))
		case 1:
			floats = append(floats, rng.NormFloat64()*math.Pow(10, float64(rng.IntN(40)-20)))
		case 2:
			floats = append(floats, float64(rng.IntN(1_000_000))/math.Pow(10, float64(rng.IntN(8))))
		default:
			floats = append(floats, math.Round(rng.Float64()*1e17)*math.Pow(10, float64(rng.IntN(10))))
		}
	}
	for _, f := range floats {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		checks = append(checks, check{"'" + strconv.FormatFloat(f, 'g', -1, 64) + "'::float8", sqltypes.Float8, f})
		f32 := float32(f)
		if !math.IsInf(float64(f32), 0) && (f32 != 0 || f == 0) {
			checks = append(checks, check{"'" + strconv.FormatFloat(float64(f32), 'g', -1, 32) + "'::float4", sqltypes.Float4, float64(f32)})
		}
	}
	for range 500 {
		ts := time.Unix(rng.Int64N(200_000_000_000)-100_000_000_000, rng.Int64N(1e9)).UTC()
		if ts.Year() < -4000 || ts.Year() > 9999 {
			continue
		}
		// Round first: PostgreSQL's input rounds to microseconds too.
		r := ts.Round(time.Microsecond)
		lit := string(appendText(nil, sqltypes.Timestamp, r))
		checks = append(checks,
			check{"'" + lit + "'::timestamp", sqltypes.Timestamp, ts},
			check{"'" + lit + "+00'::timestamptz", sqltypes.Timestamptz, ts},
			check{"'" + lit + "'::date", sqltypes.Date, ts})
	}

	const batch = 200
	for start := 0; start < len(checks); start += batch {
		part := checks[start:min(start+batch, len(checks))]
		exprs := make([]string, len(part))
		for i, c := range part {
			exprs[i] = c.literal + "::text"
		}
		var got []string
		if err := conn.QueryRow(ctx, "select array["+strings.Join(exprs, ",")+"]").Scan(&got); err != nil {
			t.Fatal(err)
		}
		for i, c := range part {
			if mine := string(appendText(nil, c.typ, c.v)); mine != got[i] {
				t.Errorf("%s: PostgreSQL %q, pgwire %q", c.literal, got[i], mine)
			}
		}
	}
}
