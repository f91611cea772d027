package author

// This file holds the (n, ε)-closeness audit (`dpproxy audit closeness`):
// (n, t)-closeness of Li, Li and Venkatasubramanian ("Closeness: A New
// Privacy Measure for Data Publishing", TKDE 2010), with t called ε.
//
// Records with the same quasi-identifier values form a class. A class E
// passes when it has at least n records itself, or when a natural
// superset of E with at least n records has a distribution of the
// sensitive attribute within ε of E's. The natural supersets are the
// classes of E's records with a non-empty subset of the quasi-identifiers
// suppressed (generalized to "any"), up to the whole table. The table has
// (n, ε)-closeness when every class passes.

import (
	"cmp"
	"context"
	"encoding/binary"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/dpproxy/dpproxy/backend"
	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// Distance is how far the sensitive attribute's distribution in a class
// is from its distribution in a superset.
type Distance string

const (
	// Variational is the total variation distance, ½ Σ |P_i − Q_i|.
	Variational Distance = "variational"
	// KL is the Kullback–Leibler divergence Σ P_i ln(P_i/Q_i), in nats.
	KL Distance = "kl"
	// EMD is the earth mover's distance. On a numeric sensitive attribute
	// it is the ordered distance of the t-closeness paper: with the m
	// distinct values of the whole table sorted, moving mass between the
	// i-th and j-th value costs |i−j|/(m−1). On any other attribute every
	// two values are 1 apart, which makes it the variational distance.
	EMD Distance = "emd"
)

// ParseDistance reads a distance's name (variational, kl or emd).
func ParseDistance(s string) (Distance, error) {
	switch d := Distance(strings.ToLower(strings.TrimSpace(s))); d {
	case Variational, KL, EMD:
		return d, nil
	}
	return "", fmt.Errorf("unknown distance %q: want variational, kl or emd", s)
}

// MaxQuasi is the most quasi-identifiers an audit takes: each class is
// compared with up to 2^k − 1 supersets.
const MaxQuasi = 12

// closenessSlack absorbs rounding: a distance within ε + closenessSlack
// passes, so that a distance of exactly ε is not failed by a last bit.
const closenessSlack = 1e-9

// ClosenessOptions say what to audit.
type ClosenessOptions struct {
	// Quasi are the quasi-identifier columns; records with the same
	// values in all of them form a class (NULL is a value of its own).
	Quasi []string
	// Sensitive is the sensitive column (NULL is a value of its own).
	Sensitive string
	// N is the least number of records of a superset (at least 1).
	N int
	// Epsilon is the largest distance allowed (≥ 0).
	Epsilon float64
	// Distance is the distance used (default EMD).
	Distance Distance
}

// Columns are the columns an audit reads: the quasi-identifiers, then
// the sensitive column.
func (o ClosenessOptions) Columns() []string {
	return append(append([]string(nil), o.Quasi...), o.Sensitive)
}

// Validate says what is wrong with the options, or nil.
func (o ClosenessOptions) Validate() error {
	switch {
	case len(o.Quasi) == 0:
		return errors.New("give at least one quasi-identifier column")
	case len(o.Quasi) > MaxQuasi:
		return fmt.Errorf("%d quasi-identifiers: at most %d (each class is compared with 2^k − 1 supersets)", len(o.Quasi), MaxQuasi)
	case strings.TrimSpace(o.Sensitive) == "":
		return errors.New("give the sensitive column")
	case o.N < 1:
		return fmt.Errorf("n must be at least 1 (got %d)", o.N)
	case math.IsNaN(o.Epsilon) || math.IsInf(o.Epsilon, 0) || o.Epsilon < 0:
		return fmt.Errorf("ε must be a number ≥ 0 (got %v)", o.Epsilon)
	}
	for i, q := range o.Quasi {
		if strings.TrimSpace(q) == "" {
			return errors.New("an empty quasi-identifier column name")
		}
		if strings.EqualFold(q, o.Sensitive) {
			return fmt.Errorf("the sensitive column %q is also a quasi-identifier: each class would hold one sensitive value; name it once", o.Sensitive)
		}
		if slices.ContainsFunc(o.Quasi[:i], func(p string) bool { return strings.EqualFold(p, q) }) {
			return fmt.Errorf("quasi-identifier %q is named twice", q)
		}
	}
	if _, err := ParseDistance(string(o.Distance)); o.Distance != "" && err != nil {
		return err
	}
	return nil
}

// ClosenessTable is the data an audit reads: named columns, whether each
// is numeric, and rows of values. A value is nil (NULL), a string, a
// number (int64, float64, sqltypes.Decimal; or a string, in a numeric
// column) or any other value a backend returns, compared by its text.
type ClosenessTable struct {
	// Name names the table in the report.
	Name    string
	Columns []string
	// Numeric has one entry per column (nil: none is numeric).
	Numeric []bool
	Rows    [][]any
}

// ClosenessClass is one class of records and how it fares.
type ClosenessClass struct {
	// Values are the class's quasi-identifier values as shown: NULL for
	// NULL, quoted when needed.
	Values []string
	Size   int
	Pass   bool
	// Distance is the smallest distance from the class to a superset of
	// at least n records (0 when the class has n records itself); +Inf
	// when no superset has n records.
	Distance float64
	// Suppressed are the quasi-identifiers that superset suppresses (none:
	// the class itself; all: the whole table), and SupersetSize its
	// records (0 when there is none).
	Suppressed   []string
	SupersetSize int
}

// ClosenessReport is what an audit found.
type ClosenessReport struct {
	Table   string
	Options ClosenessOptions
	Records int
	// NumericSensitive says the sensitive column is numeric (ordered EMD).
	NumericSensitive bool
	// SensitiveValues is the number of distinct sensitive values, NULL
	// counted as one.
	SensitiveValues int
	// SensitiveNulls counts the records whose sensitive value is NULL;
	// QuasiNulls, for each quasi-identifier, those where it is NULL.
	SensitiveNulls int
	QuasiNulls     []int
	// Classes are all the classes, the farthest first: failing classes
	// come before passing ones.
	Classes []ClosenessClass
}

// Failing are the classes that fail, the worst first.
func (r *ClosenessReport) Failing() []ClosenessClass {
	n := 0
	for n < len(r.Classes) && !r.Classes[n].Pass {
		n++
	}
	return r.Classes[:n]
}

// Pass reports whether the table has (n, ε)-closeness.
func (r *ClosenessReport) Pass() bool { return len(r.Failing()) == 0 }

// Worst is the class farthest from its nearest superset (nil for an
// empty table).
func (r *ClosenessReport) Worst() *ClosenessClass {
	if len(r.Classes) == 0 {
		return nil
	}
	return &r.Classes[0]
}

// Write prints the report: what was audited, every failing class (its
// values, size, nearest superset of n records and the distance to it),
// the worst class, and a summary.
func (r *ClosenessReport) Write(w io.Writer) {
	o := r.Options
	kind := map[bool]string{false: "categorical", true: "numeric"}[r.NumericSensitive]
	fmt.Fprintf(w, "%-7s %s: %d %s in %d %s; quasi-identifiers %s; sensitive %s (%s, %d distinct %s)\n",
		"table", r.Table, r.Records, plural(r.Records, "record"), len(r.Classes), plural(len(r.Classes), "class"),
		strings.Join(o.Quasi, ", "), o.Sensitive, kind, r.SensitiveValues, plural(r.SensitiveValues, "value"))
	fmt.Fprintf(w, "%-7s (%d, %s)-closeness by %s: a class passes with %d %s, or with a superset of %d (quasi-identifiers suppressed, up to the whole table) within %s of it\n",
		"test", o.N, formatEpsilon(o.Epsilon), r.distanceName(), o.N, plural(o.N, "record"), o.N, formatEpsilon(o.Epsilon))
	if o.Distance == EMD && !r.NumericSensitive {
		fmt.Fprintf(w, "%-7s %s is not numeric: emd takes every two values as 1 apart, which is the variational distance\n", "note", o.Sensitive)
	}
	if r.SensitiveNulls > 0 {
		where := ""
		if o.Distance == EMD && r.NumericSensitive {
			where = " (for emd, ordered after the largest number)"
		}
		fmt.Fprintf(w, "%-7s %s is NULL in %d %s: NULL counts as a value of its own%s\n", "note", o.Sensitive, r.SensitiveNulls, plural(r.SensitiveNulls, "record"), where)
	}
	for i, q := range o.Quasi {
		if n := r.QuasiNulls[i]; n > 0 {
			fmt.Fprintf(w, "%-7s %s is NULL in %d %s: NULL is a class value of its own\n", "note", q, n, plural(n, "record"))
		}
	}
	for i := range r.Failing() {
		c := &r.Classes[i]
		fmt.Fprintf(w, "%-7s %s: %s\n", "fail", r.className(c), r.outcome(c))
	}
	if c := r.Worst(); c != nil {
		fmt.Fprintf(w, "%-7s %s: %s\n", "worst", r.className(c), r.outcome(c))
	}
	failing, records := r.Failing(), 0
	for _, c := range failing {
		records += c.Size
	}
	verdict := map[bool]string{true: "has", false: "does not have"}[len(failing) == 0]
	fmt.Fprintf(w, "%d %s, %d failing (%d of %d %s in failing classes); %s %s (%d, %s)-closeness\n",
		len(r.Classes), plural(len(r.Classes), "class"), len(failing), records, r.Records, plural(r.Records, "record"),
		r.Table, verdict, o.N, formatEpsilon(o.Epsilon))
}

func (r *ClosenessReport) distanceName() string {
	switch {
	case r.Options.Distance == KL:
		return "kl (Kullback–Leibler divergence, in nats)"
	case r.Options.Distance == EMD && r.NumericSensitive:
		return "emd (ordered earth mover's distance)"
	case r.Options.Distance == EMD:
		return "emd (equal ground distance: the variational distance)"
	}
	return "variational (½ Σ |P_i − Q_i|)"
}

// className is a class as "a=1, b=x (3 records)".
func (r *ClosenessReport) className(c *ClosenessClass) string {
	return fmt.Sprintf("%s (%d %s)", r.values(c.Values, nil), c.Size, plural(c.Size, "record"))
}

// outcome says how far a class is from its nearest superset.
func (r *ClosenessReport) outcome(c *ClosenessClass) string {
	switch {
	case c.SupersetSize == 0:
		return fmt.Sprintf("no superset has %d records (the table has %d)", r.Options.N, r.Records)
	case len(c.Suppressed) == 0:
		return "the class itself has enough records (distance 0)"
	}
	superset := "the whole table"
	if len(c.Suppressed) < len(r.Options.Quasi) {
		superset = r.values(c.Values, c.Suppressed)
	}
	cmp := map[bool]string{true: "≤", false: ">"}[c.Pass]
	return fmt.Sprintf("nearest superset %s (%d records) at %.4f %s ε %s", superset, c.SupersetSize, c.Distance, cmp, formatEpsilon(r.Options.Epsilon))
}

// values shows quasi-identifier values as "a=1, b=x", "*" for those
// suppressed.
func (r *ClosenessReport) values(vals, suppressed []string) string {
	parts := make([]string, len(vals))
	for i, v := range vals {
		if slices.Contains(suppressed, r.Options.Quasi[i]) {
			v = "*"
		}
		parts[i] = r.Options.Quasi[i] + "=" + v
	}
	return strings.Join(parts, ", ")
}

func formatEpsilon(e float64) string { return strconv.FormatFloat(e, 'g', -1, 64) }

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + map[bool]string{true: "es", false: "s"}[strings.HasSuffix(word, "s")]
}

