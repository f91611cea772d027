package rewrite

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/dpproxy/dpproxy/sqltypes"
)

// A prepared statement executed again and again with other parameter
// values is the same case as a text with other numbers in it: its
// executions have one shape, whose slots are the parameters that hold
// integers, and one template when its analysis does not depend on them.

// ParamShape is the shape of one execution of a prepared statement: sql
// with parameter values (Go values as sqltypes lists them) of the declared
// types, markerParams numbering its markers' parameters as BindParams
// takes them (nil: marker i is parameter i+1). Its slots are the
// parameters whose value is an integer from 2 to 2^63−1: a Go int64, or
// the text of one for a parameter declared an integer type (BindParams
// binds both as the same integer constant). Its key is the text, each
// parameter's declared type and Go type, and the other parameters'
// values. ok is false when no parameter is a slot.
func ParamShape(sql string, markerParams []int, values []any, types []sqltypes.Type) (shape Shape, ok bool) {
	if len(sql) > maxShapeText {
		return Shape{}, false
	}
	typeOf := func(i int) sqltypes.Type {
		if i < len(types) {
			return types[i]
		}
		return sqltypes.Unknown
	}
	// The slots first: most executions with parameters have none, and
	// need no key.
	shape.paramClass = make([]int, len(values))
	for i, v := range values {
		n, slot := paramSlot(v, typeOf(i))
		if !slot {
			shape.paramClass[i] = -1
			continue
		}
		c := slices.Index(shape.Values, n)
		if c < 0 {
			c = len(shape.Values)
			shape.Values = append(shape.Values, n)
		}
		shape.paramClass[i] = c
	}
	markers := markerParams
	if markers == nil {
		for n := range values {
			markers = append(markers, n+1)
		}
	}
	for _, n := range markers {
		if n >= 1 && n <= len(values) && shape.paramClass[n-1] >= 0 {
			shape.slotClass = append(shape.slotClass, shape.paramClass[n-1])
		}
	}
	if len(shape.slotClass) == 0 || len(shape.slotClass) > maxSlots {
		return Shape{}, false
	}
	var key strings.Builder
	key.Grow(len(sql) + 16*len(values))
	key.WriteString("\x02")
	key.WriteString(sql)
	key.WriteByte(0)
	for i, v := range values {
		if c := shape.paramClass[i]; c >= 0 {
			fmt.Fprintf(&key, "s%d:%T:%d;", typeOf(i), v, c)
		} else {
			// Quoted: no value's text can pass for the next one's.
			fmt.Fprintf(&key, "v%d:%T:%q;", typeOf(i), v, fmt.Sprint(v))
		}
		if key.Len() > maxShapeText {
			return Shape{}, false // long values: not worth a template
		}
	}
	shape.Key = key.String()
	return shape, true
}

// paramSlot reads a parameter value that is a slot: an integer from
// minSlot to maxSlot that BindParams binds as an integer constant.
func paramSlot(v any, t sqltypes.Type) (int64, bool) {
	var n int64
	switch x := v.(type) {
	case int64:
		n = x
	case string:
		if t != sqltypes.Int2 && t != sqltypes.Int4 && t != sqltypes.Int8 {
			return 0, false
		}
		var err error
		if n, err = strconv.ParseInt(strings.TrimSpace(x), 10, 64); err != nil {
			return 0, false
		}
	default:
		return 0, false
	}
	return n, n >= minSlot && n <= maxSlot
}

// ProbeParams returns values with each slot parameter's value replaced by
// its class's in classValues (Shape.Probe), as an int64.
func (s *Shape) ProbeParams(values []any, classValues []int64) []any {
	out := slices.Clone(values)
	for i, c := range s.paramClass {
		if c >= 0 {
			out[i] = classValues[c]
		}
	}
	return out
}
