package sqltypes

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Type is a result column type. Each front end maps it to its wire type
// (PostgreSQL OID, MySQL column type).
type Type int

const (
	Unknown Type = iota // sent as text
	Bool
	Int2
	Int4
	Int8
	Float4
	Float8
	Numeric
	Text
	Varchar
	Bpchar
	Date
	Timestamp
	Timestamptz
	Bytea
	Name
	OID
)

var typeNames = [...]string{"unknown", "boolean", "smallint", "integer", "bigint", "real", "double precision", "numeric", "text", "character varying", "character", "date", "timestamp", "timestamptz", "bytea", "name", "oid"}

func (t Type) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return "unknown"
}

// pgOIDs are PostgreSQL's type OIDs (pg_type.oid), indexed by Type.
var pgOIDs = [...]uint32{705, 16, 21, 23, 20, 700, 701, 1700, 25, 1043, 1042, 1082, 1114, 1184, 17, 19, 26}

// PostgresOID returns the PostgreSQL type OID for t.
func (t Type) PostgresOID() uint32 {
	if int(t) < len(pgOIDs) {
		return pgOIDs[t]
	}
	return 25
}

// FromPostgresOID maps a PostgreSQL type OID to a Type; unknown OIDs are
// reported as Text (their values are sent in text form).
func FromPostgresOID(oid uint32) Type {
	for t, o := range pgOIDs {
		if o == oid && t != int(Unknown) {
			return Type(t)
		}
	}
	return Text
}

// PostgresTypeSize returns the pg_type.typlen for t (-1 for variable length).
func (t Type) PostgresTypeSize() int16 {
	switch t {
	case Bool:
		return 1
	case Int2:
		return 2
	case Int4, Float4, Date, OID:
		return 4
	case Int8, Float8, Timestamp, Timestamptz:
		return 8
	case Name:
		return 64
	}
	return -1
}

// Integer reports whether the type holds whole numbers only.
func (t Type) Integer() bool { return t == Int8 || t == Int4 || t == Int2 }

// Decimal is an exact decimal number in canonical text form ("-12.50"),
// the Go value of a Numeric column.
type Decimal string

// Float reads a backend number as a float64: integers, floats, Decimal and
// numeric text. NULL (an empty sum) and anything else read as zero.
func Float(v any) float64 {
	f, _ := Number(v)
	return f
}

// Number reads a number as Float does; ok is false for NULL and anything
// that is not a number.
func Number(v any) (f float64, ok bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, true
	case Decimal:
		f, err := strconv.ParseFloat(string(x), 64)
		return f, err == nil
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return f, err == nil
	}
	return 0, false
}

// Convert converts a value to the Go type of t where it can; values
// that do not fit are rendered as text only when t is a text type, and
// otherwise become NULL rather than a value the client would misread.
func Convert(v any, t Type) any {
	if v == nil {
		return nil
	}
	switch t {
	case Text, Varchar, Bpchar, Name, Unknown:
		switch x := v.(type) {
		case string:
			return x
		case []byte:
			return string(x)
		case time.Time:
			return x.Format("2006-01-02 15:04:05.999999")
		}
		return fmt.Sprint(v)
	case Int2, Int4, Int8:
		switch x := v.(type) {
		case int64:
			return x
		case float64:
			if x == float64(int64(x)) {
				return int64(x)
			}
		case string:
			if n, err := strconv.ParseInt(x, 10, 64); err == nil {
				return n
			}
		}
	case Float4, Float8:
		if f, ok := numberOf(v); ok {
			return f
		}
	case Numeric:
		switch x := v.(type) {
		case Decimal:
			return x
		case int64:
			return Decimal(strconv.FormatInt(x, 10))
		case float64:
			return Decimal(strconv.FormatFloat(x, 'f', -1, 64))
		case string:
			if _, err := strconv.ParseFloat(x, 64); err == nil {
				return Decimal(x)
			}
		}
	case Bool:
		switch x := v.(type) {
		case bool:
			return x
		case int64:
			return x != 0
		}
	case Date, Timestamp, Timestamptz:
		switch x := v.(type) {
		case time.Time:
			return x
		case string:
			for _, layout := range []string{"2006-01-02", "2006-01-02 15:04:05.999999", time.RFC3339Nano} {
				if tm, err := time.Parse(layout, x); err == nil {
					return tm
				}
			}
		}
	default:
		return v
	}
	return nil
}

func numberOf(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, true
	case Decimal:
		f, err := strconv.ParseFloat(string(x), 64)
		return f, err == nil
	case string:
		f, err := strconv.ParseFloat(x, 64)
		return f, err == nil
	}
	return 0, false
}
