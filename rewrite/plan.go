package rewrite

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/mechanisms"
	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// AggFunc is an aggregate dpproxy can answer with differential privacy.
type AggFunc int

const (
	CountStar           AggFunc = iota // COUNT(*)
	CountCol                           // COUNT(col): non-NULL values
	Sum                                // SUM(col), values clamped to the column's bounds
	Avg                                // AVG(col), normalized-sum form
	CountDistinctUnit                  // COUNT(DISTINCT privacy_unit)
	VarPop                             // VAR_POP(col)
	VarSamp                            // VAR_SAMP(col), VARIANCE(col)
	StddevPop                          // STDDEV_POP(col)
	StddevSamp                         // STDDEV_SAMP(col), STDDEV(col)
	QuantileAgg                        // MEDIAN, percentile_cont/disc, MIN, MAX (quantile.go)
	CountDistinctValues                // COUNT(DISTINCT col), col not the unit (distinct.go)
)

func (f AggFunc) String() string {
	return [...]string{"COUNT(*)", "COUNT", "SUM", "AVG", "COUNT(DISTINCT)", "VAR_POP", "VAR_SAMP", "STDDEV_POP", "STDDEV_SAMP", "QUANTILE", "COUNT(DISTINCT)"}[f]
}

// IsVariance reports whether f is one of the variance family.
func (f AggFunc) IsVariance() bool { return f >= VarPop && f <= StddevSamp }

// MeasurementKind is what one noisy measurement estimates.
type MeasurementKind int

const (
	// MeasureCount is a count of rows (or non-NULL values): integer noise.
	MeasureCount MeasurementKind = iota
	// MeasureSum is a sum of clamped values.
	MeasureSum
	// MeasureCenteredSum is Σ(x − mid) over clamped values, mid the centre
	// of the bounds: the numerator of the normalized AVG.
	MeasureCenteredSum
	// MeasureCenteredSquares is Σ(x − mid)² over clamped values, for the
	// variance family.
	MeasureCenteredSquares
	// MeasureUnits counts distinct privacy units.
	MeasureUnits
	// MeasureDistinctValues counts the distinct values of a column
	// (distinct.go), computed by a side query.
	MeasureDistinctValues
	// MeasureExcess is what bounding removed from another measurement,
	// each unit's part clipped (excess.go).
	MeasureExcess
)

func (k MeasurementKind) String() string {
	return [...]string{"count", "sum", "centered sum", "centered squares", "distinct units", "distinct values", "excess"}[k]
}

// Measurement is one noisy quantity released per group. Its sensitivity is
// the L1 sensitivity of the whole vector of this quantity over all groups,
// so noise of scale Sensitivity/Epsilon in every group is Epsilon-DP in total.
type Measurement struct {
	Kind MeasurementKind
	// Integer is true when the quantity and its sensitivity are whole
	// numbers, so integer (discrete Laplace) noise applies.
	Integer     bool
	Sensitivity float64
	Epsilon     float64
	// Gaussian selects the Gaussian mechanism, calibrated to L2 (the L2
	// sensitivity over all groups) at (Epsilon, Delta); otherwise Laplace
	// noise calibrated to Sensitivity (L1) at Epsilon.
	Gaussian bool
	L2       float64
	Delta    float64
	// CountColumn, SumColumn and SquaresColumn index the backend result
	// columns the exact value is computed from (-1 when not used).
	CountColumn   int
	SumColumn     int
	SquaresColumn int
	// Mid is the centre of the bounds for MeasureCenteredSum.
	Mid float64
	// SideQuery, when not 0, is 1 + the index into Plan.SideQueries of
	// the query whose value for the group is the exact value (the
	// column indexes above are then unused).
	SideQuery int
	// Excess, when not 0, is 1 + the index of this measurement's excess
	// companion (excess.go).
	Excess int
	// Of and Clip are set on an excess companion: the index of the
	// measurement whose excess it is, and the per-unit clip M.
	Of   int
	Clip float64
}

