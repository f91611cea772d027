package rewrite

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dpproxy/dpproxy/config"
	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"
)

// The bounding query must compute exactly the bounded aggregates, on every
// backend. This fixture is built so that the bounded results do not depend
// on which rows and groups the random choices keep: within a unit, all the
// rows kept for a group carry the same values.
//
// Policy (testdata/policy.yaml): visits L0 = 3 groups, Linf = 2 rows;
// cost clamped to [0, 1000], nights to [0, 10]. people: row privacy, age
// clamped to [0, 100], income to [0, 200000].
var fixture = []string{
	`CREATE TABLE visits (patient_id INTEGER, visit_date DATE, diagnosis TEXT, clinic_id INTEGER, cost NUMERIC, nights INTEGER, score DOUBLE PRECISION, note TEXT, region TEXT)`,
	`CREATE TABLE people (age INTEGER, sex TEXT, income BIGINT)`,
	`CREATE TABLE clinics (clinic_id INTEGER, name TEXT, city TEXT)`,
	// surveys: a boolean and a date, row privacy.
	`CREATE TABLE surveys (married BOOLEAN, answered_on DATE)`,
	`INSERT INTO surveys VALUES (TRUE, '2024-01-01'), (FALSE, '2024-02-01'), (TRUE, '2024-03-01')`,
	// Patient 1: five rows in A, each cost 100, nights 20 (clamped to 10).
	`INSERT INTO visits VALUES (1, '2024-01-01', 'A', 1, 100, 20, 1.5, 'x1', 'n'), (1, '2024-02-01', 'A', 1, 100, 20, 1.5, 'x2', 'n'), (1, '2024-03-01', 'A', 1, 100, 20, 1.5, NULL, 'n'), (1, '2024-04-01', 'A', 1, 100, 20, 1.5, NULL, 'n'), (1, '2024-05-01', 'A', 1, 100, 20, 1.5, NULL, 'n')`,
	// Patient 2: one row in B, cost 5000 (clamped to 1000), nights 3, score -9 (clamped to -5).
	`INSERT INTO visits VALUES (2, '2024-06-15', 'B', 2, 5000, 3, -9, 'it''s', 's')`,
	// Patient 3: two rows in each of A, B, C, D, E; cost 10, nights NULL.
	`INSERT INTO visits VALUES (3, '2025-01-01', 'A', 2, 10, NULL, 0, NULL, 's'), (3, '2025-01-02', 'A', 2, 10, NULL, 0, NULL, 's'), (3, '2025-01-03', 'B', 2, 10, NULL, 0, NULL, 's'), (3, '2025-01-04', 'B', 2, 10, NULL, 0, NULL, 's'), (3, '2025-01-05', 'C', 2, 10, NULL, 0, NULL, 's'), (3, '2025-01-06', 'C', 2, 10, NULL, 0, NULL, 's'), (3, '2025-01-07', 'D', 2, 10, NULL, 0, NULL, 's'), (3, '2025-01-08', 'D', 2, 10, NULL, 0, NULL, 's'), (3, '2025-01-09', 'E', 2, 10, NULL, 0, NULL, 's'), (3, '2025-01-10', 'E', 2, 10, NULL, 0, NULL, 's')`,
	// stays: values that differ within a (unit, group), where the bounding
	// scales a unit's sum to Linf = 2 values. p1: 4 rows in W (cost 100,
	// 200, 300, 5000 → 1000; nights 1, 2 and two NULLs); p2: one row in W;
	// p3: 3 rows in W, nights 1, 1, 2, no cost; p4: 3 rows in V, every
	// cost at the upper bound after clamping; p5: one row in each of 14
	// wards outside the key list, no values.
	`CREATE TABLE stays (patient_id INTEGER, ward TEXT, cost NUMERIC, nights INTEGER)`,
	`INSERT INTO stays VALUES (1, 'W', 100, 1), (1, 'W', 200, 2), (1, 'W', 300, NULL), (1, 'W', 5000, NULL), (2, 'W', 50, 9), (3, 'W', NULL, 1), (3, 'W', NULL, 1), (3, 'W', NULL, 2), (4, 'V', 1000, NULL), (4, 'V', 7000, NULL), (4, 'V', 1000, NULL)`,
	`INSERT INTO stays VALUES (5, 'a', NULL, NULL), (5, 'b', NULL, NULL), (5, 'c', NULL, NULL), (5, 'd', NULL, NULL), (5, 'e', NULL, NULL), (5, 'f', NULL, NULL), (5, 'g', NULL, NULL),
		(5, 'h', NULL, NULL), (5, 'i', NULL, NULL), (5, 'j', NULL, NULL), (5, 'k', NULL, NULL), (5, 'l', NULL, NULL), (5, 'm', NULL, NULL), (5, 'n', NULL, NULL)`,
	// trips: at most C = 3 rows per unit over all cities (L0 = 3, Linf =
	// 2). p1: 4 rows in x (km 10), 1 in y (50): 2 + 1 = 3 capped rows, kept
	// whole. p2: 2 rows in each of x (100), y (0), z (20): 6 capped rows,
	// each weighted 3/6.
	// legs: the total bound C = 3 under partition selection (L0 = 3). p1:
	// one row in each of 4 wards, of which it keeps 3 at random: T over
	// the kept groups is 3, so each counts whole (T over all 4 would
	// weigh them 3/4). p2: 5 rows in ward a, capped at Linf = 2.
	// extremes: the smallest bigint, which has no negative.
	`CREATE TABLE extremes (patient_id INTEGER, k BIGINT)`,
	`INSERT INTO extremes VALUES (1, -9223372036854775808), (2, 25)`,
	`CREATE TABLE trips (patient_id INTEGER, city TEXT, km NUMERIC)`,
	`INSERT INTO trips VALUES (1, 'x', 10), (1, 'x', 10), (1, 'x', 10), (1, 'x', 10), (1, 'y', 50), (2, 'x', 100), (2, 'x', 100), (2, 'y', 0), (2, 'y', 0), (2, 'z', 20), (2, 'z', 20)`,
	// tolls: rows with a NULL unit, one unit to the bounding query: 4 in
	// x and 2 in y, capped at Linf = 2 each, T = 4 > C = 3, so weighted
	// 3/4; p1 has one row in x, p2 one in z (a group of light units only).
	`CREATE TABLE tolls (patient_id INTEGER, city TEXT)`,
	`INSERT INTO tolls VALUES (NULL, 'x'), (NULL, 'x'), (NULL, 'x'), (NULL, 'x'), (NULL, 'y'), (NULL, 'y'), (1, 'x'), (2, 'z')`,
	`CREATE TABLE legs (patient_id INTEGER, ward TEXT)`,
	`INSERT INTO legs VALUES (1, 'a'), (1, 'b'), (1, 'c'), (1, 'd'), (2, 'a'), (2, 'a'), (2, 'a'), (2, 'a'), (2, 'a')`,
	`INSERT INTO people VALUES (-5, 'F', 1000), (50, 'M', 300000), (150, 'F', NULL), (30, 'X', 50000)`,
	// admissions and doses: doses reach their patient through
	// admissions' key (a unit path with a hop). p1: admissions 10 and 11
	// in W, five doses of a (50 mg) across them; p2: admission 20 in V,
	// one dose of b (500 mg, clamped to 100); p3: admission 30 in V, a
	// and c (20 mg each). Admission 99 does not exist: its dose belongs
	// to no one.
	`CREATE TABLE admissions (admission_id INTEGER PRIMARY KEY, patient_id INTEGER, ward TEXT)`,
	`INSERT INTO admissions VALUES (10, 1, 'W'), (11, 1, 'W'), (20, 2, 'V'), (30, 3, 'V')`,
	`CREATE TABLE doses (admission_id INTEGER, drug TEXT, mg NUMERIC)`,
	`INSERT INTO doses VALUES (10, 'a', 50), (10, 'a', 50), (10, 'a', 50), (11, 'a', 50), (11, 'a', 50), (20, 'b', 500), (30, 'a', 20), (30, 'c', 20), (99, 'a', 70)`,
	`INSERT INTO clinics VALUES (1, 'North', 'Oslo'), (2, 'South', 'Bergen'), (3, 'East', 'Oslo')`,
}

type executeCase struct {
	sql string
	// bias asks for the excess measurements (Options.BiasBounds): their
	// columns follow the others.
	bias bool
	// check receives the backend rows (folded: Plan.FoldGroups) as
	// float64 (NULL as 0) and reports a mismatch.
	check func(rows [][]float64, keys []string) error
}

