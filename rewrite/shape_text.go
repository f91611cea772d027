package rewrite

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// A service that looks up one unit's figures sends the same query again and
// again with another number in it (WHERE patient_id = 42, then 43, ...).
// Each text is new, so the plan memo keyed by text misses, and parsing and
// analysis are most of such a query's cost in dpproxy. A Shape is such a
// text with its filter constants taken out; a Template (template.go) is the
// analysis of a shape, made once and then given each text's constants.

// Shape is a PostgreSQL query text with its slots taken out: the integer
// constants that a WHERE condition compares a column with (col = 42,
// col < 42, col BETWEEN 2 AND 9, col IN (3, 4)). Only constants from 2 to
// 2^63−1, written as plain digits, are slots: 0 and 1 may be read as
// booleans, and a larger constant is no bigint.
type Shape struct {
	// Key identifies the shape: the text with each slot's digits replaced
	// by a NUL (no query text holds one), then which slots have equal
	// values (equal constants share one marker in a plan).
	Key string
	// Values are the values of the shape's classes: slots with equal
	// values are one class, numbered in the order they first appear.
	Values []int64
	// slotClass is the class of each slot, in text order.
	slotClass []int
	// pieces are the text around the slots: len(slotClass)+1 of them (a
	// text's shape only).
	pieces []string
	// paramClass is each parameter's class, -1 for one that is no slot
	// (an execution's shape only, ParamShape).
	paramClass []int
}

// minSlot and maxSlot bound the constants that are slots.
const (
	minSlot = 2
	maxSlot = math.MaxInt64
)

// maxShapeText and maxSlots bound what has a shape: templates are kept
// for every analyst by their key, and a text of thousands of constants is
// no repeated query of a service.
const (
	maxShapeText = 4096
	maxSlots     = 64
)

// PostgresShape finds the slots of a PostgreSQL query text. ok is false for
// a text with no slot, with parameters, or that does not lex (the parser
// then reports why). Which constants are slots is a guess from the
// tokens before them; BuildTemplate checks each against the parsed
// statement and refuses a shape where one is anything else.
func PostgresShape(sql string) (shape Shape, ok bool) {
	if len(sql) > maxShapeText {
		return Shape{}, false
	}
	buf := shapeTokens.Get().(*[]token)
	toks, err := lexPostgresInto(sql, (*buf)[:0])
	defer func() {
		if cap(toks) <= 1024 {
			clear(toks) // no text kept alive by a pooled buffer
			*buf = toks[:0]
			shapeTokens.Put(buf)
		}
	}()
	if err != nil {
		return Shape{}, false
	}
	var (
		prev    = -1    // the last token that is not space or a comment
		inList  []bool  // per open parenthesis: is it an IN list's?
		between int     // BETWEENs waiting for their AND
		slots   []int   // token indexes of the slots
		values  []int64 // their values
		last    = 0     // end of the text copied into pieces so far
		key     strings.Builder
	)
	isWord := func(i int, w string) bool { return i >= 0 && toks[i].kind == tkWord && toks[i].val == w }
	for i, t := range toks {
		switch t.kind {
		case tkSpace, tkComment:
			continue
		case tkParam:
			return Shape{}, false
		case tkPunct:
			switch t.val {
			case "(":
				inList = append(inList, isWord(prev, "in"))
			case ")":
				if len(inList) > 0 {
					inList = inList[:len(inList)-1]
				}
			}
		case tkWord:
			if t.val == "between" {
				between++
			}
		case tkNumber:
			if v, isSlot := slotValue(sql[t.pos:t.end]); isSlot && slotContext(toks, prev, inList, &between) && !followedByCast(toks, i) {
				slots = append(slots, i)
				values = append(values, v)
			}
		}
		prev = i
	}
	if len(slots) == 0 || len(slots) > maxSlots {
		return Shape{}, false
	}
	shape.slotClass = make([]int, len(slots))
	shape.pieces = make([]string, 0, len(slots)+1)
	key.Grow(len(sql) + 2*len(slots) + 1)
	for n, i := range slots {
		t := toks[i]
		shape.pieces = append(shape.pieces, sql[last:t.pos])
		key.WriteString(sql[last:t.pos])
		key.WriteByte(0)
		last = t.end
		c := slices.Index(shape.Values, values[n])
		if c < 0 {
			c = len(shape.Values)
			shape.Values = append(shape.Values, values[n])
		}
		shape.slotClass[n] = c
	}
	shape.pieces = append(shape.pieces, sql[last:])
	key.WriteString(sql[last:])
	key.WriteByte(1)
	for _, c := range shape.slotClass {
		key.WriteString(strconv.Itoa(c))
		key.WriteByte(',')
	}
	shape.Key = key.String()
	return shape, true
}

// shapeTokens recycles PostgresShape's token buffers: it lexes every
// simple-protocol text that misses the plan memo.
var shapeTokens = sync.Pool{New: func() any { b := make([]token, 0, 64); return &b }}

// slotValue reads a number token that is plain digits from minSlot to
// maxSlot.
func slotValue(text string) (int64, bool) {
	if len(text) > 19 {
		return 0, false
	}
	for i := 0; i < len(text); i++ {
		if !isDigit(text[i]) {
			return 0, false
		}
	}
	v, err := strconv.ParseInt(text, 10, 64)
	if err != nil || v < minSlot || v > maxSlot {
		return 0, false
	}
	return v, true
}

// slotContext reports whether a number whose previous token is toks[prev]
// is where a filter constant goes: after a comparison operator, after
// BETWEEN or its AND, or in an IN list.
func slotContext(toks []token, prev int, inList []bool, between *int) bool {
	if prev < 0 {
		return false
	}
	t := toks[prev]
	switch t.kind {
	case tkOp:
		return t.val == "=" || t.val == "<" || t.val == ">"
	case tkWord:
		switch t.val {
		case "between":
			return true
		case "and":
			if *between > 0 {
				*between--
				return true
			}
		}
	case tkPunct:
		return (t.val == "(" || t.val == ",") && len(inList) > 0 && inList[len(inList)-1]
	}
	return false
}

// followedByCast reports whether the token after toks[i] (spaces and
// comments aside) is ::, which makes the constant a cast's operand.
func followedByCast(toks []token, i int) bool {
	for j := i + 1; j < len(toks); j++ {
		switch toks[j].kind {
		case tkSpace, tkComment:
			continue
		case tkTypecast:
			return true
		}
		return false
	}
	return false
}

// Text is the shape's text with values (one per class) in its slots (a
// text's shape only: an execution's has no text of its own).
func (s *Shape) Text(values []int64) string { return fill(s.pieces, s.slotClass, values) }

// Probe returns values for the shape's classes that no other constant of
// a query can have: each class gets base plus its number. BuildTemplate
// analyzes the shape with two sets of them.
func (s *Shape) Probe(base int64) []int64 {
	out := make([]int64, len(s.Values))
	for c := range out {
		out[c] = base + int64(c)
	}
	return out
}
