package rewrite

import (
	"fmt"
	"math"

	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// AggFunc is an aggregate dpproxy can answer with differential privacy.
type AggFunc int

const (
	CountStar AggFunc = iota // COUNT(*)
	CountCol                 // COUNT(col): non-NULL values
	Sum                      // SUM(col), values clamped to the column's bounds
	Avg                      // AVG(col), normalized-sum form
)

func (f AggFunc) String() string {
	return [...]string{"COUNT(*)", "COUNT", "SUM", "AVG"}[f]
}

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
)

func (k MeasurementKind) String() string {
	return [...]string{"count", "sum", "centered sum"}[k]
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
	// CountColumn and SumColumn index the backend result columns the exact
	// value is computed from (SumColumn is -1 for counts).
	CountColumn int
	SumColumn   int
	// Mid is the centre of the bounds for MeasureCenteredSum.
	Mid float64
}

// Aggregate is one aggregate of the select list.
type Aggregate struct {
	Func   AggFunc
	Column *config.Column // nil for COUNT(*)
	// Measurements are indexes into Plan.Measurements.
	Measurements []int
	Bounds       config.Bounds
}

// GroupColumn is one GROUP BY column.
type GroupColumn struct {
	Column *config.Column
	// BackendColumn indexes the backend result column holding the key.
	BackendColumn int
	// Keys is the public key list the policy declares for the column.
	Keys []string
}

// OutputSource says where an output column's value comes from.
type OutputSource struct {
	Group     int // index into Plan.Groups, or -1
	Aggregate int // index into Plan.Aggregates, or -1
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
	Table        *config.ProtectedTable
	BackendSQL   string
	Groups       []GroupColumn
	Aggregates   []Aggregate
	Measurements []Measurement
	Output       []OutputColumn
	OrderBy      []OrderKey
	// Limit is the number of released rows to return (-1 = all).
	Limit int64
	// Epsilon and Delta are what the query costs.
	Epsilon float64
	Delta   float64
	// MaxGroupsPerUnit (L0) and MaxRowsPerUnit (Linf) as applied.
	MaxGroupsPerUnit int
	MaxRowsPerUnit   int
	Neighbouring     config.Neighbouring
	// UnitsColumn indexes the backend column counting distinct units per
	// group (-1 when the query has no GROUP BY).
	UnitsColumn int
}

// assignPrivacy computes each measurement's sensitivity and ε share.
// The query's ε is split equally across measurements: by basic
// composition the release is ε-DP.
func (p *Plan) assignPrivacy(epsilon float64) error {
	if len(p.Measurements) == 0 {
		return fmt.Errorf("no measurements")
	}
	l0 := float64(p.MaxGroupsPerUnit)
	linf := float64(p.MaxRowsPerUnit)
	if len(p.Groups) == 0 {
		l0 = 1 // one group: every unit contributes to it at most once
	}
	share := epsilon / float64(len(p.Measurements))
	for _, a := range p.Aggregates {
		for _, mi := range a.Measurements {
			m := &p.Measurements[mi]
			m.Epsilon = share
			switch m.Kind {
			case MeasureCount:
				m.Sensitivity = l0 * linf
			case MeasureSum:
				m.Sensitivity = l0 * linf * math.Max(math.Abs(a.Bounds.Lo), math.Abs(a.Bounds.Hi))
			case MeasureCenteredSum:
				m.Sensitivity = l0 * linf * (a.Bounds.Hi - a.Bounds.Lo) / 2
			}
			if p.Neighbouring == config.Replace {
				// Replacing a unit is removing it and adding another: by the
				// triangle inequality at most twice the add/remove sensitivity.
				m.Sensitivity *= 2
			}
			if m.Sensitivity == 0 {
				// Degenerate bounds (lo = hi = 0): the value carries no
				// information; keep a positive sensitivity so the
				// mechanism's parameters stay valid.
				m.Sensitivity = math.SmallestNonzeroFloat64
			}
			m.Integer = m.Kind == MeasureCount ||
				(m.Kind == MeasureSum && a.Column.Type.Integer() && isWhole(a.Bounds.Lo) && isWhole(a.Bounds.Hi))
		}
	}
	p.Epsilon = epsilon
	return nil
}

func isWhole(f float64) bool { return f == math.Trunc(f) && math.Abs(f) < 1<<53 }
