package engine

import (
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dpproxy/dpproxy/backend"
	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/mechanisms"
	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// release turns the exact, bounded backend result into the DP answer:
// one row per released group, each measurement perturbed with Laplace noise
// calibrated to its sensitivity and ε share, then post-processed (rounding,
// clamping, AVG as a ratio), ordered and limited. Everything after the
// noise is post-processing and costs no privacy. calibrate gives each
// measurement's mechanism (measurementMechanism, or memoized).
func release(plan *rewrite.Plan, data bounded, r *mechanisms.Rand, calibrate calibrate) (*sqltypes.Result, error) {
	rows := data.rows
	mechs := make([]noiser, len(plan.Measurements))
	for i, m := range plan.Measurements {
		if m.Sensitivity == 0 {
			continue // the value is the same on every database: no noise needed
		}
		mech, err := calibrate(m)
		if err != nil {
			return nil, &sqlerr.Error{Code: sqlerr.PrivacyParameterError, Message: fmt.Sprintf("cannot calibrate noise: %v", err), Err: err}
		}
		mechs[i] = mech
	}
	// A plan that weights groups returns a row per group and k: fold them.
	folded, err := plan.FoldGroups(rows.Values)
	if err != nil {
		return nil, &sqlerr.Error{Code: sqlerr.InternalError, Message: "unexpected backend result; no answer was released", Err: err}
	}
	rows = &backend.Rows{Columns: rows.Columns, Values: folded}
	side := sideValues(plan, data)
	// noisyGroup perturbs every measurement of one group.
	noisyGroup := func(g groupResult) ([]float64, error) {
		noisy := make([]float64, len(plan.Measurements))
		for i, m := range plan.Measurements {
			var exact float64
			if m.SideQuery > 0 {
				exact = side[m.SideQuery-1][g.canon] // a group without values: 0
			} else {
				exact = m.Value(g.exact)
			}
			v, err := noisyMeasurement(m, mechs[i], exact, r)
			if err != nil {
				return nil, &sqlerr.Error{Code: sqlerr.InternalError, Message: "noise generation failed; no answer was released", Err: err}
			}
			noisy[i] = v
		}
		return noisy, nil
	}
	var groups []groupResult
	if plan.Selection != nil {
		groups, err = selectGroups(plan, rows, r, noisyGroup)
	} else {
		groups, err = groupRows(plan, rows)
	}
	if err != nil {
		return nil, err
	}
	hists := groupHistograms(plan, data)
	res := &sqltypes.Result{
		Noise:   columnNoise(plan, mechs),
		Columns: make([]sqltypes.Column, 0, len(plan.Output)),
		Rows:    make([][]any, 0, len(groups)),
	}
	for _, o := range plan.Output {
		res.Columns = append(res.Columns, sqltypes.Column{Name: o.Name, Type: o.Type})
	}
	for _, g := range groups {
		noisy := g.noisy // already drawn when selection thresholded a count
		if noisy == nil {
			if noisy, err = noisyGroup(g); err != nil {
				return nil, err
			}
		}
		quantiles, err := groupQuantiles(plan, hists, g.canon, r)
		if err != nil {
			return nil, err
		}
		// Every aggregate's released value, for expressions and HAVING
		// (post-processing of the noisy measurements).
		aggs := make([]any, len(plan.Aggregates))
		for i, a := range plan.Aggregates {
			aggs[i] = aggregateValue(a, noisy, quantiles, a.Type)
		}
		if plan.Having != nil {
			keep, _ := plan.Having.Eval(g.keys, aggs)
			if b, _ := keep.(bool); !b {
				continue
			}
		}
		// The row carries each column's interval after its values, so that
		// ordering and the outer query move them together (split below).
		n := len(plan.Output)
		row := make([]any, 2*n)
		for i, o := range plan.Output {
			row[n+i] = columnInterval(plan, o, g.keys, noisy, mechs)
			switch {
			case o.Source.Group >= 0:
				row[i] = g.keys[o.Source.Group]
			case o.Source.Derived != nil:
				v, err := o.Source.Derived.Eval(g.keys, aggs)
				if err != nil {
					v = nil // never an error that depends on the values
				}
				row[i] = typedDerived(v, o.Type)
			default:
				row[i] = aggregateValue(plan.Aggregates[o.Source.Aggregate], noisy, quantiles, o.Type)
			}
		}
		res.Rows = append(res.Rows, row)
	}
	finishRows(res, plan)
	if plan.Bias != nil {
		notice, err := biasNotice(plan, data, r)
		if err != nil {
			return nil, err
		}
		res.Notices = append(res.Notices, notice)
	}
	res.Tag = sqltypes.SelectTag(len(res.Rows))
	return res, nil
}

// finishRows orders, limits and applies the outer query to released
// rows, each its values then its columns' intervals, and splits the
// intervals off into res.Intervals.
func finishRows(res *sqltypes.Result, plan *rewrite.Plan) {
	orderRows(res.Rows, plan.OrderBy)
	if plan.Limit >= 0 && int64(len(res.Rows)) > plan.Limit {
		res.Rows = res.Rows[:plan.Limit]
	}
	if plan.Outer != nil {
		applyOuter(res, plan)
	}
	res.Intervals = make([][]*sqltypes.Interval, 0, len(res.Rows))
	for i, row := range res.Rows {
		n := len(row) / 2
		ivs := make([]*sqltypes.Interval, n)
		for j, v := range row[n:] {
			ivs[j], _ = v.(*sqltypes.Interval)
		}
		res.Rows[i] = row[:n:n]
		res.Intervals = append(res.Intervals, ivs)
	}
}

// applyOuter post-processes released rows by an outer query: pick and
// rename columns, order, offset, limit.
func applyOuter(res *sqltypes.Result, plan *rewrite.Plan) {
	o := plan.Outer
	rows := make([][]any, len(res.Rows))
	inner := len(plan.Output)
	for r, row := range res.Rows {
		rows[r] = make([]any, 2*len(o.Columns))
		for i, c := range o.Columns {
			rows[r][i] = row[c.Inner]
			rows[r][len(o.Columns)+i] = row[inner+c.Inner] // its interval
		}
	}
	orderRows(rows, o.OrderBy)
	if o.Offset > 0 {
		rows = rows[min(int64(len(rows)), o.Offset):]
	}
	if o.Limit >= 0 && int64(len(rows)) > o.Limit {
		rows = rows[:o.Limit]
	}
	res.Rows = rows
	res.Columns = res.Columns[:0]
	for _, c := range plan.Columns() {
		res.Columns = append(res.Columns, sqltypes.Column{Name: c.Name, Type: c.Type})
	}
}

// groupResult is one group to release: its typed keys and the exact
// backend row (nil when the group has no rows).
type groupResult struct {
	keys  []any
	exact []any
	// canon is the canonical key (canonicalKey of each key, joined).
	canon string
	// noisy holds the group's noisy measurements when selection drew them
	// (thresholding a count); nil otherwise.
	noisy []float64
}

// groupRows pairs the backend rows with the groups to release. Without
// GROUP BY there is exactly one group. With GROUP BY, the released groups
// are exactly the public key lists' combinations, in policy order: keys
// absent from the data are released too (with noisy zeros) and keys not in
// the lists are dropped, so the set of keys reveals nothing.
func groupRows(plan *rewrite.Plan, rows *backend.Rows) ([]groupResult, error) {
	if len(plan.Groups) == 0 {
		var exact []any
		if len(rows.Values) > 0 {
			exact = rows.Values[0]
		}
		return []groupResult{{exact: exact}}, nil // canon "": no keys
	}
	byKey := make(map[string][]any, len(rows.Values))
	for _, row := range rows.Values {
		parts := make([]string, len(plan.Groups))
		for i, g := range plan.Groups {
			parts[i] = canonicalKey(row[g.BackendColumn], g.Column.Type)
		}
		byKey[joinKeys(parts)] = row
	}
	typedKeys := make([][]any, len(plan.Groups))
	canonKeys := make([][]string, len(plan.Groups))
	for i, g := range plan.Groups {
		for _, k := range g.Keys {
			v, err := typedKey(k, g.Column.Type)
			if err != nil {
				return nil, &sqlerr.Error{Code: sqlerr.InternalError, Message: fmt.Sprintf("policy key %q of column %q: %v", k, g.Column.Name, err)}
			}
			typedKeys[i] = append(typedKeys[i], v)
			canonKeys[i] = append(canonKeys[i], canonicalKey(v, g.Column.Type))
		}
	}
	var out []groupResult
	idx := make([]int, len(plan.Groups))
	for {
		keys := make([]any, len(plan.Groups))
		parts := make([]string, len(plan.Groups))
		for i := range plan.Groups {
			keys[i] = typedKeys[i][idx[i]]
			parts[i] = canonKeys[i][idx[i]]
		}
		canon := joinKeys(parts)
		out = append(out, groupResult{keys: keys, exact: byKey[canon], canon: canon})
		// Advance the mixed-radix counter over the key lists.
		i := len(idx) - 1
		for ; i >= 0; i-- {
			idx[i]++
			if idx[i] < len(typedKeys[i]) {
				break
			}
			idx[i] = 0
		}
		if i < 0 {
			return out, nil
		}
	}
}

// noisyMeasurement perturbs one measurement of one group.
// noiser is a calibrated additive noise mechanism (Laplace or Gaussian).
type noiser interface {
	AddNoiseInt(r *mechanisms.Rand, x int64) (int64, error)
	AddNoiseFloat(r *mechanisms.Rand, x float64) (float64, error)
	ErrorBound(confidence float64) float64
}

// measurementMechanism calibrates a measurement's noise: Gaussian at
// (ε, δ) over its L2 sensitivity when the plan chose it, else Laplace at ε
// over its L1 sensitivity.
func measurementMechanism(m rewrite.Measurement) (noiser, error) {
	if m.Gaussian {
		return mechanisms.NewGaussian(m.Epsilon, m.Delta, m.L2)
	}
	return mechanisms.NewLaplace(m.Epsilon, m.Sensitivity)
}

func noisyMeasurement(m rewrite.Measurement, mech noiser, value float64, r *mechanisms.Rand) (float64, error) {
	if mech == nil {
		return value, nil
	}
	if m.Integer && math.Abs(value) < 1<<62 {
		n, err := mech.AddNoiseInt(r, int64(math.Round(value)))
		return float64(n), err
	}
	return mech.AddNoiseFloat(r, value)
}

// aggregateValue post-processes noisy measurements into an aggregate's
// value of the output type.
func aggregateValue(a rewrite.Aggregate, noisy, quantiles []float64, typ sqltypes.Type) any {
	switch a.Func {
	case rewrite.QuantileAgg:
		return typedNumber(quantiles[a.Quantile], typ, a.Column.Type.Integer())
	case rewrite.CountStar, rewrite.CountCol, rewrite.CountDistinctUnit, rewrite.CountDistinctValues:
		return int64(math.Max(0, math.Round(noisy[a.Measurements[0]])))
	case rewrite.Sum:
		v := noisy[a.Measurements[0]]
		if a.Bounds.Lo >= 0 {
			v = math.Max(0, v)
		}
		if a.Bounds.Hi <= 0 {
			v = math.Min(0, v)
		}
		return typedNumber(v, typ, a.Column.Type.Integer())
	case rewrite.Avg:
		count := math.Max(1, noisy[a.Measurements[0]])
		mid := (a.Bounds.Lo + a.Bounds.Hi) / 2
		v := noisy[a.Measurements[1]]/count + mid
		v = math.Min(a.Bounds.Hi, math.Max(a.Bounds.Lo, v))
		return typedNumber(v, typ, false)
	case rewrite.VarPop, rewrite.VarSamp, rewrite.StddevPop, rewrite.StddevSamp:
		return typedNumber(variance(a, noisy), typ, false)
	}
	return nil
}

// variance post-processes a noisy count, centred sum and centred square
// sum: E[(x−mid)²] − E[x−mid]², clamped to [0, ((hi−lo)/2)²] (the largest
// variance of values in [lo, hi]); the sample forms scale by n/(n−1).
func variance(a rewrite.Aggregate, noisy []float64) float64 {
	n := math.Max(1, noisy[a.Measurements[0]])
	mean := noisy[a.Measurements[1]] / n
	v := noisy[a.Measurements[2]]/n - mean*mean
	half := (a.Bounds.Hi - a.Bounds.Lo) / 2
	v = math.Min(half*half, math.Max(0, v))
	if (a.Func == rewrite.VarSamp || a.Func == rewrite.StddevSamp) && n > 1 {
		v *= n / (n - 1)
	}
	if a.Func == rewrite.StddevPop || a.Func == rewrite.StddevSamp {
		return math.Sqrt(v)
	}
	return v
}

// typedDerived gives a computed value its column's Go type.
func typedDerived(v any, typ sqltypes.Type) any {
	f, isFloat := v.(float64)
	switch {
	case v == nil:
		return nil
	case typ == sqltypes.Int8 && isFloat:
		return int64(math.Round(f))
	case typ == sqltypes.Numeric:
		switch x := v.(type) {
		case float64:
			return sqltypes.Decimal(strconv.FormatFloat(x, 'f', -1, 64))
		case int64:
			return sqltypes.Decimal(strconv.FormatInt(x, 10))
		}
	case typ == sqltypes.Float8 && !isFloat:
		switch x := v.(type) {
		case int64:
			return float64(x)
		case sqltypes.Decimal:
			g, _ := strconv.ParseFloat(string(x), 64)
			return g
		}
	case typ == sqltypes.Text:
		if _, isText := v.(string); !isText {
			return fmt.Sprint(v)
		}
	case typ == sqltypes.Bool:
		if _, isBool := v.(bool); !isBool {
			return nil
		}
	}
	return v
}

func typedNumber(v float64, typ sqltypes.Type, integer bool) any {
	switch typ {
	case sqltypes.Int8, sqltypes.Int4, sqltypes.Int2:
		return int64(math.Round(v))
	case sqltypes.Numeric:
		if integer {
			return sqltypes.Decimal(strconv.FormatFloat(math.Round(v), 'f', 0, 64))
		}
		return sqltypes.Decimal(strconv.FormatFloat(v, 'f', -1, 64))
	}
	return v
}

// typedKey converts a policy key to the Go value of its column type.
func typedKey(k string, t config.ColumnType) (any, error) {
	switch t {
	case config.TypeInt, config.TypeBigint:
		return strconv.ParseInt(k, 10, 64)
	case config.TypeFloat:
		return strconv.ParseFloat(k, 64)
	case config.TypeNumeric:
		if _, err := strconv.ParseFloat(k, 64); err != nil {
			return nil, err
		}
		return sqltypes.Decimal(k), nil
	case config.TypeBool:
		return strconv.ParseBool(k)
	case config.TypeDate:
		return time.Parse("2006-01-02", k)
	case config.TypeTimestamp:
		return time.Parse("2006-01-02 15:04:05", k)
	}
	return k, nil
}

// canonicalKey renders a key value exactly, tagged by kind, so that the
// backend's values and the policy's keys of the same column compare equal
// and different values never do (found in review: a float rendering merged
// large integers, and an untagged NULL matched a text key). Numbers are
// normalized decimal text (20, 20.0 and 20.000 are one key; -0 is 0).
func canonicalKey(v any, t config.ColumnType) string {
	switch x := v.(type) {
	case nil:
		return "N"
	case bool:
		return "b" + strconv.FormatBool(x)
	case int64:
		if t == config.TypeBool {
			return "b" + strconv.FormatBool(x != 0)
		}
		return "n" + strconv.FormatInt(x, 10)
	case float64:
		return "n" + decimalKey(strconv.FormatFloat(x, 'f', -1, 64))
	case sqltypes.Decimal:
		return "n" + decimalKey(string(x))
	case time.Time:
		if t == config.TypeDate {
			return "d" + x.Format("2006-01-02")
		}
		return "t" + x.Format("2006-01-02 15:04:05.999999999")
	case []byte:
		return canonicalKey(string(x), t)
	case string:
		// A backend may return a column as text when one of its values
		// does not fit the declared type (SQLite's dynamic types, a date
		// PostgreSQL or MariaDB cannot represent): each value is then read
		// by the declared type on its own, so that one person's odd value
		// cannot change how everyone else's are keyed (found in review).
		switch {
		case t.Numeric():
			if _, ok := new(big.Rat).SetString(strings.TrimSpace(x)); ok {
				return "n" + decimalKey(strings.TrimSpace(x))
			}
		case t == config.TypeBool:
			if b, ok := textBool(x); ok {
				return "b" + strconv.FormatBool(b)
			}
		case t == config.TypeDate || t == config.TypeTimestamp:
			for _, layout := range []string{"2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999", "2006-01-02T15:04:05.999999999Z07:00", "2006-01-02"} {
				if at, err := time.Parse(layout, strings.TrimSpace(x)); err == nil {
					return canonicalKey(at, t)
				}
			}
		}
		return "s" + x
	}
	return "?" + fmt.Sprint(v)
}

// textBool reads a boolean's text forms (PostgreSQL's t/f, SQLite's and
// MySQL's 1/0, true/false, yes/no, on/off).
func textBool(s string) (bool, bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "t", "true", "1", "y", "yes", "on":
		return true, true
	case "f", "false", "0", "n", "no", "off":
		return false, true
	}
	return false, false
}