// dict interns one column's values: an id for each distinct value (NULL
// included), with its key (its text, or its number's) and number.
type dict struct {
	numeric bool
	ids     map[string]int32
	null    int32 // NULL's id, -1 until seen
	keys    []string
	nums    []float64
}

// show is a value as a report shows it: NULL, or quoted when needed.
func (d *dict) show(id int32) string {
	if id == d.null || d.numeric {
		return d.keys[id]
	}
	return showText(d.keys[id])
}

// id interns v.
func (d *dict) id(v any) (int32, error) {
	if v == nil {
		if d.null < 0 {
			d.null = d.add("NULL", math.NaN())
		}
		return d.null, nil
	}
	var key string
	num := math.NaN()
	if d.numeric {
		var ok bool
		if key, num, ok = numberKey(v); !ok {
			return 0, fmt.Errorf("%v is not a number", v)
		}
	} else {
		key = text(v)
	}
	if id, ok := d.ids[key]; ok {
		return id, nil
	}
	id := d.add(key, num)
	d.ids[key] = id
	return id, nil
}

func (d *dict) add(key string, num float64) int32 {
	d.keys, d.nums = append(d.keys, key), append(d.nums, num)
	return int32(len(d.keys) - 1)
}

// ranks orders the ids: NULL last, numbers by value, text by its bytes.
func (d *dict) ranks() []int32 {
	order := make([]int32, len(d.keys))
	for i := range order {
		order[i] = int32(i)
	}
	sort.Slice(order, func(a, b int) bool {
		x, y := order[a], order[b]
		switch {
		case x == d.null || y == d.null:
			return y == d.null && x != y
		case d.numeric && d.nums[x] != d.nums[y]:
			return d.nums[x] < d.nums[y]
		}
		return d.keys[x] < d.keys[y]
	})
	rank := make([]int32, len(order))
	for r, id := range order {
		rank[id] = int32(r)
	}
	return rank
}

