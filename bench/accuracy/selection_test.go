package main

import (
	"strings"
	"testing"

	"github.com/dpproxy/dpproxy/config"
)

// The demo policy's selection table: thresholding releases groups of
// 20 people at ε = 1 (the issue: groups of 13–24 were almost never
// released), and never less readily than the previous rule where either
// releases them with a probability that matters.
func TestSelectionTable(t *testing.T) {
	pol, err := config.Load("../../cmd/dpproxy/demo_policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := selectionRows(pol, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		for i, n := range selectionSizes {
			if r.Now[i] < r.Old[i] && r.Old[i] >= 0.01 { // below 1 %: δ-sized tails of either rule
				t.Errorf("%s: a group of %d is released with probability %.3f now, %.3f before", r.Query, n, r.Now[i], r.Old[i])
			}
			if n == 20 && strings.Contains(r.Query, "patients") && r.Now[i] < 0.9 {
				t.Errorf("%s: a group of 20 people is released with probability %.3f at ε = 1", r.Query, r.Now[i])
			}
		}
		if !strings.HasPrefix(r.Rule, "threshold") {
			t.Errorf("%s does not threshold its count: %s", r.Query, r.Rule)
		}
	}
}