// Value is the measurement's exact value for one group, computed from the
// group's backend row (nil for a group without rows: zero).
func (m Measurement) Value(row []any) float64 {
	if row == nil {
		return 0
	}
	count, sum, squares := sqltypes.Float(row[m.CountColumn]), 0.0, 0.0
	if m.SumColumn >= 0 {
		sum = sqltypes.Float(row[m.SumColumn])
	}
	if m.SquaresColumn >= 0 {
		squares = sqltypes.Float(row[m.SquaresColumn])
	}
	switch m.Kind {
	case MeasureSum:
		return sum
	case MeasureCenteredSum:
		return sum - m.Mid*count
	case MeasureCenteredSquares:
		// Σ(x − mid)² = Σx² − 2·mid·Σx + mid²·n
		return squares - 2*m.Mid*sum + m.Mid*m.Mid*count
	}
	return count // MeasureCount, MeasureUnits
}

// Aggregate is one aggregate of the select list.
type Aggregate struct {
	Func   AggFunc
	Column *config.Column // nil for COUNT(*)
	// Measurements are indexes into Plan.Measurements.
	Measurements []int
	Bounds       config.Bounds
	// Type is the aggregate's result type.
	Type sqltypes.Type
	// Quantile indexes Plan.Quantiles when Func is QuantileAgg.
	Quantile int
}

// GroupColumn is one GROUP BY column, or a time bucket of one
// (date_trunc, EXTRACT).
type GroupColumn struct {
	Column *config.Column
	// Bucket is set when the group is date_trunc(unit, column) or
	// EXTRACT(unit FROM column); nil for the plain column.
	Bucket *TimeBucket
	// Type is the key's result type.
	Type sqltypes.Type
	// BackendColumn indexes the backend result column holding the key.
	BackendColumn int
	// Keys is the public key list the policy declares for the column.
	Keys []string
	// SQL, when set, is the key's expression: GROUP BY CASE with
	// constant results (casegroup.go), whose results are the Keys, or
	// numeric bins (numericbin.go).
	SQL string
	// Source is the table column a numeric bin is computed from (nil
	// otherwise; Column then describes the key).
	Source *config.Column
}

// TimeBucket is a function of a date or timestamp column that cannot fail
// on any value: date_trunc to a unit, or EXTRACT of a field.
type TimeBucket struct {
	Func string // "date_trunc" or "extract"
	Unit string // lower case: year, quarter, month, week, day, hour; dow for extract
}

func (b *TimeBucket) String() string {
	if b.Func == "extract" {
		return "EXTRACT(" + strings.ToUpper(b.Unit) + ")"
	}
	return "date_trunc('" + b.Unit + "')"
}

// Name is how a group is shown by explain.
func (g GroupColumn) Name() string {
	if g.SQL != "" {
		return g.SQL
	}
	if g.Bucket == nil {
		return g.Column.Name
	}
	if g.Bucket.Func == "extract" {
		return "EXTRACT(" + strings.ToUpper(g.Bucket.Unit) + " FROM " + g.Column.Name + ")"
	}
	return "date_trunc('" + g.Bucket.Unit + "', " + g.Column.Name + ")"
}

// OutputSource says where an output column's value comes from.
type OutputSource struct {
	Group     int // index into Plan.Groups, or -1
	Aggregate int // index into Plan.Aggregates, or -1
	// Derived, when set (Group and Aggregate -1), computes the column
	// from the released row (post.go).
	Derived *Derived
}

// OutputColumn is one column returned to the client.
type OutputColumn struct {
	Name   string
	Type   sqltypes.Type
	Source OutputSource
}

// OrderKey orders released rows (post-processing on noisy values).
type OrderKey struct {
	Output int // index into Plan.Output
	Desc   bool
}

