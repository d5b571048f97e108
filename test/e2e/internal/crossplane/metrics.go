package crossplane

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// Samples are Prometheus samples by series: the family's name and its labels, sorted, as
// `controller_runtime_reconcile_total{controller="x",result="success"}`. Counters, gauges and
// untyped samples only.
type Samples map[string]float64

// ParseSamples reads the samples of the named families from Prometheus' text format.
func ParseSamples(r io.Reader, families ...string) (Samples, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, errors.Wrap(err, "cannot parse metrics")
	}
	out := Samples{}
	for _, name := range families {
		mf, ok := mfs[name]
		if !ok {
			continue
		}
		for _, m := range mf.GetMetric() {
			var v float64
			switch {
			case m.GetCounter() != nil:
				v = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				v = m.GetGauge().GetValue()
			case m.GetUntyped() != nil:
				v = m.GetUntyped().GetValue()
			default:
				continue
			}
			out[series(name, m.GetLabel())] = v
		}
	}
	return out, nil
}

func series(name string, labels []*dto.LabelPair) string {
	ls := make([]string, 0, len(labels))
	for _, l := range labels {
		ls = append(ls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
	}
	slices.Sort(ls)
	return name + "{" + strings.Join(ls, ",") + "}"
}

// Metrics reads the named families from Crossplane's metrics endpoint: its controllers'
// reconciles by result and their work queues, which say where a claim waits at scale.
func (c *Core) Metrics(ctx context.Context, families ...string) (Samples, error) {
	s, err := scrape(ctx, c.metricsURL, families...)
	return s, errors.Wrap(err, "cannot read Crossplane's metrics")
}

// Scrape reads the named families from the Prometheus endpoint at url.
func Scrape(ctx context.Context, url string, families ...string) (Samples, error) {
	return scrape(ctx, url, families...)
}

// scrape reads the named families from the Prometheus endpoint at url.
func scrape(ctx context.Context, url string, families ...string) (Samples, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	rsp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer rsp.Body.Close() //nolint:errcheck // Read-only.
	if rsp.StatusCode != http.StatusOK {
		return nil, errors.Errorf("GET %s: %s", url, rsp.Status)
	}
	return ParseSamples(rsp.Body, families...)
}
