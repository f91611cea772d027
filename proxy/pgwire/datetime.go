package pgwire

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/dpproxy/dpproxy/sqltypes"
)

// Errors of date/time parsing; callers turn them into SQLSTATEs.
var (
	errDateTimeSyntax      = errors.New("invalid date/time syntax")
	errDateTimeRange       = errors.New("date/time field value out of range")
	errDateTimeUnsupported = errors.New("special date/time value not supported")
)

// pgEpoch is PostgreSQL's epoch for binary dates and timestamps.
var pgEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// pgEpochUnix is pgEpoch in Unix seconds.
const pgEpochUnix = 946684800

// dateTime is a parsed date/time literal.
type dateTime struct {
	year           int // astronomical: 1 BC is 0
	month, day     int
	hour, min, sec int
	usec           int
	hasTZ          bool
	tzOffset       int // seconds east of UTC
}

// parseDateTime parses the date/time forms clients send as parameters:
// ISO 8601 and PostgreSQL's ISO output ("2024-03-15", "2024-03-15
// 12:30:45.123456+01", "2024-03-15T12:30:45Z", "... BC"), plus "epoch".
// Fractional seconds are rounded to microseconds. Other special values
// ("infinity", "now", ...) give errDateTimeUnsupported: they have no
// time.Time or depend on the clock.
func parseDateTime(s string) (dateTime, error) {
	s = strings.Trim(s, " \t\n\r\v\f")
	switch strings.ToLower(s) {
	case "epoch":
		return dateTime{year: 1970, month: 1, day: 1, hasTZ: true}, nil
	case "infinity", "+infinity", "-infinity", "now", "today", "tomorrow", "yesterday", "allballs":
		return dateTime{}, errDateTimeUnsupported
	}
	p := &dtScanner{s: s}
	var dt dateTime
	var ok bool
	if dt.year, ok = p.number(1, 7); !ok || !p.consume('-') {
		return dateTime{}, errDateTimeSyntax
	}
	if dt.month, ok = p.number(1, 2); !ok || !p.consume('-') {
		return dateTime{}, errDateTimeSyntax
	}
	if dt.day, ok = p.number(1, 2); !ok {
		return dateTime{}, errDateTimeSyntax
	}
	// Time of day, after 'T' or white space.
	save := p.i
	if p.consume('T') || p.consume('t') || p.spaces() {
		p.spaces()
		if p.i < len(s) && isDigit(s[p.i]) {
			if err := p.clock(&dt); err != nil {
				return dateTime{}, err
			}
		} else {
			p.i = save
		}
	}
	// Time zone and era, in either order.
	bc, era := false, false
	for {
		p.spaces()
		if !dt.hasTZ {
			if err := p.zone(&dt); err != nil {
				return dateTime{}, err
			}
			if dt.hasTZ {
				continue
			}
		}
		if !era {
			if p.word("BC") {
				bc, era = true, true
				continue
			}
			if p.word("AD") {
				era = true
				continue
			}
		}
		break
	}
	if p.i != len(s) {
		return dateTime{}, errDateTimeSyntax
	}
	if dt.year == 0 {
		return dateTime{}, errDateTimeRange
	}
	if bc {
		dt.year = 1 - dt.year
	}
	if dt.month < 1 || dt.month > 12 || dt.day < 1 || dt.day > daysIn(dt.year, dt.month) ||
		dt.hour > 24 || dt.min > 59 || dt.sec > 60 ||
		(dt.hour == 24 && (dt.min != 0 || dt.sec != 0 || dt.usec != 0)) {
		return dateTime{}, errDateTimeRange
	}
	return dt, nil
}

// time returns the value for a column or parameter of type t: a date at
// midnight UTC, a timestamp's wall clock in UTC, or a timestamptz instant
// in UTC (without a zone in the input, in the session's TimeZone, UTC).
// Dates and timestamps ignore a zone in the input, as PostgreSQL does.
func (dt dateTime) time(t sqltypes.Type) time.Time {
	if t == sqltypes.Date {
		return time.Date(dt.year, time.Month(dt.month), dt.day, 0, 0, 0, 0, time.UTC)
	}
	v := time.Date(dt.year, time.Month(dt.month), dt.day, dt.hour, dt.min, dt.sec, dt.usec*1000, time.UTC)
	if t == sqltypes.Timestamptz && dt.hasTZ {
		v = v.Add(-time.Duration(dt.tzOffset) * time.Second)
	}
	return v
}

