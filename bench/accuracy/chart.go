package main

import (
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"strconv"
	"strings"
)

// A log-log line chart drawn with the standard library only: axes, decade
// ticks, labels in a 5×7 bitmap font and a legend.

type series struct {
	name  string
	col   color.RGBA
	xs    []float64
	ys    []float64
	lower []float64 // optional: a dashed second line (explain's bound)
}

var glyphs = map[rune][7]string{
	'0': {"01110", "10001", "10011", "10101", "11001", "10001", "01110"},
	'1': {"00100", "01100", "00100", "00100", "00100", "00100", "01110"},
	'2': {"01110", "10001", "00001", "00010", "00100", "01000", "11111"},
	'3': {"11110", "00001", "00001", "01110", "00001", "00001", "11110"},
	'4': {"00010", "00110", "01010", "10010", "11111", "00010", "00010"},
	'5': {"11111", "10000", "11110", "00001", "00001", "10001", "01110"},
	'6': {"00110", "01000", "10000", "11110", "10001", "10001", "01110"},
	'7': {"11111", "00001", "00010", "00100", "01000", "01000", "01000"},
	'8': {"01110", "10001", "10001", "01110", "10001", "10001", "01110"},
	'9': {"01110", "10001", "10001", "01111", "00001", "00010", "01100"},
	'.': {"00000", "00000", "00000", "00000", "00000", "01100", "01100"},
	'-': {"00000", "00000", "00000", "11111", "00000", "00000", "00000"},
	'*': {"00000", "10101", "01110", "11111", "01110", "10101", "00000"},
	'+': {"00000", "00100", "00100", "11111", "00100", "00100", "00000"},
	'=': {"00000", "00000", "11111", "00000", "11111", "00000", "00000"},
	'(': {"00010", "00100", "01000", "01000", "01000", "00100", "00010"},
	')': {"01000", "00100", "00010", "00010", "00010", "00100", "01000"},
	',': {"00000", "00000", "00000", "00000", "01100", "00100", "01000"},
	':': {"00000", "01100", "01100", "00000", "01100", "01100", "00000"},
	'/': {"00001", "00010", "00010", "00100", "01000", "01000", "10000"},
	'%': {"11001", "11010", "00010", "00100", "01000", "01011", "10011"},
	'ε': {"00000", "00000", "01111", "10000", "11110", "10000", "01111"},
	' ': {"00000", "00000", "00000", "00000", "00000", "00000", "00000"},
	'A': {"01110", "10001", "10001", "11111", "10001", "10001", "10001"},
	'B': {"11110", "10001", "10001", "11110", "10001", "10001", "11110"},
	'C': {"01110", "10001", "10000", "10000", "10000", "10001", "01110"},
	'D': {"11100", "10010", "10001", "10001", "10001", "10010", "11100"},
	'E': {"11111", "10000", "10000", "11110", "10000", "10000", "11111"},
	'F': {"11111", "10000", "10000", "11110", "10000", "10000", "10000"},
	'G': {"01110", "10001", "10000", "10111", "10001", "10001", "01111"},
	'H': {"10001", "10001", "10001", "11111", "10001", "10001", "10001"},
	'I': {"01110", "00100", "00100", "00100", "00100", "00100", "01110"},
	'J': {"00111", "00010", "00010", "00010", "00010", "10010", "01100"},
	'K': {"10001", "10010", "10100", "11000", "10100", "10010", "10001"},
	'L': {"10000", "10000", "10000", "10000", "10000", "10000", "11111"},
	'M': {"10001", "11011", "10101", "10101", "10001", "10001", "10001"},
	'N': {"10001", "10001", "11001", "10101", "10011", "10001", "10001"},
	'O': {"01110", "10001", "10001", "10001", "10001", "10001", "01110"},
	'P': {"11110", "10001", "10001", "11110", "10000", "10000", "10000"},
	'Q': {"01110", "10001", "10001", "10001", "10101", "10010", "01101"},
	'R': {"11110", "10001", "10001", "11110", "10100", "10010", "10001"},
	'S': {"01111", "10000", "10000", "01110", "00001", "00001", "11110"},
	'T': {"11111", "00100", "00100", "00100", "00100", "00100", "00100"},
	'U': {"10001", "10001", "10001", "10001", "10001", "10001", "01110"},
	'V': {"10001", "10001", "10001", "10001", "10001", "01010", "00100"},
	'W': {"10001", "10001", "10001", "10101", "10101", "10101", "01010"},
	'X': {"10001", "10001", "01010", "00100", "01010", "10001", "10001"},
	'Y': {"10001", "10001", "01010", "00100", "00100", "00100", "00100"},
	'Z': {"11111", "00001", "00010", "00100", "01000", "10000", "11111"},
}

