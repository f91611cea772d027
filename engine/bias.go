package engine

import (
	"fmt"
	"math"
	"strings"

	"github.com/dpproxy/dpproxy/mechanisms"
	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// biasNotice releases the bias report (rewrite.BiasReport): the counts
// with discrete Laplace noise at the report's ε over the vector's L1
// sensitivity, then the shares as post-processing.
func biasNotice(plan *rewrite.Plan, data bounded, r *mechanisms.Rand) (string, error) {
	b := plan.Bias
	lap, err := mechanisms.NewLaplace(b.Epsilon, b.Sensitivity)
	if err != nil {
		return "", &sqlerr.Error{Code: sqlerr.PrivacyParameterError, Message: fmt.Sprintf("cannot calibrate the bias report: %v", err), Err: err}
	}
	exact := make([]int64, 1+len(b.Labels))
	if data.bias != nil && len(data.bias.Values) > 0 {
		for i := range exact {
			if i < len(data.bias.Values[0]) {
				exact[i] = int64(math.Round(sqltypes.Float(data.bias.Values[0][i])))
			}
		}
	}
	noisy := make([]float64, len(exact))
	for i, x := range exact {
		n, err := lap.AddNoiseInt(r, x)
		if err != nil {
			return "", &sqlerr.Error{Code: sqlerr.InternalError, Message: "noise generation failed; no answer was released", Err: err}
		}
		noisy[i] = float64(n)
	}
	people := math.Max(1, noisy[0])
	parts := make([]string, len(b.Labels))
	for i, label := range b.Labels {
		share := math.Min(1, math.Max(0, noisy[i+1]/people))
		parts[i] = fmt.Sprintf("%s: about %.1f %%", label, 100*share)
	}
	unit, effect := "people", "bounding drops or weights down their extra rows and clamps their values"
	switch {
	case plan.Table.IsRowPrivacy():
		unit, effect = "rows", "bounding clamps their values"
	case plan.OneRowPerUnit:
		effect = "each is one row, so bounding only clamps their values"
	}
	return fmt.Sprintf("dpproxy: bias report (DP estimates at ε = %.3g, ±%.0f %s each at 95 %%), share of the %s counted with %s; %s, which the answer's error bounds do not cover",
		b.Epsilon, lap.ErrorBound(0.95), unit, unit, strings.Join(parts, "; "), effect), nil
}
