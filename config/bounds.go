package config

import (
	"fmt"
	"math"
	"strconv"

	"gopkg.in/yaml.v3"
)

// UnmarshalYAML decodes bounds written as [lo, hi]: a two-element list of
// finite numbers with lo ≤ hi.
func (b *Bounds) UnmarshalYAML(n *yaml.Node) error {
	n = resolveAlias(n)
	const want = "expected [lo, hi], a list of two numbers"
	if n.Kind != yaml.SequenceNode {
		return fmt.Errorf("%s; got %s", want, describe(n))
	}
	if len(n.Content) != 2 {
		return fmt.Errorf("%s; got a list of %d", want, len(n.Content))
	}
	var v [2]float64
	for i, e := range n.Content {
		f, err := number(e)
		if err != nil {
			return fmt.Errorf("%s; %s is %s", want, [2]string{"lo", "hi"}[i], describe(e))
		}
		v[i] = f
	}
	nb := Bounds{Lo: v[0], Hi: v[1]}
	if err := nb.check(); err != nil {
		return err
	}
	*b = nb
	return nil
}

// MarshalYAML writes the bounds as a flow list, [lo, hi].
func (b Bounds) MarshalYAML() (any, error) {
	scalar := func(f float64) *yaml.Node {
		return &yaml.Node{Kind: yaml.ScalarNode, Value: formatFloat(f)}
	}
	return &yaml.Node{
		Kind:    yaml.SequenceNode,
		Style:   yaml.FlowStyle,
		Content: []*yaml.Node{scalar(b.Lo), scalar(b.Hi)},
	}, nil
}

// check enforces finite bounds with lo ≤ hi.
func (b Bounds) check() error {
	for _, e := range []struct {
		name string
		v    float64
	}{{"lo", b.Lo}, {"hi", b.Hi}} {
		if math.IsInf(e.v, 0) || math.IsNaN(e.v) {
			return fmt.Errorf("%s (%s) is not finite; expected [lo, hi] with finite numbers", e.name, formatFloat(e.v))
		}
	}
	if b.Lo > b.Hi {
		return fmt.Errorf("lo (%s) is greater than hi (%s); expected [lo, hi] with lo ≤ hi", formatFloat(b.Lo), formatFloat(b.Hi))
	}
	return nil
}

// number decodes a YAML integer or float scalar.
func number(n *yaml.Node) (float64, error) {
	n = resolveAlias(n)
	if n.Kind != yaml.ScalarNode {
		return 0, fmt.Errorf("not a number")
	}
	switch n.ShortTag() {
	case "!!int", "!!float":
		var f float64
		if err := n.Decode(&f); err != nil {
			return 0, err
		}
		return f, nil
	}
	return 0, fmt.Errorf("not a number")
}

// formatFloat prints f in the shortest form that reads back exactly.
func formatFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	case math.IsNaN(f):
		return "NaN"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