func daysIn(year, month int) int {
	return time.Date(year, time.Month(month)+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// dtScanner walks a date/time literal.
type dtScanner struct {
	s string
	i int
}

// number reads minDigits to maxDigits decimal digits.
func (p *dtScanner) number(minDigits, maxDigits int) (int, bool) {
	n, start := 0, p.i
	for p.i < len(p.s) && isDigit(p.s[p.i]) && p.i-start < maxDigits {
		n = n*10 + int(p.s[p.i]-'0')
		p.i++
	}
	if p.i-start < minDigits || (p.i < len(p.s) && isDigit(p.s[p.i])) {
		return 0, false
	}
	return n, true
}

func (p *dtScanner) consume(b byte) bool {
	if p.i < len(p.s) && p.s[p.i] == b {
		p.i++
		return true
	}
	return false
}

func (p *dtScanner) spaces() bool {
	start := p.i
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
	return p.i > start
}

// word consumes w (case-insensitive) when it stands alone.
func (p *dtScanner) word(w string) bool {
	if len(p.s)-p.i < len(w) || !strings.EqualFold(p.s[p.i:p.i+len(w)], w) {
		return false
	}
	if end := p.i + len(w); end < len(p.s) && isLetter(p.s[end]) {
		return false
	}
	p.i += len(w)
	return true
}

// clock reads HH:MM[:SS[.ffffff]].
func (p *dtScanner) clock(dt *dateTime) error {
	var ok bool
	if dt.hour, ok = p.number(1, 2); !ok || !p.consume(':') {
		return errDateTimeSyntax
	}
	if dt.min, ok = p.number(2, 2); !ok {
		return errDateTimeSyntax
	}
	if !p.consume(':') {
		return nil
	}
	if dt.sec, ok = p.number(2, 2); !ok {
		return errDateTimeSyntax
	}
	if !p.consume('.') {
		return nil
	}
	start := p.i
	for p.i < len(p.s) && isDigit(p.s[p.i]) {
		p.i++
	}
	if p.i == start {
		return errDateTimeSyntax
	}
	// Like PostgreSQL: the fraction as a double, times 10^6, rounded half
	// to even (time.Date carries a rounded-up full second).
	frac, err := strconv.ParseFloat(p.s[start-1:p.i], 64)
	if err != nil {
		return errDateTimeSyntax
	}
	dt.usec = int(math.RoundToEven(frac * 1e6))
	return nil
}

// zone reads an optional zone: Z, UTC, GMT or ±HH[[:]MM[[:]SS]].
func (p *dtScanner) zone(dt *dateTime) error {
	switch {
	case p.word("Z"), p.word("UTC"), p.word("GMT"):
		dt.hasTZ = true
		return nil
	case p.i < len(p.s) && (p.s[p.i] == '+' || p.s[p.i] == '-'):
	default:
		return nil
	}
	sign := 1
	if p.s[p.i] == '-' {
		sign = -1
	}
	p.i++
	h, ok := p.numberUpTo2()
	if !ok {
		return errDateTimeSyntax
	}
	var m, sec int
	colon := p.consume(':')
	if colon || (p.i < len(p.s) && isDigit(p.s[p.i])) {
		if m, ok = p.number(2, 2); !ok {
			return errDateTimeSyntax
		}
		if (colon && p.consume(':')) || (!colon && p.i < len(p.s) && isDigit(p.s[p.i])) {
			if sec, ok = p.number(2, 2); !ok {
				return errDateTimeSyntax
			}
		}
	}
	if h > 15 || m > 59 || sec > 59 {
		return errDateTimeRange
	}
	dt.hasTZ = true
	dt.tzOffset = sign * (h*3600 + m*60 + sec)
	return nil
}

// numberUpTo2 reads one or two digits without requiring a non-digit after
// them ("+0530" is 05 then 30).
func (p *dtScanner) numberUpTo2() (int, bool) {
	n, start := 0, p.i
	for p.i < len(p.s) && isDigit(p.s[p.i]) && p.i-start < 2 {
		n = n*10 + int(p.s[p.i]-'0')
		p.i++
	}
	return n, p.i > start
}

func isLetter(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' }

// pgDays is the binary date: days since 2000-01-01.
func pgDays(v time.Time) (int64, bool) {
	y, m, d := v.Date()
	days := time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix()/86400 - pgEpochUnix/86400
	// PostgreSQL reserves the extreme values for ±infinity.
	return days, days > -1<<31 && days < 1<<31-1
}

// pgMicros is the binary timestamp: microseconds since 2000-01-01 of v's
// instant (timestamptz) or of its wall clock read as UTC (timestamp).
func pgMicros(t sqltypes.Type, v time.Time) (int64, bool) {
	if t == sqltypes.Timestamptz {
		v = v.UTC()
	} else {
		v = time.Date(v.Year(), v.Month(), v.Day(), v.Hour(), v.Minute(), v.Second(), v.Nanosecond(), time.UTC)
	}
	v = v.Round(time.Microsecond)
	sec := v.Unix() - pgEpochUnix
	const limit = (1<<63 - 1) / 1_000_000
	if sec >= limit || sec <= -limit {
		return 0, false
	}
	return sec*1e6 + int64(v.Nanosecond()/1000), true
}

// fromPgMicros turns a binary timestamp into a UTC time.Time.
func fromPgMicros(us int64) time.Time {
	sec, rem := us/1e6, us%1e6
	if rem < 0 {
		sec, rem = sec-1, rem+1e6
	}
	return time.Unix(pgEpochUnix+sec, rem*1000).UTC()
}
