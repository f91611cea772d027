package rewrite

import (
	"math"
	"slices"
	"strings"

	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/sqlerr"
)

// The backend result columns of a DP plan.

// backendColumns allocates the backend result columns of a DP plan:
// group keys first, then the per-group row count, then a count and a sum
// per aggregated value column, then the distinct-unit count.
type backendColumns struct {
	groups   int
	rowCnt   int // -1 until needed
	values   []*valueColumn
	next     int
	assigned bool
	unitCol  int // -1 until needed
}

type valueColumn struct {
	col        *config.Column
	count, sum int
	sq         int // sum of squares, -1 until needed
}

func (b *backendColumns) alloc() int {
	if b.next < b.groups {
		b.next = b.groups
	}
	i := b.next
	b.next++
	return i
}

// isCount reports whether backend column i is a count: the rows' or a
// value column's.
func (b *backendColumns) isCount(i int) bool {
	if b.assigned && i == b.rowCnt {
		return true
	}
	return slices.ContainsFunc(b.values, func(v *valueColumn) bool { return v.count == i })
}

func (b *backendColumns) rowCount() int {
	if !b.assigned {
		b.assigned = true
		b.rowCnt = b.alloc()
	}
	return b.rowCnt
}

func (b *backendColumns) value(col *config.Column) *valueColumn {
	for _, v := range b.values {
		if v.col == col {
			return v
		}
	}
	v := &valueColumn{col: col, count: b.alloc(), sum: b.alloc(), sq: -1}
	b.values = append(b.values, v)
	return v
}

func (b *backendColumns) squares(v *valueColumn) {
	if v.sq < 0 {
		v.sq = b.alloc()
	}
}

// units is the column counting distinct units per group.
func (b *backendColumns) units() int {
	if b.unitCol < 0 {
		b.unitCol = b.alloc()
	}
	return b.unitCol
}

// finish allocates the units column when partition selection needs it,
// and the last column, k, when the plan weights groups.
func (b *backendColumns) finish(p *Plan) {
	if p.Selection != nil {
		b.units()
	}
	p.UnitsColumn = b.unitCol
	if p.WeightsGroups() {
		p.GroupCountColumn = b.alloc()
	}
}

// maxCentredOffset bounds |mid| / ((hi − lo)/2) for the variance family.
// Its centred squares are computed as Σx² − 2·mid·Σx + mid²·n in floating
// point: the cancellation error grows with mid²·n and must stay far below
// the sensitivity Linf·((hi − lo)/2)², or the released value would move
// with one person by more than the noise covers. At this ratio the error
// is below 2⁻⁷ of it for a billion values.
const maxCentredOffset = 256

// checkCentredPrecision refuses a variance over bounds too narrow for
// their distance from zero.
func checkCentredPrecision(fn string, col *config.Column, b config.Bounds) error {
	half := (b.Hi - b.Lo) / 2
	mid := (b.Lo + b.Hi) / 2
	if half > 0 && math.Abs(mid) > maxCentredOffset*half {
		return sqlerr.New(sqlerr.FeatureNotSupported, "%s(%s) is not supported: its bounds [%g, %g] are too narrow for their distance from zero to be computed exactly enough", strings.ToUpper(fn), col.Name, b.Lo, b.Hi).
			WithHint("AVG, SUM and COUNT of the column are answered; the policy author can widen the column's bounds to at most %d times their half-width away from zero", maxCentredOffset)
	}
	return nil
}
