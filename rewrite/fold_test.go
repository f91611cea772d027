package rewrite

import (
	"reflect"
	"strings"
	"testing"

	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/sqltypes"
)

func TestFoldGroups(t *testing.T) {
	// Columns: group key, a count, a sum, k. L0 = 2.
	p := &Plan{
		Table:            &config.ProtectedTable{Name: "t", PrivacyUnit: "u"},
		Groups:           []GroupColumn{{BackendColumn: 0}},
		MaxGroupsPerUnit: 2,
		GroupCountColumn: 3,
		UnitsColumn:      -1,
	}
	rows := [][]any{
		{"A", int64(4), sqltypes.Decimal("10.5"), int64(1)}, // weight 1
		{"A", int64(3), []byte("3.3"), int64(3)},            // weight 2/3
		{"B", int64(7), nil, int64(7)},                      // weight 2/7, NULL sum
		{nil, int64(2), 1.5, int64(2)},                      // NULL key, weight 1
		{"A", int64(1), sqltypes.Decimal("0.3"), int64(2)},  // weight 1
	}
	got, err := p.FoldGroups(rows)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]any{
		{"A", 4 + 2.0 + 1, 10.5 + 2.2 + 0.3, nil},
		{"B", 2.0, nil, nil},
		{nil, 2.0, 1.5, nil},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("folded\n%#v\nwant\n%#v", got, want)
	}

	// The weights are exact: 14 rows of one unit in 14 groups with L0 = 3
	// add up to exactly 3.
	p.MaxGroupsPerUnit = 3
	var many [][]any
	for g := range 14 {
		many = append(many, []any{string(rune('a' + g)), int64(1), sqltypes.Decimal("1"), int64(14)})
	}
	got, err = p.FoldGroups(many)
	if err != nil || len(got) != 14 || got[0][1] != 3.0/14 {
		t.Fatalf("14 groups: %v %v", got, err)
	}

	for _, bad := range []any{int64(0), int64(-1), 1.5, "x", nil} {
		if _, err := p.FoldGroups([][]any{{"A", int64(1), int64(1), bad}}); err == nil || !strings.Contains(err.Error(), "group count") {
			t.Errorf("k = %#v: err %v, want a group count error", bad, err)
		}
	}
	if _, err := p.FoldGroups([][]any{{"A", "NaN", int64(1), int64(1)}}); err == nil {
		t.Error("a NaN value folded without error")
	}

	// Plans that do not weight groups pass rows through.
	p.Selection = &PartitionSelection{}
	if got, err := p.FoldGroups(rows); err != nil || !reflect.DeepEqual(got, rows) {
		t.Errorf("partition selection plan: %v %v", got, err)
	}
}

func TestFoldGroupsShortRow(t *testing.T) {
	p := &Plan{Table: &config.ProtectedTable{PrivacyUnit: "u"}, Groups: []GroupColumn{{BackendColumn: 0}},
		MaxGroupsPerUnit: 2, GroupCountColumn: 2, UnitsColumn: -1}
	if _, err := p.FoldGroups([][]any{{"A", int64(1)}}); err == nil {
		t.Error("a row without the group count column folded")
	}
}