// numberKey reads a number: its key (equal numbers have equal keys,
// however written) and value.
func numberKey(v any) (string, float64, bool) {
	const exact = 1 << 53
	switch x := v.(type) {
	case int64:
		if x > exact || x < -exact {
			return strconv.FormatInt(x, 10), float64(x), true
		}
		return floatKey(float64(x))
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return "", 0, false
		}
		return floatKey(x)
	case string, sqltypes.Decimal:
		s := strings.TrimSpace(text(v))
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return numberKey(i)
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return numberKey(f)
		}
	}
	return "", 0, false
}

func floatKey(f float64) (string, float64, bool) {
	if f == 0 {
		f = 0 // no -0
	}
	return strconv.FormatFloat(f, 'g', -1, 64), f, true
}

// text is a value's text.
func text(v any) string {
	if t, ok := v.(time.Time); ok { // a date when it is midnight
		return strings.TrimSuffix(t.Format("2006-01-02 15:04:05.999999999"), " 00:00:00")
	}
	return fmt.Sprint(v)
}

// showText quotes a text value that would read ambiguously in a report.
func showText(s string) string {
	if s == "" || strings.EqualFold(s, "NULL") || s == "*" || strings.ContainsAny(s, ",=\"'") ||
		strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) >= 0 {
		return strconv.Quote(s)
	}
	return s
}

