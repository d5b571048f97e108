// Command scaleplot draws the scale scenario's claims Available over time, one line per run,
// from the CSVs TestScale writes (<output>/scale/claims-<n>.csv or namespaced-<n>.csv: claim,
// created_s, available_s), into a PNG for docs/performance.md; with -serves, what one replica
// serves against bare memcached, per mode, from the CSV TestNodeServesLikeBareMemcached writes. It is its own module so that the
// plotting library (gonum.org/v1/plot) stays out of the product's dependencies.
//
//	go run . -o scale.png claims-200.csv claims-1000.csv claims-3000.csv
package main

import (
	"encoding/csv"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

func main() {
	out := flag.String("o", "scale.png", "the PNG to write")
	title := flag.String("title", "Claims Available after the first create", "the plot's title")
	bars := flag.Bool("serves", false, "draw TestNodeServesLikeBareMemcached's CSV (one) as bars instead")
	flag.Parse()
	if *bars {
		if flag.NArg() != 1 {
			fmt.Fprintln(os.Stderr, "usage: scaleplot -serves [-o file.png] [-title …] serves.csv")
			os.Exit(2)
		}
		if err := drawBars(*out, *title, flag.Arg(0)); err != nil {
			fmt.Fprintln(os.Stderr, "scaleplot:", err)
			os.Exit(1)
		}
		return
	}
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: scaleplot [-o file.png] claims-<n>.csv...")
		os.Exit(2)
	}
	if err := draw(*out, *title, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "scaleplot:", err)
		os.Exit(1)
	}
}

// A run is one scale run: when each of its claims first became Available, in seconds after
// the first create, in order.
type run struct {
	name      string
	available []float64
}

// draw plots each CSV's claims Available over time as a step line into out.
func draw(out, title string, files []string) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "seconds after the first create"
	p.Y.Label.Text = "claims Available"
	p.Legend.Top, p.Legend.Left = true, true
	for i, f := range files {
		r, err := read(f)
		if err != nil {
			return err
		}
		pts := make(plotter.XYs, 0, len(r.available)+1)
		pts = append(pts, plotter.XY{X: 0, Y: 0})
		for j, s := range r.available {
			pts = append(pts, plotter.XY{X: s, Y: float64(j + 1)})
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		l.StepStyle = plotter.PostStep
		l.Color = plotutil.Color(i)
		l.Width = vg.Points(2)
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("%s (median %.0f s, p90 %.0f s)", r.name, quantile(r.available, 0.5), quantile(r.available, 0.9)), l)
	}
	p.Add(plotter.NewGrid())
	return p.Save(8*vg.Inch, 5*vg.Inch, out)
}

// read reads a TestScale CSV; the run is named after its count and kind: claims-<n>.csv
// holds claims, namespaced-<n>.csv v2 namespaced XRs; anything after <n> is a note on the run.
func read(file string) (run, error) {
	f, err := os.Open(file) //nolint:gosec // a file the user names
	if err != nil {
		return run{}, err
	}
	defer f.Close() //nolint:errcheck // read only
	return parse(filepath.Base(file), f)
}

func parse(file string, r io.Reader) (run, error) {
	rows, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return run{}, fmt.Errorf("%s: %w", file, err)
	}
	if len(rows) < 2 || strings.Join(rows[0], ",") != "claim,created_s,available_s" {
		return run{}, fmt.Errorf("%s: want the header claim,created_s,available_s and at least one claim", file)
	}
	what := "claims"
	if strings.HasPrefix(file, "namespaced-") {
		what = "namespaced XRs"
	}
	out := run{name: fmt.Sprintf("%d %s", len(rows)-1, what)}
	// A suffix after the count says what the run changed: claims-1000-max-reconcile-rate-10.csv.
	if parts := strings.SplitN(strings.TrimSuffix(file, ".csv"), "-", 3); len(parts) == 3 {
		out.name += ", " + strings.ReplaceAll(parts[2], "-", " ")
	}
	for i, row := range rows[1:] {
		v, err := strconv.ParseFloat(row[2], 64)
		if err != nil || v < 0 {
			return run{}, fmt.Errorf("%s: line %d: available_s %q is not a number of seconds", file, i+2, row[2])
		}
		out.available = append(out.available, v)
	}
	sort.Float64s(out.available)
	return out, nil
}

// quantile is the q-quantile of sorted values, nearest rank, as TestScale reports it.
func quantile(sorted []float64, q float64) float64 {
	return sorted[int(float64(len(sorted))*q)]
}