// Hand-computed bounded results.
var executeCases = []executeCase{
	{
		// Two text columns compared (COLLATE "C" on PostgreSQL): no
		// visit's diagnosis is its note; p1's region 'n' lies between 'A'
		// and its notes 'x1', 'x2' (2 rows kept), p2's 's' not between 'B'
		// and "it's", p3 has no note.
		sql:   `SELECT COUNT(*) FROM visits WHERE diagnosis = note OR region BETWEEN diagnosis AND note`,
		check: func(rows [][]float64, _ []string) error { return expectRow(rows, 2) },
	},
	{
		// ISO 8601 times with zones (Grafana's time filter): p3's six
		// visits from 2025-01-05 (2 kept); p2's visit on 2024-06-15 is
		// inside 00:00+02:00 (22:00 the day before, UTC) to 23:00Z.
		sql:   `SELECT COUNT(*) FROM visits WHERE visit_date >= '2025-01-05T00:00:00Z'`,
		check: func(rows [][]float64, _ []string) error { return expectRow(rows, 2) },
	},
	{
		// One constant compared with a date and with a text column: each
		// occurrence its own parameter, typed by its context (p3's six
		// visits from 2025-01-05, 2 kept; no note is that text).
		sql:   `SELECT COUNT(*) FROM visits WHERE visit_date >= '2025-01-05' OR note = '2025-01-05'`,
		check: func(rows [][]float64, _ []string) error { return expectRow(rows, 2) },
	},
	{
		// Superset's time filter: the call with an ISO format is its
		// constant.
		sql:   `SELECT COUNT(*) FROM visits WHERE visit_date >= TO_TIMESTAMP('2025-01-05 00:00:00.000000', 'YYYY-MM-DD HH24:MI:SS.US')`,
		check: func(rows [][]float64, _ []string) error { return expectRow(rows, 2) },
	},
	{
		sql:   `SELECT COUNT(*) FROM visits WHERE visit_date BETWEEN '2024-06-15T00:00:00+02:00' AND '2024-06-15T23:00:00Z'`,
		check: func(rows [][]float64, _ []string) error { return expectRow(rows, 1) },
	},
	{
		// Bounded per patient through the unit join: p1's five doses
		// (two admissions) keep 2 (100 mg), p2's one (100 mg), p3's two
		// (40 mg); the orphan dose is left out. Columns: rows,
		// count(mg), sum(mg).
		sql:   `SELECT COUNT(*), SUM(mg) FROM doses`,
		check: func(rows [][]float64, _ []string) error { return expectRow(rows, 5, 5, 240) },
	},
	{
		// The same from the referenced table: admissions' unit column
		// holds the unit, doses join it along the key.
		sql:   `SELECT COUNT(*), SUM(d.mg) FROM admissions a JOIN doses d ON d.admission_id = a.admission_id`,
		check: func(rows [][]float64, _ []string) error { return expectRow(rows, 5, 5, 240) },
	},
	{
		// Per drug: a has p1's 2 kept and p3's 1; b p2's; c p3's.
		sql:   `SELECT d.drug, COUNT(*) FROM doses d GROUP BY d.drug`,
		check: expectGroups(map[string]string{"a": "[3]", "b": "[1]", "c": "[1]"}),
	},
	{
		// The query's join along the key serves as the unit join: W has
		// p1's 2 kept rows (one patient), V p2's 1 and p3's 2.
		sql:   `SELECT a.ward, COUNT(*), COUNT(DISTINCT a.patient_id) FROM doses d JOIN admissions a ON d.admission_id = a.admission_id GROUP BY a.ward`,
		check: expectGroups(map[string]string{"W": "[2 1]", "V": "[3 2]"}),
	},
	{
		// EXISTS over a public table, correlated with the visit's clinic:
		// Oslo's clinics are 1 and 3, p1's (2 of 5 rows kept); NOT
		// EXISTS keeps clinic 2's: p2's row and p3's (2 of 10).
		sql:   `SELECT COUNT(*) FROM visits v WHERE EXISTS (SELECT 1 FROM clinics c WHERE c.clinic_id = v.clinic_id AND c.city = 'Oslo')`,
		check: func(rows [][]float64, _ []string) error { return expectRow(rows, 2) },
	},
	{
		sql:   `SELECT COUNT(*) FROM visits v WHERE NOT EXISTS (SELECT 1 FROM clinics c WHERE c.clinic_id = v.clinic_id AND c.city = 'Oslo')`,
		check: func(rows [][]float64, _ []string) error { return expectRow(rows, 3) },
	},
	{
		// Two protected tables joined on the unit: each visit of a
		// patient meets each of their stays (p1 5 × 4 rows, p2 1 × 1, p3
		// 10 × 3, all in ward W), bounded per patient after the join at
		// visits' Linf = 2: 2 + 1 + 2 rows; cost 2 × 100 (20 values
		// scaled to 2), 1000 (5000 clamped), 2 × 10. Ward V: no joined
		// rows (p4 has no visits).
		sql: `SELECT s.ward, COUNT(*), SUM(v.cost) FROM visits v JOIN stays s USING (patient_id) GROUP BY s.ward`,
		check: func(rows [][]float64, keys []string) error {
			got := map[string]string{}
			for i, r := range rows {
				got[keys[i]] = fmt.Sprint(r)
			}
			if want := map[string]string{"W": "[5 5 1220]"}; fmt.Sprint(got) != fmt.Sprint(want) {
				return fmt.Errorf("got %v, want %v", got, want)
			}
			return nil
		},
	},
	{
		// A public dimension joined before bounding: Oslo is clinic 1,
		// p1's 5 rows (cost 100, 2 kept); Bergen clinic 2, p2's row (cost
		// 5000 → 1000) and p3's 10 (cost 10, 2 kept). Columns: rows,
		// count(cost), sum(cost), units.
		sql: `SELECT c.city, COUNT(*), AVG(v.cost) FROM visits v JOIN clinics c ON v.clinic_id = c.clinic_id GROUP BY c.city`,
		check: func(rows [][]float64, keys []string) error {
			got := map[string]string{}
			for i, r := range rows {
				got[keys[i]] = fmt.Sprint(r)
			}
			if want := map[string]string{"Oslo": "[2 2 200 1]", "Bergen": "[3 3 1020 2]"}; fmt.Sprint(got) != fmt.Sprint(want) {
				return fmt.Errorf("got %v, want %v", got, want)
			}
			return nil
		},
	},
	{
		// LEFT JOIN ... USING, a condition on the public table: p1's rows
		// (2 kept), each with its clinic's name.
		sql:   `SELECT COUNT(*), COUNT(c.name) FROM visits LEFT JOIN clinics c USING (clinic_id) WHERE c.city = 'Oslo'`,
		check: func(rows [][]float64, _ []string) error { return expectRow(rows, 2, 2, 0) },
	},
	{
		// A CTE over the join, folded: as the first case, sums only.
		sql: `WITH vc AS (SELECT v.cost, c.city FROM visits v JOIN clinics c ON v.clinic_id = c.clinic_id) SELECT city, SUM(cost) FROM vc GROUP BY city`,
		check: func(rows [][]float64, keys []string) error {
			got := map[string]string{}
			for i, r := range rows {
				got[keys[i]] = fmt.Sprint(r)
			}
			if want := map[string]string{"Oslo": "[2 200 1]", "Bergen": "[3 1020 2]"}; fmt.Sprint(got) != fmt.Sprint(want) {
				return fmt.Errorf("got %v, want %v", got, want)
			}
			return nil
		},
	},
	{
		// A CTE that filters and renames (inline.go): diagnosis A is p1's
		// 5 rows (cost 100, 2 kept) and p3's 2 (cost 10): 4 rows, 220.
		sql: `WITH r AS (SELECT patient_id, cost AS c FROM visits WHERE diagnosis = 'A') SELECT COUNT(*), SUM(c) FROM r`,
		check: func(rows [][]float64, _ []string) error {
			return expectRow(rows, 4, 4, 220)
		},
	},
	{
		// A derived table that filters (cost < 1000 drops p2's row), keys
		// from the data: n is p1's (2 of 5 rows), s p3's (2 of 10).
		// Columns: rows, units.
		sql: `SELECT r.region, COUNT(*) FROM (SELECT * FROM visits WHERE cost < 1000) AS r GROUP BY r.region`,
		check: func(rows [][]float64, keys []string) error {
			got := map[string]string{}
			for i, r := range rows {
				got[keys[i]] = fmt.Sprint(r)
			}
			if want := map[string]string{"n": "[2 1]", "s": "[2 1]"}; fmt.Sprint(got) != fmt.Sprint(want) {
				return fmt.Errorf("got %v, want %v", got, want)
			}
			return nil
		},
	},
	{
		// IN over a public table: the initial of Oslo's clinic, 'n': p1's
		// rows, 2 kept.
		sql:   `SELECT COUNT(*) FROM visits WHERE region IN (SELECT LOWER(SUBSTR(name, 1, 1)) FROM clinics WHERE city = 'Oslo')`,
		check: func(rows [][]float64, _ []string) error { return expectRow(rows, 2) },
	},
	{
		// A CTE that is a DP aggregate, post-processed by the outer
		// query: the inner query's bounding (public keys, L0 = 3).
		sql: `WITH d AS (SELECT diagnosis, COUNT(*) AS n FROM visits GROUP BY diagnosis) SELECT n, diagnosis FROM d`,
		check: func(rows [][]float64, keys []string) error {
			want := map[string]float64{"A": 3.2, "B": 2.2, "C": 1.2, "D": 1.2, "E": 1.2}
			for i, r := range rows {
				if math.Abs(r[0]-want[keys[i]]) > 1e-9 {
					return fmt.Errorf("group %s: %v, want %v", keys[i], r, want[keys[i]])
				}
			}
			return nil
		},
	},
	{
		// Excess (excess.go), ungrouped, Linf = 2: rows p1 5 − 2 = 3, p2
		// 0, p3 10 − 2 = 8, each unit's clipped at the count's
		// sensitivity 2 → 2 + 0 + 2; cost p1 500 − 200, p2 5000 − 1000
		// (clipped at 2000), p3 100 − 20 → 300 + 2000 + 80.
		sql:  `SELECT COUNT(*), SUM(cost) FROM visits`,
		bias: true,
		check: func(rows [][]float64, _ []string) error {
			return expectRowNear(rows, 5, 5, 1220, 4, 2380)
		},
	},
	{
		// Excess over public keys: p1's A keeps 2 of 5 rows (3 out); p3's
		// 5 groups keep 3/5 of 2 rows each (0.8 out of each); the engine
		// weights the counts, not the excess (FoldGroups).
		sql:  `SELECT diagnosis, COUNT(*) FROM visits GROUP BY diagnosis`,
		bias: true,
		check: func(rows [][]float64, keys []string) error {
			want := map[string][2]float64{"A": {3.2, 3.8}, "B": {2.2, 0.8}, "C": {1.2, 0.8}, "D": {1.2, 0.8}, "E": {1.2, 0.8}}
			if len(rows) != len(want) {
				return fmt.Errorf("keys %v, want %v", keys, want)
			}
			for i, r := range rows {
				w := want[keys[i]]
				if math.Abs(r[0]-w[0]) > 1e-9 || math.Abs(r[1]-w[1]) > 1e-9 {
					return fmt.Errorf("group %s: %v, want %v", keys[i], r, w)
				}
			}
			return nil
		},
	},
	{
		// Excess with partition selection: p1 has one visit in each of 5
		// months and keeps L0 = 3 at random; a month it drops is counted
		// in the excess (kept + excess = 1 each) and, with no other
		// visit, not returned at all. 2024-06: p2's one visit. 2025-01:
		// p3's 10 visits, 2 kept, 8 out clipped at the sensitivity 6.
		// Columns: rows, units, excess.
		sql:  `SELECT date_trunc('month', visit_date) AS m, COUNT(*) FROM visits GROUP BY 1`,
		bias: true,
		check: func(rows [][]float64, keys []string) error {
			p1 := 0
			for i, r := range rows {
				switch {
				case strings.HasPrefix(keys[i], "2025-01"):
					if fmt.Sprint(r) != "[2 1 6]" {
						return fmt.Errorf("2025-01: %v, want [2 1 6]", r)
					}
				case strings.HasPrefix(keys[i], "2024-06"):
					if fmt.Sprint(r) != "[1 1 0]" {
						return fmt.Errorf("2024-06: %v, want [1 1 0]", r)
					}
				default:
					p1++
					if fmt.Sprint(r) != "[1 1 0]" {
						return fmt.Errorf("%s: %v, want p1's kept month [1 1 0]", keys[i], r)
					}
				}
			}
			if p1 != 3 {
				return fmt.Errorf("%d of p1's months returned, want L0 = 3 (keys %v)", p1, keys)
			}
			return nil
		},
	},
	{
		// Excess under row privacy: clamping only. income 300000 → 200000
		// (100000 out; NULL counts nothing); age −5 → 0 and 150 → 100:
		// the centred sum's excess is −5 + 50.
		sql:  `SELECT SUM(income), AVG(age) FROM people`,
		bias: true,
		check: func(rows [][]float64, _ []string) error {
			return expectRowNear(rows, 3, 251000, 4, 180, 100000, 45)
		},
	},
	{
		// Excess with the total bound C = 3: p1 keeps 2 of its 4 x rows
		// and its y row (T = 3); p2 keeps half of each of its 2 capped
		// rows in x, y and z (T = 6): one row out of each.
		sql:  `SELECT city, COUNT(*) FROM trips GROUP BY city`,
		bias: true,
		check: func(rows [][]float64, keys []string) error {
			want := map[string]string{"x": "[3 3]", "y": "[2 1]", "z": "[1 1]"}
			for i, r := range rows {
				if got := fmt.Sprint(roundAll(r)); got != want[keys[i]] {
					return fmt.Errorf("city %s: %v, want %s", keys[i], r, want[keys[i]])
				}
			}
			return nil
		},
	},
	{
		// Excess of a conditional sum: the CASE unclamped. p1 5 × 100
		// scaled to 2 (300 out), p2 5000 → 1000 (4000 out, clipped at
		// 2000), p3's zeros.
		sql:  `SELECT SUM(CASE WHEN nights > 2 THEN cost ELSE 0 END) FROM visits`,
		bias: true,
		check: func(rows [][]float64, _ []string) error {
			return expectRowNear(rows, 5, 1200, 2300)
		},
	},
	{
		// Ungrouped: one group, at most Linf = 2 rows per unit:
		// p1 2, p2 1, p3 2 → 5.
		sql: `SELECT COUNT(*) FROM visits`,
		check: func(rows [][]float64, _ []string) error {
			return expectRow(rows, 5)
		},
	},
	{
		// SUM(cost): p1 2×100, p2 min(5000,1000), p3 2×10 → 1220; COUNT(cost) = 5.
		// AVG(nights): p1 2×10 clamped, p2 3, p3 NULLs → count 3, sum 23.
		sql: `SELECT SUM(cost), AVG(nights) FROM visits`,
		check: func(rows [][]float64, _ []string) error {
			// columns: count(cost), sum(cost), count(nights), sum(nights)
			return expectRow(rows, 5, 1220, 3, 23)
		},
	},
	{
		// WHERE before bounding: only p1's rows with a note (2 rows) and p2's.
		sql:   `SELECT COUNT(*) FROM visits WHERE note IS NOT NULL`,
		check: func(rows [][]float64, _ []string) error { return expectRow(rows, 3) },
	},
	{
		// A boolean compared with TRUE (the number 1 to the TiDB parser)
		// is sent as TRUE: PostgreSQL refuses boolean = integer.
		sql:   `SELECT COUNT(*) FROM surveys WHERE married = TRUE`,
		check: func(rows [][]float64, _ []string) error { return expectRow(rows, 2) },
	},
	{
		sql:   `SELECT COUNT(married) FROM surveys WHERE answered_on >= DATE '2024-02-01'`,
		check: func(rows [][]float64, _ []string) error { return expectRow(rows, 2, 0) },
	},
	{
		// Conditional aggregation: the CASE is each row's value. SUM(CASE
		// A THEN cost ELSE 0): p1 five values of 100 → 500·2/5 = 200; p2
		// one 0; p3 ten values, two of 10 → 20·2/10 = 4: 204, over
		// 2 + 1 + 2 = 5 capped values. COUNT(CASE nights > 2 THEN 1):
		// p1 5 rows → 2, p2 1, p3 none: 3 (its sum of ones, 2 + 1).
		sql:   `SELECT SUM(CASE WHEN diagnosis = 'A' THEN cost ELSE 0 END), COUNT(CASE WHEN nights > 2 THEN 1 END) FROM visits`,
		check: func(rows [][]float64, _ []string) error { return expectRow(rows, 5, 204, 3, 3) },
	},
	{
		// FILTER (WHERE ...) is the conditional aggregate it means:
		// COUNT(*) FILTER (WHERE nights > 2) as above (3, its ones 3);
		// SUM(cost) FILTER (WHERE diagnosis = 'A'): p1 five 100s → 2
		// values, 200; p3 two 10s → 2 values, 20: 4 values, 220.
		sql:   `SELECT COUNT(*) FILTER (WHERE nights > 2), SUM(cost) FILTER (WHERE diagnosis = 'A') FROM visits`,
		check: func(rows [][]float64, _ []string) error { return expectRow(rows, 3, 3, 4, 220) },
	},
	{
		// COUNT(unit) counts rows, like COUNT(*); the unit is not summed.
		sql:   `SELECT COUNT(patient_id) FROM visits`,
		check: func(rows [][]float64, _ []string) error { return expectRow(rows, 5, 0) },
	},
	{
		// COUNT of a text column: counted, never summed (PostgreSQL
		// refuses SUM(text)); p1's two notes, p2's one.
		sql:   `SELECT COUNT(note) FROM visits`,
		check: func(rows [][]float64, _ []string) error { return expectRow(rows, 3, 0) },
	},
	{
		sql:   `SELECT COUNT(*) FROM visits WHERE note = 'it''s' OR (diagnosis IN ('C', 'D') AND visit_date BETWEEN '2025-01-05' AND '2025-01-07')`,
		check: func(rows [][]float64, _ []string) error { return expectRow(rows, 1+2) },
	},
	{
		// COALESCE and CASE: p1's two rows with a note (x1, x2) and p2's;
		// diagnosis A with cost over 50 is p1 only (5 rows, Linf 2).
		sql:   `SELECT COUNT(*) FROM visits WHERE COALESCE(note, 'none') <> 'none'`,
		check: func(rows [][]float64, _ []string) error { return expectRow(rows, 3) },
	},
	{
		sql:   `SELECT COUNT(*) FROM visits WHERE CASE diagnosis WHEN 'A' THEN cost ELSE 0 END > 50`,
		check: func(rows [][]float64, _ []string) error { return expectRow(rows, 2) },
	},
	{
		sql:   `SELECT SUM(score) FROM visits WHERE NOT (region LIKE 'n%')`,
		check: func(rows [][]float64, _ []string) error { return expectRow(rows, 3, -5) },
	},
	{
		// Grouped, public keys: p1 → A: 2 rows; p2 → B: 1; p3 has 5
		// groups, L0 = 3: each of its groups gets 3/5 of its 2 rows and
		// of one unit.
		sql: `SELECT diagnosis, COUNT(*), COUNT(DISTINCT patient_id) FROM visits GROUP BY diagnosis`,
		check: func(rows [][]float64, keys []string) error {
			want := map[string][2]float64{"A": {3.2, 1.6}, "B": {2.2, 1.6}, "C": {1.2, 0.6}, "D": {1.2, 0.6}, "E": {1.2, 0.6}}
			if len(rows) != len(want) {
				return fmt.Errorf("keys %v, want %v", keys, want)
			}
			for i, r := range rows {
				w, ok := want[keys[i]]
				if !ok || math.Abs(r[0]-w[0]) > 1e-9 || math.Abs(r[1]-w[1]) > 1e-9 {
					return fmt.Errorf("group %s: %v, want %v", keys[i], r, w)
				}
			}
			return nil
		},
	},
	{
		// Variance family: count, sum and sum of squares of the bounded,
		// clamped values. nights: p1 2 rows of 10 (clamped), p2 3 → count 3,
		// sum 23, squares 100 + 100 + 9 = 209.
		sql:   `SELECT VAR_POP(nights) FROM visits`,
		check: func(rows [][]float64, _ []string) error { return expectRow(rows, 3, 23, 209) },
	},
	{
		// GROUP BY a CASE with constant results: public keys high and low.
		// p1's 5 rows (cost 100) and p2's 1 are high: 2 + 1; p3's 10 rows
		// (cost 10) are low: 2.
		sql: `SELECT CASE WHEN cost >= 100 THEN 'high' ELSE 'low' END AS band, COUNT(*) FROM visits GROUP BY 1`,
		check: func(rows [][]float64, keys []string) error {
			got := map[string]float64{}
			for i, r := range rows {
				got[keys[i]] = r[0]
			}
			if len(got) != 2 || got["high"] != 3 || got["low"] != 2 {
				return fmt.Errorf("counts per band %v, want high:3 low:2", got)
			}
			return nil
		},
	},
	{
		// Keys alone (SELECT DISTINCT region): per region, the distinct
		// units that partition selection tests: n has p1, s has p2 and p3.
		sql: `SELECT DISTINCT region FROM visits`,
		check: func(rows [][]float64, keys []string) error {
			got := map[string]float64{}
			for i, r := range rows {
				got[keys[i]] = r[0]
			}
			if len(got) != 2 || got["n"] != 1 || got["s"] != 2 {
				return fmt.Errorf("units per region %v, want n:1 s:2", got)
			}
			return nil
		},
	},
	{
		// Partition selection (region has no key list): per region, rows
		// and the distinct units that selection tests. p1 → n: 2 rows;
		// p2 and p3 → s: 1 + 2 rows (p3 keeps 2 rows in its single group).
		sql: `SELECT region, COUNT(*) FROM visits GROUP BY region`,
		check: func(rows [][]float64, keys []string) error {
			got := map[string][2]float64{}
			for i, r := range rows {
				got[keys[i]] = [2]float64{r[0], r[1]}
			}
			want := map[string][2]float64{"n": {2, 1}, "s": {3, 2}}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				return fmt.Errorf("got %v, want %v", got, want)
			}
			return nil
		},
	},
	{
		// Time buckets (partition selection: visit_date has no key list).
		// p1 has one visit in each of 5 months and keeps L0 = 3 of them;
		// p2 one visit; p3 ten visits in January 2025, Linf = 2 kept.
		// Totals: 3 + 1 + 2 = 6 rows over 3 + 1 + 1 = 5 (unit, month) pairs,
		// and January 2025 is always there with 2 rows of 1 unit.
		sql: `SELECT date_trunc('month', visit_date) AS m, COUNT(*) FROM visits GROUP BY 1`,
		check: func(rows [][]float64, keys []string) error {
			var total, units float64
			jan := false
			for i, r := range rows {
				total += r[0]
				units += r[1]
				if strings.HasPrefix(keys[i], "2025-01-01") && r[0] == 2 && r[1] == 1 {
					jan = true
				}
			}
			if total != 6 || units != 5 || !jan {
				return fmt.Errorf("keys %v rows %v: want 6 rows over 5 pairs and 2025-01 with 2 rows", keys, rows)
			}
			return nil
		},
	},
	{
		// Scaling to Linf = 2 values per unit: rows 2 + 1 + 2 + 2 + 2 = 9
		// (p5 has 14 rows, one group: no GROUP BY);
		// cost: p1 has 4 values summing to 1600 → 1600·2/4 = 800 over 2,
		// p2 50 over 1, p4 3000·2/3 = 2000 over 2 (exactly the bound
		// Linf·hi) → 2850 over 5; nights: p1 1 + 2 (2 values, kept whole),
		// p2 9, p3 4·2/3 → 38/3 over 5.
		sql: `SELECT COUNT(*), SUM(cost), AVG(nights) FROM stays`,
		check: func(rows [][]float64, _ []string) error {
			return expectRowNear(rows, 9, 5, 2850, 5, 3+9+8.0/3)
		},
	},
	{
		// Grouped, one group per unit in the key list: W 800 + 50 over 3
		// values, V 2000 over 2.
		sql: `SELECT ward, SUM(cost) FROM stays GROUP BY ward`,
		check: func(rows [][]float64, keys []string) error {
			got := map[string][2]float64{}
			for i, r := range rows {
				if keys[i] == "V" || keys[i] == "W" {
					got[keys[i]] = [2]float64{r[0], r[1]}
				}
			}
			want := map[string][2]float64{"V": {2, 2000}, "W": {3, 850}}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				return fmt.Errorf("got %v, want %v", got, want)
			}
			return nil
		},
	},
	{
		// p5's 14 groups get 3/14 of its row each, weighted exactly after
		// the backend's sums (Plan.FoldGroups).
		sql: `SELECT ward, COUNT(*) FROM stays GROUP BY ward`,
		check: func(rows [][]float64, keys []string) error {
			want := 3.0 / 14
			n := 0
			for i, r := range rows {
				if keys[i] >= "a" && keys[i] <= "n" {
					n++
					if math.Abs(r[0]-want) > 1e-15 {
						return fmt.Errorf("group %s: %.17g rows, want %.17g", keys[i], r[0], want)
					}
				}
			}
			if n != 14 {
				return fmt.Errorf("%d of p5's groups, want 14", n)
			}
			return nil
		},
	},
	{
		// Row privacy: no bounding; clamping only. age: 0 + 50 + 100 + 30 = 180 over 4;
		// income: 1000 + 200000 + 50000 over 3 non-NULL.
		sql: `SELECT COUNT(*), SUM(income), AVG(age) FROM people`,
		check: func(rows [][]float64, _ []string) error {
			return expectRow(rows, 4, 3, 251000, 4, 180)
		},
	},
	// Constants of every kind, which Plan.Bound sends as parameters typed
	// as PostgreSQL types the literals (people's ages: -5, 50, 150, 30;
	// incomes 1000, 300000, NULL, 50000).
	{
		// An integer too large for the integer column: bigint, not an
		// integer parameter that could not hold it.
		sql:   `SELECT COUNT(*) FROM people WHERE age > -10 AND age < 2147483648`,
		check: func(rows [][]float64, _ []string) error { return expectRow(rows, 4) },
	},
	{
		// Decimals compared with an integer column: numeric, not an
		// integer parameter that could not read them.
		sql:   `SELECT COUNT(*) FROM people WHERE age = 50.0 OR age < 30.5`,
		check: func(rows [][]float64, _ []string) error { return expectRow(rows, 3) },
	},
	{
		sql:   `SELECT COUNT(*) FROM people WHERE income IN (1000, 50000) OR income BETWEEN 299999.5 AND 3e5`,
		check: func(rows [][]float64, _ []string) error { return expectRow(rows, 3) },
	},
	{
		// Strings in IN and LIKE; one constant twice (0), one parameter.
		sql:   `SELECT COUNT(*) FROM people WHERE sex IN ('F', 'X') AND sex LIKE '_' AND age > 0 AND income > 0`,
		check: func(rows [][]float64, _ []string) error { return expectRow(rows, 1) },
	},
	{
		sql: `SELECT sex, COUNT(*) FROM people WHERE age > 0 GROUP BY sex`,
		check: func(rows [][]float64, keys []string) error {
			got := map[string]float64{}
			for i, r := range rows {
				got[keys[i]] = r[0]
			}
			want := map[string]float64{"F": 1, "M": 1, "X": 1}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				return fmt.Errorf("got %v, want %v", got, want)
			}
			return nil
		},
	},
	{
		// Numeric bins: nights 20 (p1, five rows, capped at 2) fall in the
		// bin 20, outside the bounds' bins (the engine drops it); p2's 3
		// in bin 0; p3's NULLs in no bin. width_bucket(score, -5, 5, 4):
		// p1's 1.5 → 3, p2's -9 → 0, p3's 0 → 3 (two rows in each of 5
		// groups, capped at 2 per group: 10).
		sql:   `SELECT FLOOR(nights / 5) * 5, COUNT(*) FROM visits GROUP BY 1`,
		check: expectKeyed(map[string]float64{"20": 2, "0": 1, "<nil>": 2}),
	},
	{
		// The total bound: x: p1 2 + p2 2·½, sums 40·2/4 + 200·½; y: 1 +
		// 2·½, 50 + 0; z: 2·½, 40·½. Columns: rows, count(km), sum(km).
		sql:   `SELECT city, COUNT(*), SUM(km) FROM trips GROUP BY city`,
		check: expectTripTotals,
	},
	{
		// The total bound over the groups partition selection keeps: p1's
		// 3 kept wards count 1 each, p2 counts 2 in a: 5 in all, every
		// count whole.
		sql: `SELECT ward, COUNT(*) FROM legs GROUP BY ward`,
		check: func(rows [][]float64, keys []string) error {
			total := 0.0
			for i, r := range rows {
				if r[0] != math.Round(r[0]) {
					return fmt.Errorf("ward %s: count %v, want a whole number (T over the kept groups)", keys[i], r[0])
				}
				total += r[0]
			}
			if math.Abs(total-5) > 1e-9 {
				return fmt.Errorf("counts %v over %v sum to %v, want 5", rows, keys, total)
			}
			return nil
		},
	},
	{
		// The same with excess columns (the gated form): a cell beyond
		// L0 counts for nothing but its excess. Counts as above; the
		// excess is p2's 3 rows beyond Linf, plus p1's dropped row when
		// its ward is a (a ward with no kept cell is not returned).
		sql:  `SELECT ward, COUNT(*) FROM legs GROUP BY ward`,
		bias: true,
		check: func(rows [][]float64, keys []string) error {
			total, excess := 0.0, 0.0
			for _, r := range rows {
				total += r[0]
				excess += r[1]
			}
			if math.Abs(total-5) > 1e-9 || math.Abs(excess-3) > 1e-9 && math.Abs(excess-4) > 1e-9 {
				return fmt.Errorf("rows %v over %v: counts sum to %v (want 5), excess to %v (want 3 or 4)", rows, keys, total, excess)
			}
			return nil
		},
	},
	{
		// Integer division truncates without negating the value: the
		// smallest bigint bins at −9223372036854775800 instead of failing
		// the query (found in review).
		sql:   `SELECT k / 10 * 10, COUNT(*) FROM extremes GROUP BY 1`,
		check: expectKeyed(map[string]float64{strconv.FormatFloat(-9223372036854775800, 'f', -1, 64): 1, "20": 1}),
	},
	{
		sql:   `SELECT width_bucket(score, -5, 5, 4) AS b, COUNT(*) FROM visits GROUP BY b`,
		check: expectKeyed(map[string]float64{"3": 2 + 2, "0": 1}),
	},
}