// bin is a sensitive value's position in order and its count.
type bin struct {
	pos int32
	n   int64
}

// histogram is a sparse distribution, by position.
type histogram map[int32]int64

func (h histogram) sorted() []bin {
	out := make([]bin, 0, len(h))
	for p, n := range h {
		out = append(out, bin{p, n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].pos < out[j].pos })
	return out
}

// superset is a superset's distribution ready for distances: its values'
// positions and counts, and for the ordered EMD, with C_l the count up
// to pos_l and w_l = pos_{l+1} − pos_l (pos_L = m), the prefix sums
// wsum[l] = Σ_{t<l} w_t and cws[l] = Σ_{t<l} C_t·w_t.
type superset struct {
	size      int64
	pos       []int32
	n, cum    []int64
	wsum, cws []float64
}

func newSuperset(h histogram, size int64, m int) *superset {
	bins := h.sorted()
	s := &superset{size: size, pos: make([]int32, len(bins)), n: make([]int64, len(bins)), cum: make([]int64, len(bins)),
		wsum: make([]float64, len(bins)+1), cws: make([]float64, len(bins)+1)}
	var c int64
	for l, b := range bins {
		c += b.n
		next := int32(m)
		if l+1 < len(bins) {
			next = bins[l+1].pos
		}
		w := float64(next - b.pos)
		s.pos[l], s.n[l], s.cum[l] = b.pos, b.n, c
		s.wsum[l+1], s.cws[l+1] = s.wsum[l]+w, s.cws[l]+float64(c)*w
	}
	return s
}