// Plan is a query ready to run: backend SQL plus everything needed to turn
// its exact, bounded result into a DP release.
type Plan struct {
	Table *config.ProtectedTable
	// OneRowPerUnit is set when each unit is one row of what the query
	// reads: the table protects rows (privacy_unit: row), or its unit is
	// its primary key (config.ProtectedTable.UnitIsKey) and the query
	// joins nothing to it. L0 = Linf = 1 then hold by construction, and
	// the backend SQL has no per-unit step.
	OneRowPerUnit bool

	BackendSQL string
	// Bound, when set, is BackendSQL with the query's constants as
	// parameters (Options.BindConstants, constants.go): what the engine
	// sends to PostgreSQL, one statement for every query that differs
	// only in its constants.
	Bound        *BoundSQL
	Groups       []GroupColumn
	Aggregates   []Aggregate
	Measurements []Measurement
	// Histograms and Quantiles are the DP quantiles (quantile.go): each
	// histogram is one more backend query.
	Histograms []Histogram
	Quantiles  []Quantile
	// SideQueries compute measurements the bounding query cannot
	// (distinct values of a column, distinct.go): one row per group, the
	// group keys then the value.
	SideQueries []string
	Output      []OutputColumn
	OrderBy     []OrderKey
	// Limit is the number of released rows to return (-1 = all).
	Limit int64
	// Epsilon and Delta are what the query costs.
	Epsilon float64
	Delta   float64
	// MaxGroupsPerUnit (L0) and MaxRowsPerUnit (Linf) as applied.
	MaxGroupsPerUnit int
	MaxRowsPerUnit   int
	// MaxTotalRowsPerUnit (C, 0 for none) bounds a unit's rows over all
	// groups (see TotalCapped).
	MaxTotalRowsPerUnit int
	Neighbouring        config.Neighbouring
	// UnitsColumn indexes the backend column counting distinct units per
	// group (-1 when no measurement or selection needs it).
	UnitsColumn int
	// GroupCountColumn indexes the backend column holding k, the number of
	// groups of the units a row sums, when the plan weights groups
	// (WeightsGroups; -1 otherwise). FoldGroups combines such rows.
	GroupCountColumn int
	// Mechanism is the policy's choice of noise (config.Mechanism*).
	Mechanism config.Mechanism
	// Selection is set when GROUP BY keys come from the data and must pass
	// DP partition selection; nil when every group column has a public key
	// list (or there is no GROUP BY).
	Selection *PartitionSelection
	// Outer is set when the DP query is a derived table wrapped by an outer
	// SELECT (BI tools' nested questions): the outer query only picks,
	// renames, orders and limits the released rows — post-processing.
	Outer *OuterQuery
	// Having, when set, keeps only the released rows for which it is
	// true (post-processing, post.go).
	Having *Derived
	// Bias, when set, is the bias report released with the answer
	// (bias.go); its ε is part of Epsilon.
	Bias *BiasReport
	// Auto, when set, is a pending choice of Linf (autobound.go): the plan
	// is provisional (Linf = 1) until Auto.Rebind.
	Auto *AutoBound
	// Joins are the public tables joined to the protected one (join.go).
	Joins []Join
	// UnitJoins are the joins that reach the privacy unit through the
	// keys of the table's unit path (config.UnitHops), in order.
	UnitJoins []UnitJoin
	// Filter is the WHERE condition as the backend SQL writes it ("" for
	// none).
	Filter string
	// R2T, when set, answers the plan by R2T (r2t.go): its one query and
	// mechanism replace the bounding query and the measurements.
	R2T *R2TRelease
	// RR, when set, makes the plan a randomized-response release of
	// records (rr.go): no measurement, BackendSQL reads the records.
	RR *RRRelease
}

// ReadTables lists the protected tables the plan reads, by name: its
// table, the protected tables it joins and those its unit joins reach
// (for table budgets).
func (p *Plan) ReadTables() []string {
	tables := []string{p.Table.Name}
	name := func(qualified string) string { return qualified[strings.LastIndexByte(qualified, '.')+1:] }
	for _, j := range p.Joins {
		if j.Protected {
			tables = append(tables, name(j.Table))
		}
	}
	for _, u := range p.UnitJoins {
		tables = append(tables, name(u.Table))
	}
	slices.Sort(tables)
	return slices.Compact(tables)
}