// expectTripTotals checks the total bound's figures of trips by city (or
// ward): rows, count(km) and sum(km) per group.
func expectTripTotals(rows [][]float64, keys []string) error {
	want := map[string][]float64{"x": {3, 3, 120}, "y": {2, 2, 50}, "z": {1, 1, 20}}
	if len(rows) != len(want) {
		return fmt.Errorf("got %v %v, want %v", keys, rows, want)
	}
	for i, k := range keys {
		for j, w := range want[k] {
			if math.Abs(rows[i][j]-w) > 1e-9 {
				return fmt.Errorf("group %s: got %v, want %v", k, rows[i], want[k])
			}
		}
	}
	return nil
}

// expectKeyed compares single-value rows by group key, keys read as
// numbers where they are (backends write 20, 20.0 or 20.000).
func expectKeyed(want map[string]float64) func([][]float64, []string) error {
	return func(rows [][]float64, keys []string) error {
		got := map[string]float64{}
		for i, r := range rows {
			k := keys[i]
			if f, err := strconv.ParseFloat(k, 64); err == nil {
				k = strconv.FormatFloat(f, 'f', -1, 64)
			}
			got[k] += r[0]
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("got %v, want %v", got, want)
		}
		return nil
	}
}

// roundAll rounds each value to 9 decimal places (weights C/T computed
// in decimal or floating arithmetic).
func roundAll(r []float64) []float64 {
	out := make([]float64, len(r))
	for i, v := range r {
		out[i] = math.Round(v*1e9) / 1e9
	}
	return out
}

