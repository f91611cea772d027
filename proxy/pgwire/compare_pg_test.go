package pgwire

import (
	"bytes"
	"context"
	"fmt"
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

// TestBinaryFormatAgainstPostgres compares the binary encodings and the
// parameter parsing with a real PostgreSQL server: numeric_send and
// numeric_recv, dates and timestamps, and text input. It runs only when
// PGWIRE_COMPARE_PG is set (see TestTextFormatAgainstPostgres).
func TestBinaryFormatAgainstPostgres(t *testing.T) {
	dsn := os.Getenv("PGWIRE_COMPARE_PG")
	if dsn == "" {
		t.Skip("PGWIRE_COMPARE_PG not set")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	pc := conn.PgConn()
	if err := pc.Exec(ctx, "set timezone = 'UTC'; set datestyle = 'ISO, MDY'").Close(); err != nil {
		t.Fatal(err)
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))

	// Each check sends text to PostgreSQL as a parameter of type typ and
	// compares its binary value with ours.
	type check struct {
		typ  sqltypes.Type
		text string
	}
	var checks []check
	digits := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('0' + rng.IntN(10))
		}
		return string(b)
	}
	for range 3000 {
		s := digits(rng.IntN(25))
		if rng.IntN(3) > 0 {
			s += "." + digits(rng.IntN(25))
		}
		if s == "" || s == "." {
			s = "0"
		}
		if rng.IntN(2) == 0 {
			s = "-" + s
		}
		if rng.IntN(5) == 0 {
			s += "e" + strconv.Itoa(rng.IntN(40)-20)
		}
		checks = append(checks, check{sqltypes.Numeric, s})
	}
	for _, s := range []string{"0", "-0", "0.000", "1e-1000", "9e999", "NaN", "Infinity", "-Infinity", " 12.5 ", ".5", "5."} {
		checks = append(checks, check{sqltypes.Numeric, s})
	}
	for range 1000 {
		tm := time.Unix(rng.Int64N(200_000_000_000)-100_000_000_000, rng.Int64N(1e9)).UTC()
		if tm.Year() < -4000 || tm.Year() > 9999 {
			continue
		}
		lit := string(appendText(nil, sqltypes.Timestamp, tm.Round(time.Microsecond)))
		zone := fmt.Sprintf("%+03d:%02d", rng.IntN(29)-14, rng.IntN(4)*15)
		checks = append(checks, check{sqltypes.Timestamp, lit}, check{sqltypes.Date, lit})
		if ad, ok := strings.CutSuffix(lit, " BC"); ok {
			checks = append(checks, check{sqltypes.Timestamptz, ad + zone + " BC"})
		} else {
			checks = append(checks, check{sqltypes.Timestamptz, lit + zone},
				check{sqltypes.Timestamptz, strings.Replace(lit, " ", "T", 1) + "Z"})
		}
	}
	for _, s := range []string{"2024-03-15", "2024-3-5 1:02", "2024-03-15 12:30:45.1234565", "2024-03-15 12:30:45.9999996",
		"2024-03-15T12:30:45.5-07:30", "2024-03-15 12:30:45 +0530", "2024-03-15 12:30:45 UTC", "0044-03-15 BC", "epoch",
		"2024-12-31 24:00:00", "10000-01-01 00:00:00", "0044-03-15 12:00:00 BC +01", "2024-03-15 12:00:00+01 AD"} {
		for _, typ := range []sqltypes.Type{sqltypes.Date, sqltypes.Timestamp, sqltypes.Timestamptz} {
			checks = append(checks, check{typ, s})
		}
	}
	pgType := map[sqltypes.Type]string{sqltypes.Numeric: "numeric", sqltypes.Date: "date", sqltypes.Timestamp: "timestamp", sqltypes.Timestamptz: "timestamptz"}

	const batch = 100
	for start := 0; start < len(checks); start += batch {
		part := checks[start:min(start+batch, len(checks))]
		exprs := make([]string, len(part))
		params := make([][]byte, len(part))
		oids := make([]uint32, len(part))
		for i, c := range part {
			exprs[i] = fmt.Sprintf("$%d::%s", i+1, pgType[c.typ])
			params[i] = []byte(c.text)
			oids[i] = c.typ.PostgresOID()
		}
		res := pc.ExecParams(ctx, "select "+strings.Join(exprs, ","), params, oids, nil, []int16{1}).Read()
		if res.Err != nil {
			t.Fatalf("%v", res.Err)
		}
		for i, c := range part {
			pgBin := res.Rows[0][i]
			var mine []byte
			if c.typ == sqltypes.Numeric {
				n, err := parseNumericText(c.text)
				if err != nil {
					t.Errorf("numeric %q: PostgreSQL accepts it, pgwire: %v", c.text, err)
					continue
				}
				mine = n.appendBinary(nil)
				if back, err := decodeNumericBinary(pgBin); err != nil || back != n {
					t.Errorf("numeric %q: decoding PostgreSQL's %x gives %+v %v, want %+v", c.text, pgBin, back, err, n)
				}
			} else {
				v, e := decodeParam(c.typ, formatText, []byte(c.text), 1)
				if e != nil {
					t.Errorf("%s %q: PostgreSQL accepts it, pgwire: %s", pgType[c.typ], c.text, e.Message)
					continue
				}
				if mine, err = appendBinary(nil, c.typ, v); err != nil {
					t.Errorf("%s %q: %v", pgType[c.typ], c.text, err)
					continue
				}
				// The binary value decodes back to the same parameter.
				if back, e := decodeParam(c.typ, formatBinary, pgBin, 1); e != nil || !back.(time.Time).Equal(v.(time.Time)) {
					t.Errorf("%s %q: binary %x decodes to %v %v, want %v", pgType[c.typ], c.text, pgBin, back, e, v)
				}
			}
			if !bytes.Equal(mine, pgBin) {
				t.Errorf("%s %q: PostgreSQL %x, pgwire %x", pgType[c.typ], c.text, pgBin, mine)
			}
		}
	}

	// Our binary numerics, sent as parameters, read back as PostgreSQL's
	// text output: numeric_recv accepts them and means the same number.
	var nums []numeric
	for _, c := range checks {
		if c.typ == sqltypes.Numeric {
			n, _ := parseNumericText(c.text)
			nums = append(nums, n)
		}
	}
	for start := 0; start < len(nums); start += batch {
		part := nums[start:min(start+batch, len(nums))]
		exprs := make([]string, len(part))
		params := make([][]byte, len(part))
		oids := make([]uint32, len(part))
		for i, n := range part {
			exprs[i] = fmt.Sprintf("$%d::text", i+1)
			params[i] = n.appendBinary(nil)
			oids[i] = 1700
		}
		res := pc.ExecParams(ctx, "select "+strings.Join(exprs, ","), params, oids, []int16{1}, nil).Read()
		if res.Err != nil {
			t.Fatalf("%v", res.Err)
		}
		for i, n := range part {
			if got := string(res.Rows[0][i]); got != n.String() {
				t.Errorf("binary %x: PostgreSQL reads %q, pgwire wrote %q", params[i], got, n.String())
			}
		}
	}
}
