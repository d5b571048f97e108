package memcachedload

import (
	"math/bits"
	"time"
)

// Histogram counts latencies in microseconds the way an HDR histogram does: exact below 128 µs,
// and above that in buckets no wider than 1/64 of their value (two significant digits, an error
// under 1.6 %), from 1 µs to over an hour in a fixed 16 KiB array. Recording costs no
// allocation, so each connection keeps its own and the run merges them.
type Histogram struct {
	counts [histogramBuckets]int64
	total  int64
	max    int64
}

const (
	// subBits is the precision: 2^subBits exact values, then 2^(subBits-1) buckets a doubling.
	subBits          = 7
	subCount         = 1 << subBits
	halfCount        = subCount / 2
	maxShift         = 36 - subBits // Values up to 2^36 µs (19 hours).
	histogramBuckets = subCount + maxShift*halfCount
)

// bucket is the index that counts v microseconds.
func bucket(v int64) int {
	if v < subCount {
		return int(max(v, 0))
	}
	shift := bits.Len64(uint64(v)) - subBits
	if shift > maxShift {
		return histogramBuckets - 1
	}
	return subCount + (shift-1)*halfCount + int(v>>shift) - halfCount
}

// upper is the largest value bucket i counts, what a percentile reports: never less than
// what was recorded.
func upper(i int) int64 {
	if i < subCount {
		return int64(i)
	}
	shift := (i-subCount)/halfCount + 1
	top := int64((i-subCount)%halfCount + halfCount)
	return (top+1)<<shift - 1
}

// Record counts one latency.
func (h *Histogram) Record(d time.Duration) {
	v := d.Microseconds()
	h.counts[bucket(v)]++
	h.total++
	h.max = max(h.max, v)
}

// Merge adds o's counts to h.
func (h *Histogram) Merge(o *Histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.total += o.total
	h.max = max(h.max, o.max)
}

// Count is how many latencies were recorded.
func (h *Histogram) Count() int64 { return h.total }

// Max is the largest latency recorded, exactly.
func (h *Histogram) Max() time.Duration { return time.Duration(h.max) * time.Microsecond }

// Quantile is the latency q (0 < q ≤ 1) of the recorded ones do not exceed, to the bucket's
// precision, rounded up; zero when nothing was recorded.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.total == 0 {
		return 0
	}
	rank := int64(q*float64(h.total) + 0.5)
	rank = min(max(rank, 1), h.total)
	var seen int64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return time.Duration(min(upper(i), h.max)) * time.Microsecond
		}
	}
	return h.Max()
}