// expectGroups checks grouped rows by their key.
func expectGroups(want map[string]string) func(rows [][]float64, keys []string) error {
	return func(rows [][]float64, keys []string) error {
		got := map[string]string{}
		for i, r := range rows {
			got[keys[i]] = fmt.Sprint(r)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("got %v, want %v", got, want)
		}
		return nil
	}
}

func expectRow(rows [][]float64, want ...float64) error {
	if len(rows) != 1 {
		return fmt.Errorf("got %d rows, want 1", len(rows))
	}
	if fmt.Sprint(rows[0]) != fmt.Sprint(want) {
		return fmt.Errorf("got %v, want %v", rows[0], want)
	}
	return nil
}

// expectRowNear is expectRow within 1e-9 relative: scaled sums are
// computed in each backend's numeric or floating-point arithmetic.
func expectRowNear(rows [][]float64, want ...float64) error {
	if len(rows) != 1 || len(rows[0]) != len(want) {
		return fmt.Errorf("got %v, want one row %v", rows, want)
	}
	for i, w := range want {
		if math.Abs(rows[0][i]-w) > 1e-9*math.Max(1, math.Abs(w)) {
			return fmt.Errorf("got %v, want %v", rows[0], want)
		}
	}
	return nil
}

func TestBackendSQLComputesBoundedAggregatesSQLite(t *testing.T) {
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "fixture.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	runExecuteCases(t, db, SQLite)
}

