package admin

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"html/template"
	"image/color"
	"net/http"
	"sort"
	"time"

	"github.com/dpproxy/dpproxy/budget"
	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/session"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// The budget page (GET /): every budget — analysts, teams, tables — with
// its spending, ε charged over time as a chart, and the recent statements
// and refusals. It is one HTML document with its chart inline (SVG) and
// its style in the page: no external asset, so that it works where the
// admin listener is reachable and nothing else is.

//go:embed page.html
var pageHTML string

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"eps": func(v float64) string { return fmt.Sprintf("%.4g", v) },
	"ms":  func(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d.Microseconds())/1000) },
	"at":  func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05") },
	"pct": func(st budget.Status) string {
		if st.Limit.Epsilon <= 0 {
			return "0"
		}
		return fmt.Sprintf("%.0f", min(100, 100*st.Spent.Epsilon/st.Limit.Epsilon))
	},
}).Parse(pageHTML))

// chargesPerAnalyst bounds the charges read per analyst for the chart.
const chargesPerAnalyst = 5000

// budgetRow is one budget on the page.
type budgetRow struct {
	Scope, Name string
	Status      budget.Status
}

type pageData struct {
	Now                  time.Time
	Budgets              []budgetRow
	Chart                template.HTML
	Statements, Refusals []session.Statement
}

func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	data := pageData{Now: time.Now()}
	pol, acct := s.opts.Policy(), s.opts.Accountant
	for _, a := range pol.Analysts {
		if st, ok := acct.Status(a.Name); ok {
			data.Budgets = append(data.Budgets, budgetRow{"analyst", a.Name, st})
		}
	}
	for _, t := range pol.Teams {
		if st, ok := acct.TeamStatus(t.Name); ok {
			data.Budgets = append(data.Budgets, budgetRow{"team", t.Name, st})
		}
	}
	for _, t := range pol.ProtectedTables {
		if st, ok := acct.TableStatus(t.Name); ok && t.Budget != nil {
			data.Budgets = append(data.Budgets, budgetRow{"table", t.Name, st})
		}
	}
	chart, err := spendingChart(r.Context(), pol, acct, data.Now)
	if err != nil {
		s.opts.Logger.Warn("admin: the spending chart", "err", err)
	}
	data.Chart = chart
	if s.opts.Recent != nil {
		data.Statements, data.Refusals = s.opts.Recent.Snapshot()
	}
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, data); err != nil {
		http.Error(w, "rendering the page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:")
	w.Write(buf.Bytes())
}

// palette colours the analysts' lines.
var palette = []color.RGBA{{31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {214, 39, 40, 255}, {148, 103, 189, 255}, {140, 86, 75, 255}, {227, 119, 194, 255}, {127, 127, 127, 255}}

// spendingChart draws each analyst's ε charged so far against time (the
// sum of the charges' ε; an advanced or zCDP account spends less) as an
// inline SVG; "" when nothing was charged yet.
func spendingChart(ctx context.Context, pol *config.Policy, acct *budget.Accountant, now time.Time) (template.HTML, error) {
	p := plot.New()
	p.X.Label.Text = "time (UTC)"
	p.Y.Label.Text = "ε (sum of charges)"
	p.X.Tick.Marker = plot.TimeTicks{Format: "01-02\n15:04", Time: func(t float64) time.Time { return time.Unix(int64(t), 0).UTC() }}
	p.Legend.Top, p.Legend.Left = true, true
	lines := 0
	names := make([]string, 0, len(pol.Analysts))
	for _, a := range pol.Analysts {
		names = append(names, a.Name)
	}
	sort.Strings(names)
	for _, name := range names {
		charges, err := acct.Charges(ctx, name, chargesPerAnalyst)
		if err != nil {
			return "", err
		}
		if len(charges) == 0 {
			continue
		}
		// A step up at each charge, from 0 before the first to now.
		pts := make(plotter.XYs, 0, len(charges)+2)
		pts = append(pts, plotter.XY{X: float64(charges[len(charges)-1].At.Unix()), Y: 0})
		total := 0.0
		for i := len(charges) - 1; i >= 0; i-- { // oldest first
			total += charges[i].Cost.Epsilon
			pts = append(pts, plotter.XY{X: float64(charges[i].At.Unix()), Y: total})
		}
		pts = append(pts, plotter.XY{X: float64(now.Unix()), Y: total})
		line, err := plotter.NewLine(pts)
		if err != nil {
			return "", err
		}
		line.StepStyle = plotter.PostStep
		line.Color = palette[lines%len(palette)]
		line.Width = vg.Points(1.5)
		p.Add(line)
		p.Legend.Add(name, line)
		lines++
	}
	if lines == 0 {
		return "", nil
	}
	p.Y.Min = 0
	wt, err := p.WriterTo(8*vg.Inch, 3.5*vg.Inch, "svg")
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return "", err
	}
	// The SVG is gonum/plot's own rendering of numbers and analyst names
	// (escaped by its encoder), safe to inline.
	return template.HTML(stripXMLHeader(buf.Bytes())), nil
}

// stripXMLHeader drops the XML declaration and doctype before <svg, which
// an HTML document does not take.
func stripXMLHeader(b []byte) []byte {
	if i := bytes.Index(b, []byte("<svg")); i > 0 {
		return b[i:]
	}
	return b
}