// UnitJoin is one join to a table's privacy unit through a key.
type UnitJoin struct {
	Table string // schema-qualified when the policy gives a schema
	Alias string
	// Key is the table's primary key the previous unit column equals;
	// Unit is the table's own unit column, the next step.
	Key, Unit string
	// ByQuery is set when the query's own join along the key serves.
	ByQuery bool
}

// Join is a public table joined to a plan's protected table, before
// contribution bounding.
type Join struct {
	Table string // schema-qualified when the policy gives a schema
	Alias string
	Left  bool // LEFT JOIN; inner otherwise
	// Protected is set for a protected table, joined on the privacy unit.
	Protected bool
}

// OuterQuery is a SELECT over the released rows of a DP query.
type OuterQuery struct {
	// Columns pick the inner query's output columns, renamed.
	Columns []OuterColumn
	// OrderBy indexes Columns.
	OrderBy []OrderKey
	// Limit (-1 = all) and Offset apply after OrderBy.
	Limit, Offset int64
}

// OuterColumn is one column of an OuterQuery.
type OuterColumn struct {
	Inner int // index into Plan.Output
	Name  string
}

// Columns returns the columns the client receives.
func (p *Plan) Columns() []OutputColumn {
	if p.Outer == nil {
		return p.Output
	}
	out := make([]OutputColumn, len(p.Outer.Columns))
	for i, c := range p.Outer.Columns {
		out[i] = p.Output[c.Inner]
		out[i].Name = c.Name
	}
	return out
}

// PartitionSelection is the DP test a group's key must pass to be
// released: keep the group with probability π(n), n the number of distinct
// units in it (Desfontaines et al. 2022), at (Epsilon, Delta) in total.
//
// ChangedGroups is the most groups whose number of units can differ
// between neighbouring databases, each by one: L0 under add/remove
// neighbours (the unit's groups), 2·L0 under replace neighbours (the unit
// leaves up to L0 groups and joins up to L0 others). Each group's test runs
// at (Epsilon/ChangedGroups, Delta/ChangedGroups), so that the tests of the
// groups one change touches compose to (Epsilon, Delta).
//
// When the query counts rows or units per group with Laplace noise,
// Threshold is set instead and the selection spends no ε of its own: a
// group is released when that noisy count exceeds a threshold (see
// CountThreshold). Epsilon is then 0; Delta is still spent.
type PartitionSelection struct {
	Epsilon       float64
	Delta         float64
	ChangedGroups int
	Threshold     *CountThreshold
	// TopK, when set, replaces the test: DP top-k picks the released
	// groups (topk.go). Epsilon is then 0; Delta is spent by top-k.
	TopK *TopK
}

// CountThreshold releases a group when its noisy count — the released
// value of a count measurement, not a separate draw — exceeds Tau
// (Laplace thresholding: Korolova et al. 2009, Wilson et al. 2020, as
// Google's DP SQL and others do).
//
// Privacy: the noisy counts of every group are one Laplace release of
// the measurement (ε-DP over the changed groups, as any measurement), and
// keeping the groups above Tau is post-processing of it for the groups
// both neighbours have. A group that exists only because of the one unit
// that differs has a count of at most MaxAlone (Linf rows, or 1 unit) and
// is released with probability at most Delta/L0 (the unit has at most L0
// groups of its own: its groups under add/remove, those it leaves or
// joins under replace), so with probability ≤ Delta in all: (ε, δ)-DP.
type CountThreshold struct {
	Measurement int // index into Plan.Measurements
	MaxAlone    int64
	Tau         float64
}

