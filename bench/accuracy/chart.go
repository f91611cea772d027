package main

import (
	"errors"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// A log-log line chart drawn with gonum/plot: one colour per series, an
// optional dashed second line per series (explain's bound) and a legend.

type series struct {
	name  string
	col   color.RGBA
	xs    []float64
	ys    []float64
	lower []float64 // optional: a dashed second line (explain's bound)
}

// The PNG is 960×640 pixels (vgimg renders at 96 dpi).
const chartWidth, chartHeight = 10 * vg.Inch, 20 * vg.Inch / 3

var boundDashes = []vg.Length{vg.Points(6), vg.Points(4)}

// drawChart writes a log-log chart of the series to path (a .png). The x
// axis is labelled at xticks (the measured ε values).
func drawChart(path, title, xlabel, ylabel string, xticks []float64, ss []series) error {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(14)
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.X.Tick.Marker = plot.TickerFunc(func(min, max float64) []plot.Tick {
		var ts []plot.Tick
		for _, t := range (plot.LogTicks{}).Ticks(min, max) {
			ts = append(ts, plot.Tick{Value: t.Value}) // minor ticks only
		}
		for _, x := range xticks {
			ts = append(ts, plot.Tick{Value: x, Label: strconv.FormatFloat(x, 'f', -1, 64)})
		}
		return ts
	})
	p.Legend.Top = true
	p.Legend.ThumbnailWidth = vg.Points(36)
	p.Legend.XOffs, p.Legend.YOffs = -vg.Points(8), -vg.Points(4)
	p.Add(plotter.NewGrid())

	xmin, xmax := math.Inf(1), math.Inf(-1)
	ymin, ymax := math.Inf(1), math.Inf(-1)
	widen := func(xys plotter.XYs) {
		for _, pt := range xys {
			xmin, xmax = math.Min(xmin, pt.X), math.Max(xmax, pt.X)
			ymin, ymax = math.Min(ymin, pt.Y), math.Max(ymax, pt.Y)
		}
	}
	hasBound := false
	for _, s := range ss {
		pts := positive(s.xs, s.ys)
		if len(pts) == 0 {
			continue
		}
		widen(pts)
		line, dots, err := plotter.NewLinePoints(pts)
		if err != nil {
			return err
		}
		line.Color, line.Width = s.col, vg.Points(2)
		dots.Color, dots.Shape, dots.Radius = s.col, draw.CircleGlyph{}, vg.Points(3.5)
		p.Add(line, dots)
		p.Legend.Add(s.name, line, dots)

		if bound := positive(s.xs, s.lower); len(bound) > 0 {
			widen(bound)
			bl, err := plotter.NewLine(bound)
			if err != nil {
				return err
			}
			bl.Color, bl.Width, bl.Dashes = s.col, vg.Points(1.5), boundDashes
			p.Add(bl)
			hasBound = true
		}
	}
	if math.IsInf(xmin, 1) {
		return errors.New("chart: no positive points to draw on log axes")
	}
	if hasBound {
		key := &plotter.Line{LineStyle: draw.LineStyle{Color: color.Black, Width: vg.Points(1.5), Dashes: boundDashes}}
		p.Legend.Add("explain 95% bound / truth", key)
	}

	// A little room either side on x; whole decades on y so that both ends
	// carry a LogTicks label.
	p.X.Min, p.X.Max = xmin/1.15, xmax*1.15
	p.Y.Min = math.Pow(10, math.Floor(math.Log10(ymin)))
	p.Y.Max = math.Pow(10, math.Ceil(math.Log10(ymax)))
	if p.Y.Max == p.Y.Min {
		p.Y.Max *= 10
	}
	return p.Save(chartWidth, chartHeight, path)
}

// positive pairs xs with ys (nil ys gives none), dropping points a log
// scale cannot show (non-positive or non-finite).
func positive(xs, ys []float64) plotter.XYs {
	var pts plotter.XYs
	for i := range ys {
		x, y := xs[i], ys[i]
		if x > 0 && y > 0 && !math.IsInf(x, 0) && !math.IsInf(y, 0) {
			pts = append(pts, plotter.XY{X: x, Y: y})
		}
	}
	return pts
}
