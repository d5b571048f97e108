package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// servesHeader is the header of the CSV TestNodeServesLikeBareMemcached writes: per mode, the
// median run's gets a second on the rendered pod and on the bare memcached.
const servesHeader = "mode,pod_gets_per_s,bare_gets_per_s"

// serves is one mode's figures.
type serves struct {
	mode      string
	pod, bare float64
}

// parseServes reads a TestNodeServesLikeBareMemcached CSV.
func parseServes(file string, r io.Reader) ([]serves, error) {
	rows, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if len(rows) < 2 || strings.Join(rows[0], ",") != servesHeader {
		return nil, fmt.Errorf("%s: want the header %s and at least one mode", file, servesHeader)
	}
	out := make([]serves, 0, len(rows)-1)
	for i, row := range rows[1:] {
		pod, err1 := strconv.ParseFloat(row[1], 64)
		bare, err2 := strconv.ParseFloat(row[2], 64)
		if err1 != nil || err2 != nil || pod < 0 || bare < 0 {
			return nil, fmt.Errorf("%s: line %d: %q and %q are not gets a second", file, i+2, row[1], row[2])
		}
		out = append(out, serves{mode: row[0], pod: pod, bare: bare})
	}
	return out, nil
}

// drawBars plots each mode's gets a second, the pod's bar beside the bare server's, into out.
func drawBars(out, title, file string) error {
	f, err := os.Open(file) //nolint:gosec // a file the user names
	if err != nil {
		return err
	}
	defer f.Close() //nolint:errcheck // read only
	rows, err := parseServes(file, f)
	if err != nil {
		return err
	}
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = "gets a second (median run)"
	pod, bare := make(plotter.Values, len(rows)), make(plotter.Values, len(rows))
	names := make([]string, len(rows))
	for i, r := range rows {
		pod[i], bare[i] = r.pod, r.bare
		names[i] = fmt.Sprintf("%s (%.2f)", r.mode, r.pod/r.bare)
	}
	w := vg.Points(24)
	for i, s := range []struct {
		name   string
		values plotter.Values
		offset vg.Length
	}{{"rendered pod", pod, -w / 2}, {"bare memcached, same arguments and CPU quota", bare, w / 2}} {
		b, err := plotter.NewBarChart(s.values, w)
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		b.Color, b.LineStyle.Width, b.Offset = plotutil.Color(i), 0, s.offset
		p.Add(b)
		p.Legend.Add(s.name, b)
	}
	top := 0.0
	for _, r := range rows {
		top = max(top, r.pod, r.bare)
	}
	// Room above the bars for the legend, and beside the outer ones.
	p.Y.Min, p.Y.Max = 0, top*1.3
	p.X.Min, p.X.Max = -0.6, float64(len(rows))-0.4
	p.Legend.Top, p.Legend.Left = true, true
	p.NominalX(names...)
	p.Add(plotter.NewGrid())
	return p.Save(8*vg.Inch, 4*vg.Inch, out)
}