// assignPrivacy computes each measurement's sensitivity and ε share, and
// the partition selection's share. The query's ε is split equally across
// the measurements and the selection (basic composition); the selection
// alone spends δ.
func (p *Plan) assignPrivacy(epsilon, delta float64) error {
	if len(p.Measurements) == 0 && len(p.Quantiles) == 0 && p.Selection == nil {
		return fmt.Errorf("no measurements")
	}
	// δ is shared by the selection and the Gaussian measurements (basic
	// composition); each Gaussian measurement is calibrated to a share as
	// if every measurement were Gaussian, so the total stays within δ.
	gaussianOK := delta > 0 && p.Mechanism != config.MechanismLaplace && p.Mechanism != ""
	deltaShare := delta
	if gaussianOK {
		deltaParts := len(p.Measurements)
		if p.Selection != nil {
			deltaParts++
		}
		deltaShare = delta / float64(deltaParts)
	}
	parts := len(p.Measurements) + len(p.Quantiles)
	threshold := -1
	if p.Selection != nil && p.Selection.TopK == nil && p.Mechanism != config.MechanismGaussian {
		threshold = p.thresholdMeasurement(epsilon, deltaShare)
	}
	if p.Selection != nil && threshold < 0 {
		parts++
	}
	share := epsilon / float64(parts)
	if p.Selection != nil {
		p.Selection.Epsilon = share
		p.Selection.Delta = deltaShare
		p.Selection.ChangedGroups = p.changedGroups()
		p.Delta = delta
		if p.Selection.TopK != nil {
			p.Selection.Epsilon = 0
			p.assignTopK(share, deltaShare)
		}
	}
	p.assignQuantiles(share)
	weighted := p.WeightsGroups()
	for _, a := range p.Aggregates {
		for _, mi := range a.Measurements {
			m := &p.Measurements[mi]
			m.Epsilon = share
			m.Sensitivity = p.sensitivity(m.Kind, a.Bounds)
			// A zero sensitivity (degenerate bounds, lo = hi) means the
			// value is the same on every database: it is released as is.
			// Sums are whole only under row privacy: elsewhere a unit's sum
			// in a group is scaled to Linf values (see the emitter) and may
			// be fractional, and rounding the total could move it by more
			// than the sensitivity.
			// Counts are whole unless a unit's contributions are weighted
			// over its groups (public key lists, see the emitter).
			m.Integer = m.Kind == MeasureDistinctValues || !weighted && !p.TotalCapped() && (m.Kind == MeasureCount || m.Kind == MeasureUnits ||
				(m.Kind == MeasureSum && p.OneRowPerUnit && a.Column.Type.Integer() && isWhole(a.Bounds.Lo) && isWhole(a.Bounds.Hi)))
			if gaussianOK && m.Sensitivity > 0 && mi != threshold {
				m.L2 = p.l2Sensitivity(m.Kind, a.Bounds)
				m.Gaussian = p.Mechanism == config.MechanismGaussian || gaussianWins(share, deltaShare, m.Sensitivity, m.L2)
				if m.Gaussian {
					m.Delta = deltaShare
					p.Delta = delta
				}
			}
		}
	}
	p.Epsilon = epsilon
	if threshold >= 0 {
		return p.assignThreshold(threshold, deltaShare)
	}
	return nil
}

// checkMechanismEpsilons refuses, before anything runs, a plan whose
// split leaves one of its mechanisms an ε below what the samplers accept
// (found in review: the mechanism's error came only after the data was
// read, and was charged).
func (p *Plan) checkMechanismEpsilons() error {
	least := math.Inf(1)
	for _, m := range p.Measurements {
		if m.Sensitivity > 0 {
			least = math.Min(least, m.Epsilon)
		}
	}
	for _, q := range p.Quantiles {
		least = math.Min(least, q.MechanismEpsilon/float64(q.ChangedGroups))
	}
	if s := p.Selection; s != nil {
		switch {
		case s.TopK != nil:
			least = math.Min(least, s.TopK.PickEpsilon)
		case s.Threshold == nil:
			least = math.Min(least, s.Epsilon/float64(s.ChangedGroups))
		}
	}
	if p.Bias != nil {
		least = math.Min(least, p.Bias.Epsilon)
	}
	if p.Auto != nil {
		least = math.Min(least, p.Auto.Epsilon)
	}
	if least < mechanisms.MinEpsilon {
		return sqlerr.New(sqlerr.PrivacyParameterError, "ε = %g is too small for this query: split over its measurements, groups and picks, one mechanism would get %.3g, below the smallest the noise mechanisms accept (%g)", p.Epsilon, least, mechanisms.MinEpsilon).
			WithHint("raise dpproxy.epsilon, or ask for fewer aggregates, a smaller LIMIT or fewer groups per person")
	}
	return nil
}