// distance is the distance from P (counts p of np records, some of the
// superset's) to the superset's Q, over m sensitive values in order;
// ordered selects the ordered EMD. It takes O(|P| log |Q|): Q matters
// only where P has values, and where P's running count c is constant over
// Q's steps [a, e), Σ |c·nq − C_l·np|·w_l splits where C_l·np reaches
// c·nq into two sums that the prefix sums give.
func (s *superset) distance(d Distance, ordered bool, m int, p []bin, np int64) float64 {
	if d == EMD && !ordered {
		d = Variational
	}
	nq := s.size
	at := make([]int, len(p)) // the step of Q at each value of P
	for k, b := range p {
		at[k] = sort.Search(len(s.pos), func(l int) bool { return s.pos[l] >= b.pos })
	}
	switch d {
	case Variational:
		// Σ over all values of |p_i·nq − q_i·np|: where P has none, q_i·np.
		den := float64(np) * float64(nq)
		sum := den
		for k, b := range p {
			q := s.n[at[k]] * np
			sum += math.Abs(float64(b.n*nq-q)) - float64(q)
		}
		return sum / (2 * den)
	case KL:
		var sum float64
		for k, b := range p {
			sum += float64(b.n) / float64(np) * math.Log(float64(b.n*nq)/float64(s.n[at[k]]*np))
		}
		return sum
	}
	if m <= 1 {
		return 0
	}
	var sum, c float64
	if len(p) > 0 { // Q's steps before P's first value: |0 − C_l·np|
		sum = float64(np) * s.cws[at[0]]
	}
	for k, b := range p {
		c += float64(b.n)
		a, e := at[k], len(s.pos)
		if k+1 < len(p) {
			e = at[k+1]
		}
		target := c * float64(nq)
		split := a + sort.Search(e-a, func(l int) bool { return float64(s.cum[a+l])*float64(np) >= target })
		sum += target*(s.wsum[split]-s.wsum[a]) - float64(np)*(s.cws[split]-s.cws[a]) +
			float64(np)*(s.cws[e]-s.cws[split]) - target*(s.wsum[e]-s.wsum[split])
	}
	return max(0, sum/(float64(np)*float64(nq)*float64(m-1))) // no −0 from rounding
}

// class is a class being audited.
type class struct {
	ids  []int32
	size int64
	hist histogram
	bins []bin
	best float64
	mask int // suppressed quasi-identifiers of the nearest superset, -1: none
	sup  int64
}