// decimalKey normalizes a decimal number's text exactly (no rounding
// through float64); text that is not a number is kept as it is.
func decimalKey(s string) string {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return s
	}
	if r.IsInt() {
		return r.Num().String()
	}
	out := strings.TrimRight(r.FloatString(40), "0")
	return strings.TrimSuffix(out, ".")
}

// joinKeys joins the canonical keys of a group's columns, each prefixed
// by its length, so that no text inside a key can fake a separator.
func joinKeys(parts []string) string {
	var sb strings.Builder
	for _, p := range parts {
		sb.WriteString(strconv.Itoa(len(p)))
		sb.WriteByte(':')
		sb.WriteString(p)
	}
	return sb.String()
}

// orderRows sorts released rows by the ORDER BY keys (NULLs last).
func orderRows(rows [][]any, keys []rewrite.OrderKey) {
	if len(keys) == 0 {
		return
	}
	sort.SliceStable(rows, func(i, j int) bool {
		for _, k := range keys {
			c := compareValues(rows[i][k.Output], rows[j][k.Output])
			if c == 0 {
				continue
			}
			if k.Desc {
				return c > 0
			}
			return c < 0
		}
		return false
	})
}

func compareValues(a, b any) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return 1
	case b == nil:
		return -1
	}
	switch x := a.(type) {
	case string:
		if y, ok := b.(string); ok {
			return strings.Compare(x, y)
		}
	case time.Time:
		if y, ok := b.(time.Time); ok {
			return x.Compare(y)
		}
	case bool:
		if y, ok := b.(bool); ok {
			switch {
			case x == y:
				return 0
			case !x:
				return -1
			}
			return 1
		}
	}
	fa, fb := sqltypes.Float(a), sqltypes.Float(b)
	switch {
	case fa < fb:
		return -1
	case fa > fb:
		return 1
	}
	return 0
}