// thresholdMeasurement picks the count partition selection can threshold
// (CountThreshold) — a count of distinct units (a lone unit's group has 1)
// or else of rows (at most Linf), from the bounding query — when that
// releases groups at least as readily as a separate optimal selection
// would; -1 otherwise. The comparison is data-independent: the number of
// units at which a group is released with probability ½, counting one
// row per unit for a row count (the least a unit contributes: with more
// rows per unit, thresholding does better still).
func (p *Plan) thresholdMeasurement(epsilon, deltaShare float64) int {
	pick := -1
	for i, m := range p.Measurements {
		switch {
		case m.SideQuery != 0:
		case m.Kind == MeasureUnits:
			pick = i
		case m.Kind == MeasureCount && pick < 0 && !p.TotalCapped():
			pick = i
		}
		if pick >= 0 && p.Measurements[pick].Kind == MeasureUnits {
			break
		}
	}
	if pick < 0 {
		return -1
	}
	parts := float64(len(p.Measurements) + len(p.Quantiles))
	m := p.Measurements[pick]
	alone := int64(p.MaxRowsPerUnit)
	if m.Kind == MeasureUnits {
		alone = 1
	}
	lap, err := mechanisms.NewLaplace(epsilon/parts, p.sensitivity(m.Kind, config.Bounds{}))
	if err != nil {
		return -1
	}
	tau, err := lap.IntThreshold(alone, deltaShare/float64(p.MaxGroupsPerUnit))
	if err != nil {
		return -1
	}
	changed := p.changedGroups()
	separate, err := mechanisms.NewOptimalSelection(epsilon/(parts+1), deltaShare, changed)
	if err != nil || tau <= separate.Threshold() {
		return pick
	}
	return -1
}

// assignThreshold calibrates CountThreshold on measurement mi, whose
// sensitivity and ε are set: the selection spends δ (deltaShare when
// Gaussian measurements share δ), no ε of its own.
func (p *Plan) assignThreshold(mi int, deltaShare float64) error {
	m := p.Measurements[mi]
	alone := int64(p.MaxRowsPerUnit)
	if m.Kind == MeasureUnits {
		alone = 1
	}
	lap, err := mechanisms.NewLaplace(m.Epsilon, m.Sensitivity)
	if err != nil {
		return err
	}
	tau, err := lap.IntThreshold(alone, deltaShare/float64(p.MaxGroupsPerUnit))
	if err != nil {
		return err
	}
	p.Selection.Epsilon = 0
	p.Selection.Threshold = &CountThreshold{Measurement: mi, MaxAlone: alone, Tau: tau}
	return nil
}

// l2Sensitivity is the L2 sensitivity of one measurement over all groups,
// for the Gaussian mechanism. A unit's contributions form a vector with at
// most L0 non-zero coordinates, each of magnitude at most m (weights over
// public keys only shrink it: k coordinates of L0/k give L0/√k ≤ √L0), so
// its norm is at most √L0·m; adding or removing the unit moves the vector
// of group values by that, replacing it by at most twice that (the triangle
// inequality). Without GROUP BY there is one coordinate, as for L1.
func (p *Plan) l2Sensitivity(kind MeasurementKind, b config.Bounds) float64 {
	magnitude, width := p.contribution(kind, b)
	groups := float64(p.MaxGroupsPerUnit)
	if rowBased(kind) && p.TotalCapped() {
		groups = p.unitGroups() * (1 + totalCapSlack)
	}
	switch {
	case len(p.Groups) > 0 && p.Neighbouring == config.Replace:
		return 2 * math.Sqrt(groups) * magnitude
	case len(p.Groups) > 0:
		return math.Sqrt(groups) * magnitude
	case p.Neighbouring == config.Replace:
		return width
	}
	return magnitude
}

