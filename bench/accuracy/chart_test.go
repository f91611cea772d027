package main

import (
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// TestDrawChartWritesReadablePNG draws synthetic series (error falling as
// 1/ε, with a dashed bound above each) and checks the PNG decodes at the
// expected size and actually has content in it.
func TestDrawChartWritesReadablePNG(t *testing.T) {
	eps := []float64{0.05, 0.1, 0.2, 0.5, 1, 2}
	colours := []color.RGBA{{31, 119, 180, 255}, {214, 39, 40, 255}, {44, 160, 44, 255}}
	var ss []series
	for i, name := range []string{"COUNT", "SUM", "AVG"} {
		s := series{name: name, col: colours[i]}
		scale := math.Pow(10, -float64(i)) / 5
		for _, e := range eps {
			s.xs = append(s.xs, e)
			s.ys = append(s.ys, scale/e)
			s.lower = append(s.lower, 2.5*scale/e)
		}
		ss = append(ss, s)
	}
	// A zero the log axes cannot show must be skipped, not panic.
	ss[2].ys[0] = 0

	path := filepath.Join(t.TempDir(), "accuracy.png")
	if err := drawChart(path, "Mean relative error vs ε (test)", "ε (log scale)", "mean relative error (log scale)", eps, ss); err != nil {
		t.Fatal(err)
	}
	// ACCURACY_CHART_OUT=/tmp/x.png keeps a copy to look at.
	if out := os.Getenv("ACCURACY_CHART_OUT"); out != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(out, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 960 || b.Dy() != 640 {
		t.Fatalf("size %dx%d, want 960x640", b.Dx(), b.Dy())
	}
	distinct := map[color.RGBA]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			distinct[color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)] = true
		}
	}
	if len(distinct) < 50 {
		t.Fatalf("only %d distinct colours: chart looks blank", len(distinct))
	}
	for _, c := range colours {
		if !distinct[c] {
			t.Errorf("series colour %v not drawn", c)
		}
	}
}

func TestDrawChartNothingToDraw(t *testing.T) {
	ss := []series{{name: "COUNT", xs: []float64{1}, ys: []float64{0}}}
	if err := drawChart(filepath.Join(t.TempDir(), "accuracy.png"), "t", "x", "y", []float64{1}, ss); err == nil {
		t.Fatal("want an error when no point is positive")
	}
}
