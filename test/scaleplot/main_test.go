package main

import (
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gonum.org/v1/plot/plotutil"
)

func TestParse(t *testing.T) {
	type want struct {
		run run
		err string
	}
	cases := map[string]struct {
		reason string
		file   string
		csv    string
		want   want
	}{
		"Namespaced": {
			reason: "A run of namespaced XRs says so in its name.",
			file:   "namespaced-1.csv",
			csv:    "claim,created_s,available_s\na,0.1,2\n",
			want:   want{run: run{name: "1 namespaced XRs", available: []float64{2}}},
		},
		"Sorted": {
			reason: "A run's claims are sorted by when they became Available, and it is named after its claim count.",
			csv:    "claim,created_s,available_s\nb,0.1,9\na,0.2,3.5\n",
			want:   want{run: run{name: "2 claims", available: []float64{3.5, 9}}},
		},
		"Note": {
			reason: "What follows the count in the file's name says what the run changed.",
			file:   "claims-1-max-reconcile-rate-10.csv",
			csv:    "claim,created_s,available_s\na,0.1,2\n",
			want:   want{run: run{name: "1 claims, max reconcile rate 10", available: []float64{2}}},
		},
		"NoHeader": {
			reason: "A CSV that is not TestScale's says so instead of drawing nonsense.",
			csv:    "a,0.1,3\n",
			want:   want{err: "want the header claim,created_s,available_s"},
		},
		"NotSeconds": {
			reason: "A claim that never became Available (an empty or negative time) names its line.",
			csv:    "claim,created_s,available_s\na,0.1,\n",
			want:   want{err: "line 2"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			file := tc.file
			if file == "" {
				file = "claims-2.csv"
			}
			got, err := parse(file, strings.NewReader(tc.csv))
			if tc.want.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want.err) {
					t.Fatalf("%s\nparse(...) error = %v, want one containing %q", tc.reason, err, tc.want.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want.run, got, cmp.AllowUnexported(run{})); diff != "" {
				t.Errorf("%s\nparse(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestDraw draws a run and reads the PNG back: 8 by 5 inches at the PNG backend's 96 dpi,
// with the run's line in it.
func TestDraw(t *testing.T) {
	out := filepath.Join(t.TempDir(), "scale.png")
	if err := draw(out, "test", []string{"testdata/claims-3.csv"}); err != nil {
		t.Fatal(err)
	}
	img := readPNG(t, out)
	if b := img.Bounds(); b.Dx() != 768 || b.Dy() != 480 {
		t.Errorf("plot size %dx%d, want 768x480", b.Dx(), b.Dy())
	}
	// The run's line is drawn in the first colour of plotutil's palette, which nothing else
	// in the plot uses.
	if line := firstColourPixels(img); line < 100 {
		t.Errorf("%d pixels in the line's colour: the run's line was not drawn", line)
	}
	if err := draw(out, "test", []string{"testdata/missing.csv"}); err == nil {
		t.Error("draw of a missing CSV: no error")
	}
}

// TestDrawBars draws TestNodeServesLikeBareMemcached's figures and reads the PNG back, 8 by 4
// inches, with the pod's bars in the first colour; a CSV of another kind is refused.
func TestDrawBars(t *testing.T) {
	out := filepath.Join(t.TempDir(), "serves.png")
	if err := drawBars(out, "test", "testdata/serves.csv"); err != nil {
		t.Fatal(err)
	}
	img := readPNG(t, out)
	if b := img.Bounds(); b.Dx() != 768 || b.Dy() != 384 {
		t.Errorf("plot size %dx%d, want 768x384", b.Dx(), b.Dy())
	}
	if bar := firstColourPixels(img); bar < 1000 {
		t.Errorf("%d pixels in the pod's colour: its bars were not drawn", bar)
	}
	if err := drawBars(out, "test", "testdata/claims-3.csv"); err == nil || !strings.Contains(err.Error(), servesHeader) {
		t.Errorf("drawBars of a TestScale CSV: %v, want an error naming the header it wants", err)
	}
	if _, err := parseServes("x.csv", strings.NewReader(servesHeader+"\nplain,fast,1\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("a figure that is not a number: %v, want an error naming line 2", err)
	}
}

// readPNG decodes the plot at path.
func readPNG(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path) //nolint:gosec // the test's own file
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close() //nolint:errcheck // read only
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("the plot is not a PNG: %v", err)
	}
	return img
}

// firstColourPixels counts img's pixels in the first colour of plotutil's palette: what a plot
// draws its first series in.
func firstColourPixels(img image.Image) int {
	wr, wg, wb, _ := plotutil.Color(0).RGBA()
	n := 0
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			if r, g, b, _ := img.At(x, y).RGBA(); r == wr && g == wg && b == wb {
				n++
			}
		}
	}
	return n
}