func TestBackendSQLComputesBoundedAggregatesPostgres(t *testing.T) {
	dsn := os.Getenv("DPPROXY_TEST_PG_DSN")
	if dsn == "" {
		t.Skip("DPPROXY_TEST_PG_DSN not set: no PostgreSQL to run against (scripts/test.sh sets it)")
	}
	ctx := context.Background()
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	schema := "rewrite_test_" + strconv.Itoa(os.Getpid())
	if _, err := admin.ExecContext(ctx, `DROP SCHEMA IF EXISTS `+schema+` CASCADE; CREATE SCHEMA `+schema); err != nil {
		t.Fatal(err)
	}
	defer admin.ExecContext(ctx, `DROP SCHEMA `+schema+` CASCADE`)
	db, err := sql.Open("pgx", dsn+"&search_path="+schema)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	runExecuteCases(t, db, Postgres)
}

// TestBackendSQLComputesBoundedAggregatesMySQL runs the fixture and cases
// on MySQL or MariaDB (scripts/test.sh starts a MariaDB 10.11), in a fresh
// database, with the MySQL dialect.
func TestBackendSQLComputesBoundedAggregatesMySQL(t *testing.T) {
	dsn := os.Getenv("DPPROXY_TEST_MYSQL_DSN")
	if dsn == "" {
		t.Skip("DPPROXY_TEST_MYSQL_DSN not set: no MySQL/MariaDB to run against (scripts/test.sh sets it)")
	}
	ctx := context.Background()
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	name := "rewrite_test_" + strconv.Itoa(os.Getpid())
	if _, err := admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	defer admin.ExecContext(ctx, "DROP DATABASE "+name)
	// The backend's session (backend.MySQL): default quoting and
	// backslash escapes, which the dialect relies on, whatever the
	// server's default sql_mode; dates as time.Time.
	cfg.DBName = name
	cfg.ParseTime = true
	cfg.Params = map[string]string{"sql_mode": "'STRICT_TRANS_TABLES'"}
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	runExecuteCases(t, db, MySQL)
}

