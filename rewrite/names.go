package rewrite

import "strconv"

// The names the emitter gives its own columns and derived tables
// (dp_u, dp_v0, dp_units, ...) are written, and quoted for each dialect,
// once rather than for every query: the bounding query alone names dozens
// of them.

// internalNames are the emitter's unnumbered names.
var internalNames = []string{
	"dp_b", "dp_c", "dp_cells", "dp_clip", "dp_drawn", "dp_gn", "dp_in", "dp_k", "dp_kept", "dp_m",
	"dp_n", "dp_numbered", "dp_one", "dp_people", "dp_r", "dp_ranked", "dp_rows", "dp_t", "dp_u",
	"dp_unit_groups", "dp_units", "dp_v", "dp_vn", "dp_x",
}

// numberedPrefixes are the prefixes of the emitter's numbered names
// (dp_v0, dp_g1, ...); the first numberedCached of each are written once.
var numberedPrefixes = []string{"dp_c", "dp_g", "dp_nn", "dp_q", "dp_r", "dp_rs", "dp_s", "dp_v", "dp_x", "dp_xt"}

const numberedCached = 16

var numberedNames = func() map[string]*[numberedCached]string {
	m := make(map[string]*[numberedCached]string, len(numberedPrefixes))
	for _, p := range numberedPrefixes {
		var names [numberedCached]string
		for i := range names {
			names[i] = p + strconv.Itoa(i)
		}
		m[p] = &names
	}
	return m
}()

// columnName is prefix followed by i: dp_v0, dp_g1, ...
func columnName(prefix string, i int) string {
	if names, ok := numberedNames[prefix]; ok && i >= 0 && i < numberedCached {
		return names[i]
	}
	return prefix + strconv.Itoa(i)
}

// quotedInternal maps each internal name, numbered ones included, to its
// quoted form under quote.
func quotedInternal(quote func(string) string) map[string]string {
	m := make(map[string]string, len(internalNames)+len(numberedPrefixes)*numberedCached)
	for _, n := range internalNames {
		m[n] = quote(n)
	}
	for _, names := range numberedNames {
		for _, n := range names {
			m[n] = quote(n)
		}
	}
	return m
}

var (
	ansiQuoted  = quotedInternal(quoteANSI)
	mysqlQuoted = quotedInternal(quoteMySQL)
)
