package memcachedload

import (
	"testing"
	"time"
)

// TestHistogramQuantile records known latencies and checks that each quantile is the value
// at that rank, never below it and at most the bucket's width (1/64) above it.
func TestHistogramQuantile(t *testing.T) {
	cases := map[string]struct {
		reason string
		values []time.Duration
		q      float64
		want   time.Duration
	}{
		"empty":             {reason: "Nothing recorded has no quantile.", q: 0.99, want: 0},
		"exact below 128µs": {reason: "Latencies under 128 µs are counted exactly.", values: durations(1, 100), q: 0.5, want: 50 * time.Microsecond},
		"p99 of 1..10000µs": {reason: "The 99th percentile of 1 to 10,000 µs is 9,900 µs, within 1/64.", values: durations(1, 10000), q: 0.99, want: 9900 * time.Microsecond},
		"p999 of a tail":    {reason: "One slow request in a thousand is the 99.9th percentile's neighbour, not its value.", values: append(durations(1, 999), time.Second), q: 0.999, want: 999 * time.Microsecond},
		"max":               {reason: "The 100th percentile is the largest value, exactly.", values: append(durations(1, 10), 3*time.Second+7*time.Microsecond), q: 1, want: 3*time.Second + 7*time.Microsecond},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var h Histogram
			for _, v := range tc.values {
				h.Record(v)
			}
			got := h.Quantile(tc.q)
			if got < tc.want || float64(got-tc.want) > float64(tc.want)/64 {
				t.Errorf("%s\nQuantile(%v) = %v, want %v (at most 1/64 above)", tc.reason, tc.q, got, tc.want)
			}
			if h.Count() != int64(len(tc.values)) {
				t.Errorf("Count() = %d, want %d", h.Count(), len(tc.values))
			}
		})
	}
}

// TestHistogramBuckets checks every bucket boundary up to an hour: a value falls in a bucket
// whose upper bound is at least the value and within 1/64 of it.
func TestHistogramBuckets(t *testing.T) {
	last := -1
	for v := int64(0); v < int64(time.Hour/time.Microsecond); v += 1 + v/300 {
		b := bucket(v)
		if b < last {
			t.Fatalf("bucket(%d) = %d, after bucket %d for a smaller value", v, b, last)
		}
		last = b
		if u := upper(b); u < v || float64(u-v) > float64(v)/64 {
			t.Fatalf("bucket(%d) = %d counts up to %d: want at least the value and within 1/64", v, b, u)
		}
	}
}

// TestHistogramMerge checks that merging per-connection histograms is recording into one.
func TestHistogramMerge(t *testing.T) {
	var a, b, all Histogram
	for i, v := range durations(1, 5000) {
		all.Record(v)
		if i%3 == 0 {
			a.Record(v)
		} else {
			b.Record(v)
		}
	}
	a.Merge(&b)
	for _, q := range []float64{0.5, 0.99, 0.999, 1} {
		if a.Quantile(q) != all.Quantile(q) {
			t.Errorf("merged Quantile(%v) = %v, want %v", q, a.Quantile(q), all.Quantile(q))
		}
	}
}

// durations are from..to microseconds, one each.
func durations(from, to int) []time.Duration {
	out := make([]time.Duration, 0, to-from+1)
	for i := from; i <= to; i++ {
		out = append(out, time.Duration(i)*time.Microsecond)
	}
	return out
}