func runExecuteCases(t *testing.T, db *sql.DB, d Dialect) {
	t.Helper()
	ctx := context.Background()
	for _, stmt := range fixture {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("fixture: %v\n%s", err, stmt)
		}
	}
	t.Run("r2t", func(t *testing.T) { checkR2T(t, db, d) })
	checkKeyUnits(t, db, d)
	pol := testPolicy(t)
	// On PostgreSQL each case runs twice: as BackendSQL, and as Plan.Bound
	// with its constants as parameters, sent the two ways the backend
	// sends them (an unnamed statement with untyped text parameters the
	// first time, a prepared one after), which must compute the same.
	binds := []bool{false}
	if d.Name() == "postgres" {
		binds = append(binds, true)
	}
	bound := 0
	for _, c := range executeCases {
		for _, bind := range binds {
			name := c.sql
			if bind {
				name = "bound/" + c.sql
			}
			t.Run(name, func(t *testing.T) {
				stmts, err := Parse(c.sql, PostgresFrontEnd)
				if err != nil {
					t.Fatal(err)
				}
				q, err := Analyze(stmts[0], pol, Options{Dialect: d, Epsilon: 1, BiasBounds: c.bias, BindConstants: bind})
				if err != nil {
					t.Fatal(err)
				}
				if bind && q.Plan.Bound != nil {
					bound++
				}
				runExecuteCase(t, db, c, q.Plan, bind)
			})
		}
	}
	if d.Name() == "postgres" && bound < 20 {
		t.Errorf("only %d cases had constants to bind: the bound form is barely tested", bound)
	}
	// Each case once more with the columns that hold no NULL in the
	// fixture declared NOT NULL, as dpproxy reads them from the database
	// at start: counted by their rows, they must give the same results.
	declared := notNullAsInFixture(t, db, d, pol)
	countedByRows := 0
	for _, c := range executeCases {
		t.Run("declared not null/"+c.sql, func(t *testing.T) {
			stmts, err := Parse(c.sql, PostgresFrontEnd)
			if err != nil {
				t.Fatal(err)
			}
			q, err := Analyze(stmts[0], declared, Options{Dialect: d, Epsilon: 1, BiasBounds: c.bias})
			if err != nil {
				t.Fatal(err)
			}
			if q.Plan != nil && strings.Contains(q.Plan.BackendSQL, "COUNT(*) AS "+d.QuoteIdent("dp_c0")) {
				countedByRows++
			}
			runExecuteCase(t, db, c, q.Plan, false)
		})
	}
	if countedByRows < 5 {
		t.Errorf("only %d cases counted a value by its rows: NOT NULL columns are barely tested", countedByRows)
	}
	t.Run("heavy units", func(t *testing.T) { checkHeavyUnits(t, db, d) })
	t.Run("heavy units", func(t *testing.T) { checkRowsForm(t, db, d) })
	// Quantile histograms: group keys, then the bucket, then its mass.
	for _, c := range histogramCases {
		checkSideQuery(t, db, pol, d, c, 1, func(p *Plan) []string {
			var sqls []string
			for _, h := range p.Histograms {
				sqls = append(sqls, h.BackendSQL)
			}
			return sqls
		})
	}
	// Distinct counts: group keys, then the count.
	for _, c := range distinctCases {
		checkSideQuery(t, db, pol, d, c, 0, func(p *Plan) []string { return p.SideQueries })
	}
	// The auto bound's histogram (autobound.go): people by their largest
	// group's rows — p1 5 (A), p2 1, p3 2; without GROUP BY all their
	// rows: 5, 1, 10.
	auto := testPolicy(t)
	auto.ProtectedTables[0].MaxRowsPerUnit = config.RowsAuto
	for _, c := range []struct {
		sql  string
		want map[string]float64
	}{
		{`SELECT diagnosis, COUNT(*) FROM visits GROUP BY diagnosis`, map[string]float64{"5": 1, "1": 1, "2": 1}},
		{`SELECT COUNT(*) FROM visits`, map[string]float64{"5": 1, "1": 1, "10": 1}},
	} {
		t.Run("auto bound/"+c.sql, func(t *testing.T) {
			stmts, err := Parse(c.sql, PostgresFrontEnd)
			if err != nil {
				t.Fatal(err)
			}
			q, err := Analyze(stmts[0], auto, Options{Dialect: d, Epsilon: 1})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]float64{}
			for _, raw := range queryRaw(t, db, q.Plan.Auto.SQL) {
				got[strconv.FormatFloat(number(t, raw[0]), 'f', -1, 64)] += number(t, raw[1])
			}
			if err := expectHistogram(c.want)(got); err != nil {
				t.Fatalf("%v\nSQL: %s", err, q.Plan.Auto.SQL)
			}
		})
	}
	// The bias report's counts (bias.go): people, then people beyond the
	// bounds, then people with a clamped value per column.
	for _, c := range []struct {
		sql  string
		want []float64
	}{
		// p1: 5 rows > Linf; p2: cost 5000 > 1000; p3: 10 rows.
		{`SELECT COUNT(*), SUM(cost) FROM visits`, []float64{3, 2, 1}},
		// p1: 5 rows in A; p3: 5 groups > L0 = 3.
		{`SELECT diagnosis, COUNT(*) FROM visits GROUP BY diagnosis`, []float64{3, 2}},
		// WHERE first: only p2's row and p1's two noted rows.
		{`SELECT SUM(cost) FROM visits WHERE note IS NOT NULL`, []float64{2, 0, 1}},
		// Row privacy: ages -5 and 150 outside [0, 100].
		{`SELECT AVG(age) FROM people`, []float64{4, 2}},
	} {
		t.Run("bias report/"+c.sql, func(t *testing.T) {
			stmts, err := Parse(c.sql, PostgresFrontEnd)
			if err != nil {
				t.Fatal(err)
			}
			q, err := Analyze(stmts[0], pol, Options{Dialect: d, Epsilon: 1, ReportBias: true})
			if err != nil {
				t.Fatal(err)
			}
			raws := queryRaw(t, db, q.Plan.Bias.SQL)
			if len(raws) != 1 || len(raws[0]) != len(c.want) {
				t.Fatalf("got %v, want one row %v", raws, c.want)
			}
			for i, w := range c.want {
				if got := number(t, raws[0][i]); got != w {
					t.Fatalf("got %v, want %v\nSQL: %s", raws[0], c.want, q.Plan.Bias.SQL)
				}
			}
		})
	}
}

// notNullAsInFixture returns a copy of pol whose columns that hold no
// NULL in the fixture's tables are declared NOT NULL (config.Column's
// NotNull, which dpproxy reads from the database at start).
func notNullAsInFixture(t *testing.T, db *sql.DB, d Dialect, pol *config.Policy) *config.Policy {
	t.Helper()
	return withTables(pol, func(pt *config.ProtectedTable) {
		for j := range pt.Columns {
			var nulls int64
			err := db.QueryRow("SELECT COUNT(*) FROM " + d.QuoteIdent(pt.Name) + " WHERE " + d.QuoteIdent(pt.Columns[j].Name) + " IS NULL").Scan(&nulls)
			pt.Columns[j].NotNull = err == nil && nulls == 0 // a table or column the fixture lacks stays undeclared
		}
	})
}

