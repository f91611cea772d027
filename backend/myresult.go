package backend

import (
	"database/sql/driver"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/go-sql-driver/mysql"
)

// Reading the result of a combined MySQL statement (mycombine.go) from
// the connection's socket: the text protocol's result set, as the
// MariaDB and MySQL documentation give it (COM_QUERY response: an OK or
// ERR packet, or a column count, the column definitions, an EOF unless
// the connection deprecated it, the rows and an EOF or OK packet).

// MySQL protocol constants.
const (
	mysqlOK          = 0x00
	mysqlEOF         = 0xfe
	mysqlERR         = 0xff
	mysqlLocalInfile = 0xfb
	mysqlNullValue   = 0xfb

	mysqlMoreResults   = 0x0008 // SERVER_MORE_RESULTS_EXISTS
	mysqlFlagUnsigned  = 0x0020
	mysqlFlagZerofill  = 0x0040
	mysqlFlagEnum      = 0x0100
	mysqlFlagSet       = 0x0800
	mysqlBinaryCharset = 63
)

// mysqlColumn is what a result's column definition says.
type mysqlColumn struct {
	name     string
	typeName string // as go-sql-driver names it (DatabaseTypeName)
	// zerofill marks an integer column the server pads with zeros in
	// text, which the driver parses: not wire-safe.
	zerofill bool
	// read is how a value of the column is read into a driver value, as
	// go-sql-driver reads the text protocol; nil for a column whose
	// values cannot be read here (dates and times).
	read func([]byte) (driver.Value, error)
}

// readMySQLResult reads one statement's whole result from r and sets
// s.res or s.err. It reports whether the session is as before (the
// server returned a result set, not an error or an OK packet); an error
// is the connection's.
//
// A statement whose arguments were written into its text (s.args) runs
// alone as a prepared statement, its rows in the binary protocol: the
// columns whose text form is not what go-sql-driver gives from a binary
// value (FLOAT prints 6 digits, a DOUBLE(M,D) D decimals, TIME a
// fraction the driver drops) make it run alone (errRunAlone), and so
// does an error, which may be the literal's doing where the parameter's
// would not be (and is otherwise the same error alone).
func readMySQLResult(r *mysqlPacketReader, s *combinedStmt) (keep bool, err error) {
	r.start()
	p, err := r.next()
	if err != nil {
		return false, err
	}
	interpolated := len(s.args) > 0
	serverError := func(p []byte) {
		s.err = fmt.Errorf("backend: mysql: %w", mysqlErrorPacket(p))
		if interpolated {
			s.err = errRunAlone
		}
	}
	switch p[0] {
	case mysqlOK:
		if okStatus(p)&mysqlMoreResults != 0 {
			return false, errors.New("mysql: more than one result")
		}
		s.res = &Rows{}
		return false, nil
	case mysqlERR:
		serverError(p)
		return false, nil
	case mysqlLocalInfile:
		return false, errors.New("mysql: the server asked for a local file")
	}
	cols, p, err := readMySQLColumns(r, p, interpolated)
	if err != nil {
		return false, err
	}
	var buf []byte
	rows := new(mysqlResultRows)
	rows.init(s, newMySQLResultLayout(cols), &buf)
	for {
		switch {
		case p[0] == mysqlEOF && len(p) < 0xffffff:
			if eofStatus(p)&mysqlMoreResults != 0 {
				return false, errors.New("mysql: more than one result")
			}
			rows.finish(s) // an error of its own (a cap, a date) leaves the session as it was
			return true, nil
		case p[0] == mysqlERR:
			serverError(p)
			return false, nil
		}
		rows.add(p)
		if p, err = r.next(); err != nil {
			return false, err
		}
	}
}