type canvas struct{ img *image.RGBA }

func (c canvas) set(x, y int, col color.RGBA) {
	if image.Pt(x, y).In(c.img.Rect) {
		c.img.SetRGBA(x, y, col)
	}
}

func (c canvas) rect(x0, y0, x1, y1 int, col color.RGBA) {
	for y := y0; y <= y1; y++ {
		for x := x0; x <= x1; x++ {
			c.set(x, y, col)
		}
	}
}

// line draws a line of the given width; dash > 0 draws dashes of that
// many pixels.
func (c canvas) line(x0, y0, x1, y1 float64, width int, col color.RGBA, dash int) {
	n := int(math.Max(math.Abs(x1-x0), math.Abs(y1-y0))) + 1
	for i := 0; i <= n; i++ {
		if dash > 0 && (i/dash)%2 == 1 {
			continue
		}
		t := float64(i) / float64(n)
		x := int(math.Round(x0 + t*(x1-x0)))
		y := int(math.Round(y0 + t*(y1-y0)))
		c.rect(x-width/2, y-width/2, x-width/2+width-1, y-width/2+width-1, col)
	}
}

// text draws s at (x, y) (top left) with each font pixel scale×scale.
func (c canvas) text(x, y int, s string, scale int, col color.RGBA) {
	for _, r := range strings.ToUpper(s) {
		g, ok := glyphs[r]
		if !ok {
			g = glyphs[' ']
		}
		for gy, row := range g {
			for gx, bit := range row {
				if bit == '1' {
					c.rect(x+gx*scale, y+gy*scale, x+gx*scale+scale-1, y+gy*scale+scale-1, col)
				}
			}
		}
		x += 6 * scale
	}
}

func textWidth(s string, scale int) int { return len([]rune(s)) * 6 * scale }

// textVertical draws s bottom-to-top with its baseline at x.
func (c canvas) textVertical(x, y int, s string, scale int, col color.RGBA) {
	for _, r := range strings.ToUpper(s) {
		g, ok := glyphs[r]
		if !ok {
			g = glyphs[' ']
		}
		for gy, row := range g {
			for gx, bit := range row {
				if bit == '1' {
					px, py := x+gy*scale, y-gx*scale
					c.rect(px, py-scale+1, px+scale-1, py, col)
				}
			}
		}
		y -= 6 * scale
	}
}

func decadeLabel(e int) string {
	switch e {
	case 0:
		return "1"
	case 1:
		return "10"
	case -1:
		return "0.1"
	case -2:
		return "0.01"
	}
	return "1E" + itoa(e)
}