// gaussianWins reports whether the Gaussian mechanism at (ε, δ) with L2
// sensitivity l2 has a smaller 95 % error bound than Laplace at ε with L1
// sensitivity l1 (policy mechanism: auto).
func gaussianWins(epsilon, delta, l1, l2 float64) bool {
	sigma, err := mechanisms.AnalyticGaussianSigma(epsilon, delta, l2)
	if err != nil {
		return false
	}
	return 1.96*sigma < math.Log(20)*l1/epsilon
}

// sensitivity is the L1 sensitivity of one measurement over all groups:
// the most the vector of its per-group values can move, summed over the
// groups, between neighbouring databases (derivation in the package
// documentation, "Privacy of a plan").
//
// One unit's contribution to one group's value lies in a range given by
// the bounds (see contribution). With GROUP BY, a neighbouring change
// alters at most changedGroups groups (L0 under add/remove, 2·L0 under
// replace), each by at most the contribution's largest magnitude: a group
// the unit stays in under replace moves by at most twice that and uses two
// of the 2·L0. Without GROUP BY there is one group: under add/remove it
// moves by the contribution's magnitude, under replace by the width of its
// range (the unit's old contribution swapped for its new one).
func (p *Plan) sensitivity(kind MeasurementKind, b config.Bounds) float64 {
	magnitude, width := p.contribution(kind, b)
	if len(p.Groups) > 0 && p.Selection != nil && p.Selection.TopK != nil {
		// Only the k picked groups are measured: at most k of them move,
		// each by the magnitude (add/remove) or at most the width of its
		// range (replace: a group the unit stays in).
		perGroup := magnitude
		if p.Neighbouring == config.Replace {
			perGroup = math.Max(width, magnitude)
		}
		return math.Min(p.groupedSensitivity(kind, magnitude), float64(p.Selection.TopK.K)*perGroup)
	}
	switch {
	case len(p.Groups) > 0:
		return p.groupedSensitivity(kind, magnitude)
	case p.Neighbouring == config.Replace:
		return width
	}
	return magnitude
}

// groupedSensitivity is the L1 sensitivity over all groups of a grouped
// plan.
func (p *Plan) groupedSensitivity(kind MeasurementKind, magnitude float64) float64 {
	switch {
	case rowBased(kind) && p.TotalCapped():
		// A unit's weighted rows in all its groups add up to at most C:
		// C/Linf groups' worth, twice under replace (out and in).
		factor := 1.0
		if p.Neighbouring == config.Replace {
			factor = 2
		}
		return factor * p.unitGroups() * magnitude * (1 + totalCapSlack)
	}
	return float64(p.changedGroups()) * magnitude
}

// totalCapSlack covers the backend's rounding of the weights C/T, computed
// per (unit, group) in decimal or floating arithmetic: summed over a
// unit's groups they can exceed C by a few units in the last place (found
// in review: 3 × 2/3 = 2.00000000000000000001 on PostgreSQL).
const totalCapSlack = 1e-9