// readMySQLColumns reads the column definitions of a result set whose
// column count packet is p, and returns them with the packet after them:
// the first row, or the end of the rows.
func readMySQLColumns(r *mysqlPacketReader, p []byte, interpolated bool) ([]mysqlColumn, []byte, error) {
	count, _, ok := lenEncInt(p)
	if !ok || count == 0 || count > 1<<16 {
		return nil, nil, errors.New("mysql: bad column count packet")
	}
	cols := make([]mysqlColumn, count)
	var err error
	for i := range cols {
		if p, err = r.next(); err != nil {
			return nil, nil, err
		}
		if cols[i], err = parseMySQLColumn(p, interpolated); err != nil {
			return nil, nil, err
		}
	}
	if p, err = r.next(); err != nil {
		return nil, nil, err
	}
	if p[0] == mysqlEOF && len(p) == 5 {
		// The EOF after the columns (a connection without
		// CLIENT_DEPRECATE_EOF); an OK packet ending the rows is longer.
		if p, err = r.next(); err != nil {
			return nil, nil, err
		}
	}
	return cols, p, nil
}

// mysqlResultRows gathers a combined statement's rows: as they are when
// its caller wants the wire form and every column is wire-safe, decoded
// otherwise. A union's branches share one (mysqlResultLayout) and one
// buffer of row bytes, so that a statement's result costs about one
// allocation of its own. It points into itself (spans, the rows and the
// result it gives): it is used in place, never copied after init.
type mysqlResultRows struct {
	*mysqlResultLayout
	wire  bool
	meter resultMeter
	err   error

	buf   *[]byte   // wire form: the rows' payloads, one after another
	spans []rowSpan // wire form: where each row is in buf
	// spanSpace and rowSpace hold a short result's spans and rows.
	spanSpace [2]rowSpan
	rowSpace  [2][]byte
	values    [][]any
	res       Rows
}

// rowSpan is where a row's payload is in a result's buffer.
type rowSpan struct{ start, end int }

// mysqlResultLayout is what a result's column definitions decide, shared
// by the statements a union answers.
type mysqlResultLayout struct {
	cols     []Column
	mcols    []mysqlColumn
	wireSafe bool // every column can go to the client as the server sent it
	// decode is each column's decoder, nil when one cannot be decoded
	// (the statement then runs alone).
	decode []mysqlDecoder
}

func newMySQLResultLayout(mcols []mysqlColumn) *mysqlResultLayout {
	l := &mysqlResultLayout{cols: make([]Column, len(mcols)), mcols: mcols, wireSafe: true}
	for i, c := range mcols {
		_, safe := mysqlWireType(c.typeName)
		l.wireSafe = l.wireSafe && safe && !c.zerofill
		l.cols[i].Name = c.name
		l.cols[i].Type, _ = mysqlColumnDecoder(c.typeName)
	}
	return l
}

// decoders returns the layout's decoders, made on first use.
func (l *mysqlResultLayout) decoders() []mysqlDecoder {
	if l.decode == nil {
		decode := make([]mysqlDecoder, len(l.mcols))
		for i, c := range l.mcols {
			if c.read == nil {
				return nil
			}
			_, decode[i] = mysqlColumnDecoder(c.typeName)
		}
		l.decode = decode
	}
	return l.decode
}

// init readies rr for s's rows in layout l, keeping wire rows in *buf.
func (rr *mysqlResultRows) init(s *combinedStmt, l *mysqlResultLayout, buf *[]byte) {
	rr.mysqlResultLayout = l
	rr.wire = s.wire && l.wireSafe
	rr.meter = resultMeter{limit: resultLimitFrom(s.ctx)}
	rr.buf = buf
	rr.spans = rr.spanSpace[:0]
	if !rr.wire {
		if l.decoders() == nil {
			rr.err = errRunAlone
		}
		rr.values = [][]any{}
	}
}

// add takes one row's payload (valid until the next packet is read).
func (rr *mysqlResultRows) add(p []byte) {
	if rr.err != nil {
		return // the rest of the result is read and dropped
	}
	if rr.wire {
		rr.err = rr.meter.addEncoded(len(p))
		start := len(*rr.buf)
		*rr.buf = append(*rr.buf, p...)
		rr.spans = append(rr.spans, rowSpan{start, len(*rr.buf)})
		return
	}
	pos := 0
	row := make([]any, len(rr.mcols))
	for i, c := range rr.mcols {
		if pos >= len(p) {
			rr.err = errors.New("backend: mysql: short row packet")
			return
		}
		if p[pos] == mysqlNullValue {
			pos++
			continue
		}
		n, used, ok := lenEncInt(p[pos:])
		pos += used
		if !ok || uint64(len(p)-pos) < n {
			rr.err = errors.New("backend: mysql: bad row packet")
			return
		}
		v, err := c.read(p[pos : pos+int(n)])
		if err != nil {
			rr.err = fmt.Errorf("backend: mysql: column %s: %w", c.name, err)
			return
		}
		pos += int(n)
		row[i] = rr.decode[i](v)
	}
	if rr.err = rr.meter.add(row); rr.err == nil {
		rr.values = append(rr.values, row)
	}
}

