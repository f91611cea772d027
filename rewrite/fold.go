package rewrite

import (
	"fmt"
	"math"
	"math/big"
	"strings"

	"github.com/dpproxy/dpproxy/sqltypes"
)

// FoldGroups turns the backend rows of a plan that weights groups
// (WeightsGroups: one row per group and k, where k is the number of groups
// of the units the row sums) into one row per group, each value column
// being Σ_k min(1, L0/k)·value. The arithmetic is exact (big.Rat on the
// backend's exact values); the folded values are the nearest float64. The
// k column becomes nil. Rows of other plans are returned as they are.
//
// Weighting after the backend's sums gives every unit in k > L0 groups the
// weight L0/k in each of them exactly: its contributions over all groups
// add up to at most L0 groups' worth, with no rounding that could push
// them past it.
func (p *Plan) FoldGroups(rows [][]any) ([][]any, error) {
	if !p.WeightsGroups() || p.GroupCountColumn < 0 {
		return rows, nil
	}
	isGroup := make(map[int]bool, len(p.Groups))
	for _, g := range p.Groups {
		isGroup[g.BackendColumn] = true
	}
	// Excess columns carry their weights already (excess.go): summed as
	// they are.
	preweighted := map[int]bool{}
	for _, m := range p.Measurements {
		if m.Kind == MeasureExcess {
			preweighted[m.CountColumn] = true
		}
	}
	l0 := big.NewRat(int64(p.MaxGroupsPerUnit), 1)
	type folded struct {
		row  []any
		sums []*big.Rat // nil where every value was NULL
	}
	var order []string
	byKey := map[string]*folded{}
	for _, row := range rows {
		if len(row) <= p.GroupCountColumn {
			return nil, fmt.Errorf("fold groups: a row of %d columns, want at least %d", len(row), p.GroupCountColumn+1)
		}
		var kb strings.Builder
		for _, g := range p.Groups {
			fmt.Fprintf(&kb, "%T\x01%v\x00", row[g.BackendColumn], row[g.BackendColumn])
		}
		key := kb.String()
		f := byKey[key]
		if f == nil {
			f = &folded{row: append([]any(nil), row...), sums: make([]*big.Rat, len(row))}
			f.row[p.GroupCountColumn] = nil
			byKey[key] = f
			order = append(order, key)
		}
		k, err := exactRat(row[p.GroupCountColumn])
		if err != nil || k == nil || !k.IsInt() || k.Sign() <= 0 {
			return nil, fmt.Errorf("fold groups: group count %v is not a positive integer", row[p.GroupCountColumn])
		}
		w := big.NewRat(1, 1)
		if k.Cmp(l0) > 0 {
			w.Quo(l0, k)
		}
		for j, v := range row {
			if isGroup[j] || j == p.GroupCountColumn {
				continue
			}
			x, err := exactRat(v)
			if err != nil {
				return nil, fmt.Errorf("fold groups: column %d: %w", j, err)
			}
			if x == nil {
				continue
			}
			if !preweighted[j] {
				x.Mul(x, w)
			}
			if f.sums[j] == nil {
				f.sums[j] = x
			} else {
				f.sums[j].Add(f.sums[j], x)
			}
		}
	}
	out := make([][]any, 0, len(order))
	for _, key := range order {
		f := byKey[key]
		for j, s := range f.sums {
			if isGroup[j] || j == p.GroupCountColumn {
				continue
			}
			if s == nil {
				f.row[j] = nil
				continue
			}
			v, _ := s.Float64()
			f.row[j] = v
		}
		out = append(out, f.row)
	}
	return out, nil
}

// exactRat reads an exact backend number (nil for NULL).
func exactRat(v any) (*big.Rat, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case int64:
		return new(big.Rat).SetInt64(x), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("not a finite number: %v", x)
		}
		return new(big.Rat).SetFloat64(x), nil
	case sqltypes.Decimal:
		return parseRat(string(x))
	case []byte:
		return parseRat(string(x))
	case string:
		return parseRat(x)
	case fmt.Stringer:
		return parseRat(x.String())
	}
	return parseRat(fmt.Sprint(v))
}

func parseRat(s string) (*big.Rat, error) {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return nil, fmt.Errorf("not a number: %q", s)
	}
	return r, nil
}