// checkSideQuery plans c.sql, runs the one query pick returns from the
// plan five times (random choices differ run to run; the results must
// not) and checks it: each row is the group keys, extra more key columns
// (numbers), then a value, summed per "key|...|extra" ("extra" alone
// without GROUP BY).
// runExecuteCase runs a case's plan five times and checks every result:
// its BackendSQL, or with bind its Bound form when it has one.
func runExecuteCase(t *testing.T, db *sql.DB, c executeCase, p *Plan, bind bool) {
	t.Helper()
	sql, args := p.BackendSQL, []any(nil)
	if bind && p.Bound != nil {
		sql, args = p.Bound.SQL, p.Bound.Args
	}
	// Random choices differ run to run; the results must not.
	for run := 0; run < 5; run++ {
		mode := pgx.QueryExecModeCacheStatement
		if run == 0 {
			mode = pgx.QueryExecModeExec
		}
		var raws [][]any
		if args == nil {
			raws = queryRaw(t, db, sql)
		} else {
			raws = queryRaw(t, db, sql, append([]any{mode}, args...)...)
		}
		// Plans that weight groups return a row per group and k.
		raws, err := p.FoldGroups(raws)
		if err != nil {
			t.Fatal(err)
		}
		var values [][]float64
		var keys []string
		for _, raw := range raws {
			var nums []float64
			key := ""
			for i, v := range raw {
				if i == p.GroupCountColumn {
					continue
				}
				if i < len(p.Groups) {
					key = keyText(v)
					continue
				}
				nums = append(nums, number(t, v))
			}
			values = append(values, nums)
			keys = append(keys, key)
		}
		if err := c.check(values, keys); err != nil {
			t.Fatalf("run %d: %v\nSQL: %s\nargs: %q", run, err, sql, args)
		}
	}
}

func checkSideQuery(t *testing.T, db *sql.DB, pol *config.Policy, d Dialect, c histogramCase, extra int, pick func(*Plan) []string) {
	t.Run(c.sql, func(t *testing.T) {
		stmts, err := Parse(c.sql, PostgresFrontEnd)
		if err != nil {
			t.Fatal(err)
		}
		q, err := Analyze(stmts[0], pol, Options{Dialect: d, Epsilon: 1})
		if err != nil {
			t.Fatal(err)
		}
		p := q.Plan
		sqls := pick(p)
		if len(sqls) != 1 {
			t.Fatalf("%d queries, want 1", len(sqls))
		}
		for run := 0; run < 5; run++ {
			got := map[string]float64{}
			for _, raw := range queryRaw(t, db, sqls[0]) {
				parts := make([]string, 0, len(p.Groups)+extra)
				for i := range p.Groups {
					parts = append(parts, keyText(raw[i]))
				}
				for i := len(p.Groups); i < len(p.Groups)+extra; i++ {
					parts = append(parts, strconv.FormatFloat(number(t, raw[i]), 'f', -1, 64))
				}
				got[strings.Join(parts, "|")] += number(t, raw[len(p.Groups)+extra])
			}
			if err := c.check(got); err != nil {
				t.Fatalf("run %d: %v\nSQL: %s", run, err, sqls[0])
			}
		}
	})
}

