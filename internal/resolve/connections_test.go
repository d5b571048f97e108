package resolve

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/example/function-memcached/apis/cache/v1alpha1"
)

// TestConnectionsForThreads proves that a connection limit memcached cannot start with, or
// can start with but then serves almost nobody, is refused for the threads asked, naming
// the field, its value and the minimum, and that the smallest accepted limit is accepted.
// test/memcached starts each of these minimums with the real memcached.
func TestConnectionsForThreads(t *testing.T) {
	type args struct {
		root                    *field.Path
		maxConnections, threads *int32
	}
	type want struct {
		maxConnections int32
		errs           []string
	}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"OneThreadFloor": {
			reason: "One thread needs far less than 48, but 48 is the floor, the schema's minimum.",
			args:   args{maxConnections: ptr.To[int32](48), threads: ptr.To[int32](1)},
			want:   want{maxConnections: 48},
		},
		"DefaultThreadsMinimum": {
			reason: "The default 4 threads take 6*4+24 = 48.",
			args:   args{maxConnections: ptr.To[int32](48)},
			want:   want{maxConnections: 48},
		},
		"SixteenThreadsMinimum": {
			reason: "16 threads take 6*16+24 = 120.",
			args:   args{maxConnections: ptr.To[int32](120), threads: ptr.To[int32](16)},
			want:   want{maxConnections: 120},
		},
		"SixteenThreadsBelow": {
			reason: "One below is refused, naming the minimum for the threads asked; memcached 1.6.18 itself would start at 84 and serve no connection.",
			args:   args{maxConnections: ptr.To[int32](119), threads: ptr.To[int32](16)},
			want: want{errs: []string{"spec.maxConnections: Invalid value: 119: must be at least 120 with 16 threads (spec.threads): " +
				"memcached takes its open files, 6 per thread, out of this limit, and the pod's own connections need room"}},
		},
		"SixtyFourThreadsMinimum": {
			reason: "64 threads take 6*64+24 = 408.",
			args:   args{maxConnections: ptr.To[int32](408), threads: ptr.To[int32](64)},
			want:   want{maxConnections: 408},
		},
		"SixtyFourThreadsDefaultConnections": {
			reason: "The default 1024 connections are enough for the most threads there may be.",
			args:   args{threads: ptr.To[int32](64)},
			want:   want{maxConnections: 1024},
		},
		"SixtyFourThreadsBelow": {
			reason: "An Instance's error names its own fields: below 323, memcached 1.6.18 exits (Maxconns setting is too low).",
			args:   args{root: field.NewPath("spec", "forProvider"), maxConnections: ptr.To[int32](300), threads: ptr.To[int32](64)},
			want: want{errs: []string{"spec.forProvider.maxConnections: Invalid value: 300: must be at least 408 with 64 threads (spec.forProvider.threads): " +
				"memcached takes its open files, 6 per thread, out of this limit, and the pod's own connections need room"}},
		},
		"BelowFloor": {
			reason: "Below the floor is out of range whatever the threads, and says both rules.",
			args:   args{maxConnections: ptr.To[int32](12), threads: ptr.To[int32](1)},
			want:   want{errs: []string{"spec.maxConnections: Invalid value: 12: must be an integer between 48 and 65536, and at least 6 per thread plus 24"}},
		},
		"InvalidThreads": {
			reason: "Threads out of range are reported alone: the connections are not judged against a thread count nobody asked for.",
			args:   args{maxConnections: ptr.To[int32](100), threads: ptr.To[int32](65)},
			want:   want{errs: []string{"spec.threads: Invalid value: 65: must be an integer between 1 and 64"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			root := tc.args.root
			if root == nil {
				root = field.NewPath("spec")
			}
			m, errs := Memcached(root, v1alpha1.MemcachedSpec{MaxConnections: tc.args.maxConnections, Threads: tc.args.threads}, "sessions", "team-a", defaults(t))
			got := want{maxConnections: m.MaxConnections}
			for _, e := range errs {
				got.errs = append(got.errs, e.Error())
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("\n%s\nMemcached(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