// finish sets s's result, or its error. A wire row is capped at its end,
// so that nothing appended to one can reach the next; the columns of a
// wire result are the layout's, shared with a union's other branches, and
// read-only (matchColumns copies them to change them).
func (rr *mysqlResultRows) finish(s *combinedStmt) {
	if rr.err != nil {
		s.err = rr.err
		return
	}
	if rr.wire {
		rows := rr.rowSpace[:0]
		if len(rr.spans) > len(rr.rowSpace) {
			rows = make([][]byte, 0, len(rr.spans))
		}
		buf := *rr.buf
		for _, sp := range rr.spans {
			rows = append(rows, buf[sp.start:sp.end:sp.end])
		}
		rr.res = Rows{Columns: rr.cols, MySQLText: rows}
		s.res = &rr.res
		return
	}
	// conform may retype a column for this result's values alone: the
	// layout's columns are a union's branches' together.
	cols := slices.Clone(rr.cols)
	conform(cols, rr.values)
	rr.res = Rows{Columns: cols, Values: rr.values}
	s.res = &rr.res
}

// parseMySQLColumn reads a column definition packet
// (Protocol::ColumnDefinition41), of a statement with interpolated
// arguments or not (see readMySQLResult).
func parseMySQLColumn(p []byte, interpolated bool) (mysqlColumn, error) {
	var c mysqlColumn
	pos := 0
	for i := range 6 { // catalog, schema, table, org_table, name, org_name
		n, used, ok := lenEncInt(p[pos:])
		if !ok || uint64(len(p)-pos-used) < n {
			return c, errors.New("mysql: bad column definition")
		}
		if i == 4 {
			c.name = string(p[pos+used : pos+used+int(n)])
		}
		pos += used + int(n)
	}
	// The fixed fields' length (0x0c), charset (2), length (4), type (1),
	// flags (2), decimals (1).
	if len(p) < pos+11 {
		return c, errors.New("mysql: short column definition")
	}
	charset := binary.LittleEndian.Uint16(p[pos+1:])
	fieldType := p[pos+7]
	flags := binary.LittleEndian.Uint16(p[pos+8:])
	c.typeName = mysqlTypeName(fieldType, flags, charset)
	c.zerofill = flags&mysqlFlagZerofill != 0
	c.read = mysqlTextReader(fieldType, flags)
	switch fieldType {
	case 0x04, 0x05, 0x0b: // FLOAT, DOUBLE, TIME
		if interpolated {
			c.read = nil
		}
	}
	return c, nil
}

// mysqlTypeName names a column's type as go-sql-driver's
// ColumnTypeDatabaseTypeName does, which mysqlColumnDecoder reads.
func mysqlTypeName(fieldType byte, flags, charset uint16) string {
	unsigned := func(name string) string {
		if flags&mysqlFlagUnsigned != 0 {
			return "UNSIGNED " + name
		}
		return name
	}
	binaryOr := func(bin, text string) string {
		if charset == mysqlBinaryCharset {
			return bin
		}
		return text
	}
	switch fieldType {
	case 0x00, 0xf6:
		return "DECIMAL"
	case 0x01:
		return unsigned("TINYINT")
	case 0x02:
		return unsigned("SMALLINT")
	case 0x03:
		return unsigned("INT")
	case 0x04:
		return "FLOAT"
	case 0x05:
		return "DOUBLE"
	case 0x06:
		return "NULL"
	case 0x07:
		return "TIMESTAMP"
	case 0x08:
		return unsigned("BIGINT")
	case 0x09:
		return unsigned("MEDIUMINT")
	case 0x0a, 0x0e:
		return "DATE"
	case 0x0b:
		return "TIME"
	case 0x0c:
		return "DATETIME"
	case 0x0d:
		return "YEAR"
	case 0x0f, 0xfd:
		return binaryOr("VARBINARY", "VARCHAR")
	case 0x10:
		return "BIT"
	case 0xf2:
		return "VECTOR"
	case 0xf5:
		return "JSON"
	case 0xf7:
		return "ENUM"
	case 0xf8:
		return "SET"
	case 0xf9:
		return binaryOr("TINYBLOB", "TINYTEXT")
	case 0xfa:
		return binaryOr("MEDIUMBLOB", "MEDIUMTEXT")
	case 0xfb:
		return binaryOr("LONGBLOB", "LONGTEXT")
	case 0xfc:
		return binaryOr("BLOB", "TEXT")
	case 0xfe:
		switch {
		case flags&mysqlFlagEnum != 0:
			return "ENUM"
		case flags&mysqlFlagSet != 0:
			return "SET"
		}
		return binaryOr("BINARY", "CHAR")
	case 0xff:
		return "GEOMETRY"
	}
	return ""
}