// Closeness audits t for (n, ε)-closeness (see ClosenessOptions): for
// every class, the nearest superset of at least n records.
func Closeness(t *ClosenessTable, opts ClosenessOptions) (*ClosenessReport, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts.Distance, _ = ParseDistance(cmp.Or(string(opts.Distance), string(EMD)))
	if t.Numeric != nil && len(t.Numeric) != len(t.Columns) {
		return nil, fmt.Errorf("%s: %d columns but %d numeric flags", t.Name, len(t.Columns), len(t.Numeric))
	}
	k := len(opts.Quasi)
	cols := make([]int, k+1)
	dicts := make([]*dict, k+1)
	for i, name := range opts.Columns() {
		c := tableColumn(t.Columns, name)
		if c < 0 {
			return nil, fmt.Errorf("%s: no such column %q (its columns: %s)", t.Name, name, strings.Join(t.Columns, ", "))
		}
		cols[i] = c
		dicts[i] = &dict{numeric: t.Numeric != nil && t.Numeric[c], ids: map[string]int32{}, null: -1}
	}
	r := &ClosenessReport{Table: t.Name, Options: opts, Records: len(t.Rows), QuasiNulls: make([]int, k), NumericSensitive: dicts[k].numeric}

	// Intern the values; gather the classes and their sensitive counts.
	var classes []*class
	index := map[string]int{}
	key := make([]byte, 4*k)
	ids := make([]int32, k)
	var sid int32
	for n, row := range t.Rows {
		if len(row) != len(t.Columns) {
			return nil, fmt.Errorf("%s: row %d has %d values, want %d", t.Name, n+1, len(row), len(t.Columns))
		}
		for i := 0; i <= k; i++ {
			id, err := dicts[i].id(row[cols[i]])
			if err != nil {
				return nil, fmt.Errorf("%s: row %d: column %s is numeric, but %w", t.Name, n+1, t.Columns[cols[i]], err)
			}
			if i < k {
				ids[i] = id
				binary.LittleEndian.PutUint32(key[4*i:], uint32(id))
				if id == dicts[i].null {
					r.QuasiNulls[i]++
				}
			} else if sid = id; id == dicts[k].null {
				r.SensitiveNulls++
			}
		}
		c, ok := index[string(key)]
		if !ok {
			c = len(classes)
			index[string(key)] = c
			classes = append(classes, &class{ids: append([]int32(nil), ids...), hist: histogram{}, best: math.Inf(1), mask: -1})
		}
		classes[c].size++
		classes[c].hist[sid]++
	}
	rank := dicts[k].ranks()
	m := len(rank)
	r.SensitiveValues = m
	for _, c := range classes {
		h := histogram{}
		for id, n := range c.hist {
			h[rank[id]] += n
		}
		c.hist, c.bins = nil, h.sorted()
	}

	nearest(classes, k, int64(opts.N), m, func(p []bin, np int64, q *superset) float64 {
		return q.distance(opts.Distance, r.NumericSensitive, m, p, np)
	})

	qranks := make([][]int32, k)
	for i := range qranks {
		qranks[i] = dicts[i].ranks()
	}
	sort.SliceStable(classes, func(a, b int) bool {
		x, y := classes[a], classes[b]
		if x.best != y.best {
			return x.best > y.best
		}
		for i := 0; i < k; i++ {
			if rx, ry := qranks[i][x.ids[i]], qranks[i][y.ids[i]]; rx != ry {
				return rx < ry
			}
		}
		return false
	})
	for _, c := range classes {
		out := ClosenessClass{Size: int(c.size), Distance: c.best, SupersetSize: int(c.sup), Values: make([]string, k)}
		out.Pass = c.mask >= 0 && c.best <= opts.Epsilon+closenessSlack
		for i := 0; i < k; i++ {
			out.Values[i] = dicts[i].show(c.ids[i])
			if c.mask > 0 && c.mask&(1<<i) != 0 {
				out.Suppressed = append(out.Suppressed, opts.Quasi[i])
			}
		}
		r.Classes = append(r.Classes, out)
	}
	return r, nil
}

// nearest finds each class's nearest superset of at least n records. A
// class of n records passes as it is; the others are compared with each
// superset of n records, fewest quasi-identifiers suppressed first, so
// that a tie goes to the most specific superset.
func nearest(classes []*class, k int, n int64, m int, dist func(p []bin, np int64, q *superset) float64) {
	var records int64
	small := false
	for _, c := range classes {
		records += c.size
		if c.size >= n {
			c.best, c.mask, c.sup = 0, 0, c.size
		} else {
			small = true
		}
	}
	if !small || records < n {
		return
	}
	key := make([]byte, 4*k)
	for suppressed := 1; suppressed <= k; suppressed++ {
		for mask := 1; mask < 1<<k; mask++ {
			if bits.OnesCount(uint(mask)) != suppressed {
				continue
			}
			// The supersets of this mask: the classes grouped by the
			// quasi-identifiers it keeps.
			groups := map[string]int{}
			var sizes []int64
			var hists []histogram
			of := make([]int, len(classes))
			for ci, c := range classes {
				for i := 0; i < k; i++ {
					v := uint32(c.ids[i])
					if mask&(1<<i) != 0 {
						v = math.MaxUint32
					}
					binary.LittleEndian.PutUint32(key[4*i:], v)
				}
				g, ok := groups[string(key)]
				if !ok {
					g = len(sizes)
					groups[string(key)] = g
					sizes, hists = append(sizes, 0), append(hists, histogram{})
				}
				of[ci] = g
				sizes[g] += c.size
				for _, b := range c.bins {
					hists[g][b.pos] += b.n
				}
			}
			prepared := make([]*superset, len(sizes))
			for ci, c := range classes {
				if g := of[ci]; c.size < n && sizes[g] >= n {
					if prepared[g] == nil {
						prepared[g] = newSuperset(hists[g], sizes[g], m)
					}
					if d := dist(c.bins, c.size, prepared[g]); d < c.best {
						c.best, c.mask, c.sup = d, mask, sizes[g]
					}
				}
			}
		}
	}
}