// contribution returns the largest magnitude of one unit's contribution to
// one group's value of a measurement, and the width of the range that
// contribution lies in. A unit contributes c ≤ Linf rows to a group (its
// count is capped at Linf and a larger sum is scaled to Linf values), each
// value clamped to [lo, hi]; with public key lists its contributions are
// further weighted by min(1, L0/k) ≤ 1, which only shrinks them.
//
//	count:            [0, Linf]                           magnitude Linf
//	distinct units:   [0, 1]                              magnitude 1
//	sum:              [Linf·min(0, lo), Linf·max(0, hi)]  magnitude Linf·max(|lo|, |hi|)
//	centred sum:      [−Linf·h, Linf·h], h = (hi−lo)/2    magnitude Linf·h
//	centred squares:  [0, Linf·h²]                        magnitude Linf·h²
func (p *Plan) contribution(kind MeasurementKind, b config.Bounds) (magnitude, width float64) {
	linf := float64(p.MaxRowsPerUnit)
	half := (b.Hi - b.Lo) / 2
	switch kind {
	case MeasureCount:
		return linf, linf
	case MeasureUnits:
		return 1, 1
	case MeasureDistinctValues:
		// A unit keeps at most Linf distinct values per group: the group's
		// number of distinct values moves by at most Linf (values only it
		// has) when it comes or goes, and within [−Linf, Linf] when its
		// values change.
		return linf, linf
	case MeasureSum:
		lo, hi := linf*math.Min(0, b.Lo), linf*math.Max(0, b.Hi)
		return math.Max(-lo, hi), hi - lo
	case MeasureCenteredSum:
		return linf * half, 2 * linf * half
	case MeasureCenteredSquares:
		return linf * half * half, linf * half * half
	}
	panic(fmt.Sprintf("rewrite: no contribution bound for measurement kind %v", kind))
}

// changedGroups is the most groups whose values one neighbouring change
// can alter in a grouped plan: the unit's L0 groups under add/remove, and
// under replace the L0 it leaves plus the L0 it joins.
func (p *Plan) changedGroups() int {
	if p.Neighbouring == config.Replace {
		return 2 * p.MaxGroupsPerUnit
	}
	return p.MaxGroupsPerUnit
}

// WeightsGroups reports whether each unit's contributions are weighted
// over its groups by min(1, L0/k) instead of kept in L0 random groups:
// GROUP BY over public key lists on a table with unit privacy, unless the
// total bound applies (TotalCapped).
func (p *Plan) WeightsGroups() bool {
	return len(p.Groups) > 0 && p.Selection == nil && !p.OneRowPerUnit && !p.TotalCapped()
}

// TotalCapped reports whether each unit's rows are weighted by min(1, C/T),
// T its rows over all its groups after the per-group bound Linf, C the
// table's max_total_rows_per_unit: in grouped plans with unit privacy
// where C < L0·Linf, so that the bound is tighter than L0 groups' worth.
// With public key lists the total bound replaces L0 (no weighting by
// groups), unless the plan counts units (weighted by L0/k); with
// partition selection a unit first keeps L0 random groups, and counts of
// units in them need no weights.
func (p *Plan) TotalCapped() bool {
	if p.MaxTotalRowsPerUnit <= 0 || len(p.Groups) == 0 || p.OneRowPerUnit ||
		p.MaxTotalRowsPerUnit >= p.MaxGroupsPerUnit*p.MaxRowsPerUnit {
		return false
	}
	if p.Selection != nil {
		return true // units counts are over the L0 groups kept
	}
	for _, m := range p.Measurements {
		if m.Kind == MeasureUnits {
			return false // weighted by L0/k, which would not compose with C/T
		}
	}
	return true
}

// unitGroups is the most groups' worth of Linf rows one unit contributes
// in all: L0, or C/Linf when the total bound applies (TotalCapped).
func (p *Plan) unitGroups() float64 {
	if p.TotalCapped() {
		return float64(p.MaxTotalRowsPerUnit) / float64(p.MaxRowsPerUnit)
	}
	return float64(p.MaxGroupsPerUnit)
}

// rowBased reports whether a measurement sums over a unit's bounded rows
// (and so falls under the total bound), rather than counting units or
// coming from its own bounding (side queries).
func rowBased(kind MeasurementKind) bool {
	return kind != MeasureUnits && kind != MeasureDistinctValues
}

func isWhole(f float64) bool { return f == math.Trunc(f) && math.Abs(f) < 1<<53 }