func itoa(n int) string {
	if n < 0 {
		return "-" + itoa(-n)
	}
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// drawChart writes a log-log chart of the series to path.
func drawChart(path, title, xlabel, ylabel string, xticks []float64, ss []series) error {
	const W, H = 960, 640
	const left, right, top, bottom = 110, 250, 60, 80
	img := image.NewRGBA(image.Rect(0, 0, W, H))
	c := canvas{img}
	white := color.RGBA{255, 255, 255, 255}
	black := color.RGBA{0, 0, 0, 255}
	grey := color.RGBA{215, 215, 215, 255}
	c.rect(0, 0, W-1, H-1, white)

	xmin, xmax := math.Inf(1), math.Inf(-1)
	ymin, ymax := math.Inf(1), math.Inf(-1)
	for _, s := range ss {
		for i := range s.xs {
			xmin, xmax = math.Min(xmin, s.xs[i]), math.Max(xmax, s.xs[i])
			for _, y := range []float64{s.ys[i], at(s.lower, i)} {
				if y > 0 {
					ymin, ymax = math.Min(ymin, y), math.Max(ymax, y)
				}
			}
		}
	}
	lx0, lx1 := math.Log10(xmin)-0.05, math.Log10(xmax)+0.05
	ly0, ly1 := math.Floor(math.Log10(ymin)), math.Ceil(math.Log10(ymax))
	if ly1 == ly0 {
		ly1++
	}
	px := func(x float64) float64 { return left + (math.Log10(x)-lx0)/(lx1-lx0)*(W-left-right) }
	py := func(y float64) float64 { return float64(H-bottom) - (math.Log10(y)-ly0)/(ly1-ly0)*(H-top-bottom) }

	// Grid and ticks.
	for e := int(ly0); e <= int(ly1); e++ {
		y := py(math.Pow(10, float64(e)))
		c.line(left, y, W-right, y, 1, grey, 0)
		lbl := decadeLabel(e)
		c.text(left-10-textWidth(lbl, 2), int(y)-7, lbl, 2, black)
		for k := 2; k <= 9 && e < int(ly1); k++ {
			ym := py(float64(k) * math.Pow(10, float64(e)))
			c.line(left, ym, left+6, ym, 1, black, 0)
		}
	}
	for _, x := range xticks {
		X := px(x)
		c.line(X, top, X, H-bottom, 1, grey, 0)
		lbl := trimFloat(x)
		c.text(int(X)-textWidth(lbl, 2)/2, H-bottom+12, lbl, 2, black)
	}
	c.line(left, top, left, H-bottom, 2, black, 0)
	c.line(left, H-bottom, W-right, H-bottom, 2, black, 0)

	// Series.
	for _, s := range ss {
		for i := range s.xs {
			if i > 0 {
				c.line(px(s.xs[i-1]), py(s.ys[i-1]), px(s.xs[i]), py(s.ys[i]), 3, s.col, 0)
				if s.lower != nil {
					c.line(px(s.xs[i-1]), py(s.lower[i-1]), px(s.xs[i]), py(s.lower[i]), 2, s.col, 6)
				}
			}
			x, y := int(px(s.xs[i])), int(py(s.ys[i]))
			c.rect(x-4, y-4, x+4, y+4, s.col)
		}
	}

	// Labels and legend.
	c.text((W-textWidth(title, 2))/2, 20, title, 2, black)
	c.text(left+(W-left-right-textWidth(xlabel, 2))/2, H-bottom+42, xlabel, 2, black)
	c.textVertical(20, top+(H-top-bottom+textWidth(ylabel, 2))/2, ylabel, 2, black)
	lx, ly := W-right+20, top+10
	for _, s := range ss {
		c.line(float64(lx), float64(ly+7), float64(lx+30), float64(ly+7), 3, s.col, 0)
		c.text(lx+40, ly, s.name, 2, black)
		ly += 30
	}
	if len(ss) > 0 && ss[0].lower != nil {
		c.line(float64(lx), float64(ly+7), float64(lx+30), float64(ly+7), 2, black, 6)
		c.text(lx+40, ly, "EXPLAIN", 2, black)
		c.text(lx+40, ly+18, "95% BOUND", 2, black)
		c.text(lx+40, ly+36, "/ TRUTH", 2, black)
	}

	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := png.Encode(f, img); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func at(s []float64, i int) float64 {
	if s == nil {
		return 0
	}
	return s[i]
}

func trimFloat(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