// tableColumn is the index of the column named name (an exact match
// first, then any case), or -1.
func tableColumn(columns []string, name string) int {
	if i := slices.Index(columns, name); i >= 0 {
		return i
	}
	return slices.IndexFunc(columns, func(c string) bool { return strings.EqualFold(c, name) })
}

// numericType says a database type holds numbers.
func numericType(t sqltypes.Type) bool {
	switch t {
	case sqltypes.Int2, sqltypes.Int4, sqltypes.Int8, sqltypes.Float4, sqltypes.Float8, sqltypes.Numeric:
		return true
	}
	return false
}

// LoadClosenessTable reads columns of a table through be (SELECT
// columns FROM table, identifiers quoted for kind); schema "" is the
// connection's default. A column is numeric when the database declares
// it a number.
func LoadClosenessTable(ctx context.Context, be backend.Backend, kind config.BackendKind, schema, name string, columns []string) (*ClosenessTable, error) {
	q := quoterFor(kind)
	info, err := be.DescribeTable(ctx, schema, name)
	if errors.Is(err, backend.ErrNoSuchTable) {
		return nil, fmt.Errorf("no table %s in the database", q.table(schema, name))
	} else if err != nil {
		return nil, fmt.Errorf("describing %s: %w", name, err)
	}
	t := &ClosenessTable{Name: name}
	selected := make([]string, len(columns))
	for i, c := range columns {
		col, ok := findColumn(info, c)
		if !ok {
			return nil, fmt.Errorf("%s: no such column in %s (its columns: %s)", c, name, columnNames(info))
		}
		t.Columns = append(t.Columns, col.Name)
		t.Numeric = append(t.Numeric, numericType(col.Type))
		selected[i] = q(col.Name)
	}
	rows, err := be.Query(ctx, fmt.Sprintf("SELECT %s FROM %s", strings.Join(selected, ", "), q.table(schema, name)))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	t.Rows = rows.Values
	return t, nil
}

// ReadClosenessCSV reads columns of a CSV file whose first row names its
// columns (name names the table in the report). An empty field is NULL.
// A column is numeric when it has a value and every value is a finite
// number.
func ReadClosenessCSV(r io.Reader, name string, columns []string) (*ClosenessTable, error) {
	cr := csv.NewReader(r)
	header, err := cr.Read()
	if err == io.EOF {
		return nil, fmt.Errorf("%s: empty, with no header row", name)
	} else if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	for i := range header {
		header[i] = strings.TrimSpace(header[i])
	}
	header[0] = strings.TrimPrefix(header[0], "\ufeff")
	t := &ClosenessTable{Name: name, Numeric: make([]bool, len(columns))}
	at := make([]int, len(columns))
	for i, c := range columns {
		at[i] = tableColumn(header, c)
		if at[i] < 0 {
			return nil, fmt.Errorf("%s: no such column %q (the header has: %s)", name, c, strings.Join(header, ", "))
		}
		for j, h := range header {
			if j != at[i] && strings.EqualFold(h, header[at[i]]) {
				return nil, fmt.Errorf("%s: the header names %q twice", name, h)
			}
		}
		t.Columns = append(t.Columns, header[at[i]])
	}
	values, numbers := make([]int, len(columns)), make([]int, len(columns))
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		row := make([]any, len(columns))
		for i, j := range at {
			v := rec[j]
			if strings.TrimSpace(v) == "" {
				continue // NULL
			}
			row[i] = v
			values[i]++
			if _, _, ok := numberKey(v); ok {
				numbers[i]++
			}
		}
		t.Rows = append(t.Rows, row)
	}
	for i := range t.Numeric {
		t.Numeric[i] = values[i] > 0 && numbers[i] == values[i]
	}
	return t, nil
}