// queryRaw runs sql and returns its rows as the driver scans them.
func queryRaw(t *testing.T, db *sql.DB, sql string, args ...any) [][]any {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), sql, args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, sql)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var raws [][]any
	for rows.Next() {
		raw := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range raw {
			ptrs[i] = &raw[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		raws = append(raws, raw)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return raws
}

// keyText renders a group key the same way on every backend.
func keyText(v any) string {
	if b, ok := v.([]byte); ok {
		v = string(b) // MySQL's strings
	}
	if tm, ok := v.(time.Time); ok {
		return tm.Format("2006-01-02")
	}
	return fmt.Sprint(v)
}

// Hand-computed distinct counts after bounding (distinct.go): a unit
// keeps Linf = 2 of its distinct values per group, in L0 = 3 groups.
var distinctCases = []histogramCase{
	{
		// diagnosis: p1 only A; p2 B; p3 A..E but keeps two of them (its
		// one group, the whole table): {A, B} ∪ two of p3's five. The
		// count is 2 + |p3's pick \ {A, B}|: 2, 3 or 4.
		sql: `SELECT COUNT(DISTINCT diagnosis) FROM visits`,
		check: func(got map[string]float64) error {
			if n := got[""]; len(got) != 1 || n < 2 || n > 4 {
				return fmt.Errorf("got %v, want one count from 2 to 4", got)
			}
			return nil
		},
	},
	{
		// notes by region: n holds p1's x1, x2 (its third to fifth are
		// NULL); s holds p2's "it's".
		sql:   `SELECT region, COUNT(DISTINCT note) FROM visits GROUP BY region`,
		check: expectHistogram(map[string]float64{"n": 2, "s": 1}),
	},
	{
		// Row privacy: each row a unit; sexes per non-NULL income.
		sql:   `SELECT COUNT(DISTINCT sex) FROM people WHERE income IS NOT NULL`,
		check: expectHistogram(map[string]float64{"": 3}),
	},
	{
		// Clinics per diagnosis, L0 = 3: p3 (clinic 2) is in five
		// diagnoses and keeps three at random.
		sql: `SELECT diagnosis, COUNT(DISTINCT clinic_id) FROM visits GROUP BY diagnosis`,
		check: func(got map[string]float64) error {
			// A: p1's clinic 1, maybe p3's 2; B: p2's 2 (p3's is the same
			// 2); C, D, E: p3's 2 if kept.
			total := 0.0
			for _, v := range got {
				total += v
			}
			if got["A"] < 1 || got["A"] > 2 || got["B"] != 1 || total < 4 || total > 5 {
				return fmt.Errorf("got %v", got)
			}
			return nil
		},
	},
}

type histogramCase struct {
	sql string
	// check receives the histogram as "key|bucket" (or "bucket"
	// without GROUP BY) to mass.
	check func(got map[string]float64) error
}

// Hand-computed bounded histograms (quantile.go): each unit's values in a
// group weigh min(1, Linf/c) each, Linf = 2; a unit keeps L0 = 3 groups.
var histogramCases = []histogramCase{
	{
		// nights on the integer grid [0, 10]: p1 five 20s (clamped to
		// 10) weigh 2/5 each, 2 in bucket 10; p2 one 3; p3 has none.
		sql:   `SELECT MEDIAN(nights) FROM visits`,
		check: expectHistogram(map[string]float64{"3": 1, "10": 2}),
	},
	{
		// cost on 1024 buckets of [0, 1000] (×1.024): p1 100, 200, 300,
		// 5000 → buckets 102, 204, 307, 1023, weighing 2/4 each; p2 50 →
		// 51; p4 three values at or above 1000 → 1023, 2/3 each.
		sql:   `SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY cost) FROM stays`,
		check: expectHistogram(map[string]float64{"51": 1, "102": 0.5, "204": 0.5, "307": 0.5, "1023": 2.5}),
	},
	{
		// By ward: p1 nights 1, 2 (two values, weight 1); p2 9; p3 1, 1, 2
		// (three values, 2/3 each).
		sql:   `SELECT ward, MEDIAN(nights) FROM stays GROUP BY ward`,
		check: expectHistogram(map[string]float64{"W|1": 1 + 4.0/3, "W|2": 1 + 2.0/3, "W|9": 1}),
	},
	{
		// Row privacy: each row a unit, ages clamped to [0, 100].
		sql:   `SELECT sex, MEDIAN(age) FROM people GROUP BY sex`,
		check: expectHistogram(map[string]float64{"F|0": 1, "F|100": 1, "M|50": 1, "X|30": 1}),
	},
	{
		// L0 = 3: p3's cost 10 (bucket 10) in five groups, two rows
		// each; it keeps three groups at random, each weighing 2. p1
		// (A, 100 → 102) and p2 (B, 5000 → 1023) keep their one group.
		sql: `SELECT diagnosis, MEDIAN(cost) FROM visits GROUP BY diagnosis`,
		check: func(got map[string]float64) error {
			kept := 0
			for _, g := range []string{"A", "B", "C", "D", "E"} {
				switch m := got[g+"|10"]; m {
				case 2:
					kept++
				case 0:
				default:
					return fmt.Errorf("group %s holds mass %v of p3, want 0 or 2: %v", g, m, got)
				}
			}
			if kept != 3 || got["A|102"] != 2 || got["B|1023"] != 1 || len(got) != 5 {
				return fmt.Errorf("got %v, want A|102 = 2, B|1023 = 1 and p3's mass 2 in exactly 3 groups", got)
			}
			return nil
		},
	},
}

func expectHistogram(want map[string]float64) func(map[string]float64) error {
	return func(got map[string]float64) error {
		if len(got) != len(want) {
			return fmt.Errorf("got %v, want %v", got, want)
		}
		for k, w := range want {
			if g, ok := got[k]; !ok || math.Abs(g-w) > 1e-9 {
				return fmt.Errorf("got %v, want %v", got, want)
			}
		}
		return nil
	}
}

func number(t *testing.T, v any) float64 {
	t.Helper()
	switch x := v.(type) {
	case nil:
		return 0
	case int64:
		return float64(x)
	case float64:
		return x
	case []byte:
		return parseNumber(t, string(x))
	case string:
		return parseNumber(t, x)
	}
	// pgx returns numeric as pgtype.Numeric through database/sql's any:
	// its text form parses.
	return parseNumber(t, fmt.Sprint(v))
}

func parseNumber(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("not a number: %q", s)
	}
	return f
}

// heavyUnitsForm is a dialect that computes the total bound's T for heavy
// units only (heavy.go), whatever its backend's own choice.
type heavyUnitsForm struct{ Dialect }

func (heavyUnitsForm) HeavyUnitTotals() bool { return true }

// The total bound computes the same in both its forms (the window over
// every cell, and the correction over heavy units: heavy.go) on every
// backend, with rows of no unit and with a WHERE that ORs.
func checkHeavyUnits(t *testing.T, db *sql.DB, d Dialect) {
	cases := []executeCase{
		{sql: `SELECT city, COUNT(*), SUM(km) FROM trips GROUP BY city`, check: expectTripTotals},
		{
			// Under the WHERE: p1 keeps its 4 x rows (capped at 2, T = 2,
			// sum 40 scaled to 20); p2 its 2 y rows (km 0) and 2 z rows
			// (km 20), T = 4, weighted 3/4.
			sql: `SELECT city, COUNT(*), COUNT(km), SUM(km) FROM trips WHERE km < 50 OR city = 'z' GROUP BY city`,
			check: func(rows [][]float64, keys []string) error {
				want := map[string]string{"x": "[2 2 20]", "y": "[1.5 1.5 0]", "z": "[1.5 1.5 30]"}
				for i, r := range rows {
					if got := fmt.Sprint(roundAll(r)); got != want[keys[i]] {
						return fmt.Errorf("city %s: %v, want %s", keys[i], r, want[keys[i]])
					}
				}
				if len(rows) != len(want) {
					return fmt.Errorf("%d groups %v, want %d", len(rows), keys, len(want))
				}
				return nil
			},
		},
		{
			// The NULL unit: x 2·¾ + p1's 1, y 2·¾; z p2's 1 (no heavy
			// unit there: no correction).
			sql: `SELECT city, COUNT(*) FROM tolls GROUP BY city`,
			check: func(rows [][]float64, keys []string) error {
				got := map[string]float64{}
				for i, r := range rows {
					got[keys[i]] = math.Round(r[0]*1e9) / 1e9
				}
				if fmt.Sprint(got) != fmt.Sprint(map[string]float64{"x": 2.5, "y": 1.5, "z": 1}) {
					return fmt.Errorf("got %v, want x 2.5, y 1.5, z 1", got)
				}
				return nil
			},
		},
	}
	cases = append(cases,
		executeCase{
			// Squares: x p1 400·2/4 + p2 20000·½, y p1 2500, z p2 800·½.
			sql:   `SELECT city, VARIANCE(km) FROM trips GROUP BY city`,
			check: expectRounded(map[string]string{"x": "[3 120 10200]", "y": "[2 50 2500]", "z": "[1 20 400]"}),
		},
		executeCase{
			// A text column: counted, its sum column 0.
			sql:   `SELECT city, COUNT(city) FROM tolls GROUP BY city`,
			check: expectRounded(map[string]string{"x": "[2.5 0]", "y": "[1.5 0]", "z": "[1 0]"}),
		})
	forms := []Dialect{d}
	if !d.HeavyUnitTotals() {
		forms = append(forms, heavyUnitsForm{d})
	}
	pol := testPolicy(t)
	for _, form := range forms {
		for _, c := range cases {
			t.Run(fmt.Sprintf("heavy %v/%s", form.HeavyUnitTotals(), c.sql), func(t *testing.T) {
				stmts, err := Parse(c.sql, PostgresFrontEnd)
				if err != nil {
					t.Fatal(err)
				}
				q, err := Analyze(stmts[0], pol, Options{Dialect: form, Epsilon: 1})
				if err != nil {
					t.Fatal(err)
				}
				heavy := strings.Contains(q.Plan.BackendSQL, "dp_fix")
				if !q.Plan.TotalCapped() || heavy != form.HeavyUnitTotals() {
					t.Fatalf("total capped %v, heavy-units form %v, want true, %v:\n%s", q.Plan.TotalCapped(), heavy, form.HeavyUnitTotals(), q.Plan.BackendSQL)
				}
				runExecuteCase(t, db, c, q.Plan, false)
			})
		}
	}
}

// windowForm is a dialect that never uses the heavy-units form, for a
// reference on MySQL.
type windowForm struct{ Dialect }

func (windowForm) HeavyUnitTotals() bool { return false }

// The heavy-units form's rows form (Linf ≥ C: the light units summed from
// the rows, heavy.go) computes what the window over every cell does, on
// every backend: trips and tolls with Linf = C = 3, trips' unit declared
// NOT NULL (it holds none; tolls' holds NULLs, so only MySQL, whose join
// compares NULLs as equal, takes the form there), with WHEREs that leave
// some units light and some heavy.
func checkRowsForm(t *testing.T, db *sql.DB, d Dialect) {
	declared, reference := testPolicy(t), testPolicy(t)
	for _, pol := range []*config.Policy{declared, reference} {
		for i := range pol.ProtectedTables {
			if pt := &pol.ProtectedTables[i]; pt.Name == "trips" || pt.Name == "tolls" {
				pt.MaxRowsPerUnit = pt.MaxTotalRowsPerUnit
				pt.UnitNotNull = pol == declared && pt.Name == "trips"
			}
		}
	}
	q := d.QuoteIdent
	rowsMain := ") AS " + q("dp_rows") + " GROUP BY " + q("dp_g0") + ") AS " + q("dp_main")
	for _, c := range []struct {
		sql      string
		rowsForm bool // on PostgreSQL and SQLite
	}{
		{`SELECT city, COUNT(*), SUM(km) FROM trips GROUP BY city`, true},
		{`SELECT city, COUNT(*), COUNT(km), AVG(km) FROM trips WHERE city <> 'x' GROUP BY city`, true},
		{`SELECT city, COUNT(*), SUM(km) FROM trips WHERE city = 'y' OR km = 100 GROUP BY city`, true},
		{`SELECT city, VARIANCE(km) FROM trips WHERE km <= 20 GROUP BY city`, true},
		// A conditional aggregate's value is NULL where its condition fails.
		{`SELECT city, COUNT(CASE WHEN km > 10 THEN km END), SUM(CASE WHEN km > 10 THEN km END) FROM trips WHERE city <> 'y' GROUP BY city`, true},
		{`SELECT city, COUNT(*), COUNT(city) FROM tolls GROUP BY city`, false},
	} {
		t.Run("rows form/"+c.sql, func(t *testing.T) {
			stmts, err := Parse(c.sql, PostgresFrontEnd)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Analyze(stmts[0], declared, Options{Dialect: d, Epsilon: 1})
			if err != nil {
				t.Fatal(err)
			}
			want, err := Analyze(stmts[0], reference, Options{Dialect: windowForm{d}, Epsilon: 1})
			if err != nil {
				t.Fatal(err)
			}
			if form := strings.Contains(got.Plan.BackendSQL, rowsMain); form != (c.rowsForm || d.HeavyUnitTotals()) {
				t.Fatalf("rows form %v, want %v:\n%s", form, !form, got.Plan.BackendSQL)
			}
			if strings.Contains(want.Plan.BackendSQL, "dp_fix") {
				t.Fatalf("the reference is not the window form:\n%s", want.Plan.BackendSQL)
			}
			rowsOf := func(p *Plan) map[string]string {
				out := map[string]string{}
				for _, raw := range queryRaw(t, db, p.BackendSQL) {
					var vals []float64
					for _, v := range raw[1:] {
						vals = append(vals, number(t, v))
					}
					out[keyText(raw[0])] = fmt.Sprint(roundAll(vals))
				}
				return out
			}
			if g, w := rowsOf(got.Plan), rowsOf(want.Plan); fmt.Sprint(g) != fmt.Sprint(w) {
				t.Fatalf("rows form %v, window form %v\nSQL: %s", g, w, got.Plan.BackendSQL)
			}
		})
	}
}

// expectRounded compares each group's row, rounded to 9 places, with
// want's text.
func expectRounded(want map[string]string) func([][]float64, []string) error {
	return func(rows [][]float64, keys []string) error {
		got := map[string]string{}
		for i, r := range rows {
			got[keys[i]] = fmt.Sprint(roundAll(r))
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("got %v, want %v", got, want)
		}
		return nil
	}
}