// mysqlTextReader returns how a text-protocol value of a column is read
// into the driver value go-sql-driver gives for it: integers and floats
// parsed, everything else its bytes; nil for dates and times (the driver
// parses those itself; such a statement runs alone).
func mysqlTextReader(fieldType byte, flags uint16) func([]byte) (driver.Value, error) {
	switch fieldType {
	case 0x07, 0x0a, 0x0c, 0x0e: // TIMESTAMP, DATE, DATETIME, NEWDATE
		return nil
	case 0x01, 0x02, 0x03, 0x09, 0x0d: // TINY, SHORT, LONG, INT24, YEAR
		return func(b []byte) (driver.Value, error) { return strconv.ParseInt(string(b), 10, 64) }
	case 0x08: // LONGLONG
		if flags&mysqlFlagUnsigned != 0 {
			return func(b []byte) (driver.Value, error) { return strconv.ParseUint(string(b), 10, 64) }
		}
		return func(b []byte) (driver.Value, error) { return strconv.ParseInt(string(b), 10, 64) }
	case 0x04: // FLOAT
		return func(b []byte) (driver.Value, error) {
			f, err := strconv.ParseFloat(string(b), 32)
			return float32(f), err
		}
	case 0x05: // DOUBLE
		return func(b []byte) (driver.Value, error) { return strconv.ParseFloat(string(b), 64) }
	}
	return func(b []byte) (driver.Value, error) { return b, nil }
}

// lenEncInt reads a length-encoded integer: its value, its size, and
// whether b held it whole.
func lenEncInt(b []byte) (v uint64, size int, ok bool) {
	if len(b) == 0 {
		return 0, 0, false
	}
	switch b[0] {
	case 0xfc:
		size = 3
	case 0xfd:
		size = 4
	case 0xfe:
		size = 9
	case 0xfb, 0xff:
		return 0, 1, false
	default:
		return uint64(b[0]), 1, true
	}
	if len(b) < size {
		return 0, 0, false
	}
	for i := size - 1; i >= 1; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v, size, true
}

// okStatus reads the status flags of an OK packet (0x00 or 0xfe header).
func okStatus(p []byte) uint16 {
	_, a, ok1 := lenEncInt(p[1:])
	_, b, ok2 := lenEncInt(p[1+a:])
	if !ok1 || !ok2 || len(p) < 1+a+b+2 {
		return 0
	}
	return binary.LittleEndian.Uint16(p[1+a+b:])
}

// eofStatus reads the status flags of the packet that ends the rows: an
// EOF packet (5 bytes) or an OK packet with the 0xfe header.
func eofStatus(p []byte) uint16 {
	if len(p) == 5 {
		return binary.LittleEndian.Uint16(p[3:])
	}
	return okStatus(p)
}

// mysqlErrorPacket reads an ERR packet as go-sql-driver reports it.
func mysqlErrorPacket(p []byte) error {
	if len(p) < 3 {
		return errors.New("mysql: short error packet")
	}
	me := &mysql.MySQLError{Number: binary.LittleEndian.Uint16(p[1:3])}
	pos := 3
	if len(p) >= 9 && p[3] == '#' {
		copy(me.SQLState[:], p[4:9])
		pos = 9
	}
	me.Message = string(p[pos:])
	return me
}
