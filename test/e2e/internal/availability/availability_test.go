package availability

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestTrackerLapse(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 3, 15, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	type want struct {
		lapses []bool
		echoes int
	}
	type args struct {
		samples []Sample
	}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"StaysAvailable": {
			reason: "A claim Available in every sample has no lapse.",
			args:   args{samples: []Sample{{"True", at(0), at(1)}, {"True", at(0), at(2)}}},
			want:   want{lapses: []bool{false, false}},
		},
		"NotYetAvailable": {
			reason: "Before any Available=True is seen, a claim that is not Available is a lapse: there is nothing it could echo.",
			args:   args{samples: []Sample{{"False", at(-5), at(1)}}},
			want:   want{lapses: []bool{true}},
		},
		"Echo": {
			reason: "Crossplane re-applying the Creating condition the claim had before it became Available (older lastTransitionTime) is an echo, " +
				"not a lapse, and the claim is Available again the next second.",
			args: args{samples: []Sample{{"True", at(0), at(1)}, {"False", at(-4), at(2)}, {"True", at(0), at(3)}}},
			want: want{lapses: []bool{false, false, false}, echoes: 1},
		},
		"EchoOfTheSameSecond": {
			reason: "A condition as old as the Available=True seen may be the one that True replaced in the same second: an echo while it is short.",
			args:   args{samples: []Sample{{"True", at(0), at(1)}, {"False", at(0), at(2)}}},
			want:   want{lapses: []bool{false, false}, echoes: 1},
		},
		"NewVerdict": {
			reason: "A condition newer than the Available=True seen is the function's new verdict: a lapse.",
			args:   args{samples: []Sample{{"True", at(0), at(1)}, {"False", at(2), at(3)}}},
			want:   want{lapses: []bool{false, true}},
		},
		"EchoTooLong": {
			reason: "An old condition that outlasts MaxEcho is no echo a user can ignore: a lapse from then on.",
			args: args{samples: []Sample{{"True", at(0), at(1)}, {"False", at(0), at(2)}, {"False", at(0), at(2 + int(MaxEcho/time.Second))},
				{"False", at(0), at(3 + int(MaxEcho/time.Second))}}},
			want: want{lapses: []bool{false, false, false, true}, echoes: 3},
		},
		"EchoesCountedApart": {
			reason: "Each run of echoes has its own MaxEcho: two short runs, Available between them, are no lapse.",
			args: args{samples: []Sample{{"True", at(0), at(1)}, {"False", at(0), at(2)}, {"True", at(0), at(8)}, {"False", at(0), at(14)},
				{"True", at(0), at(15)}}},
			want: want{lapses: []bool{false, false, false, false, false}, echoes: 2},
		},
		"LapseBetweenSamples": {
			reason: "A verdict newer than the first Available=True that fell between two samples (False at 2, Available again at 3) is a lapse " +
				"when a later sample shows it, though as an echo.",
			args: args{samples: []Sample{{"True", at(0), at(1)}, {"True", at(3), at(4)}, {"False", at(2), at(5)}}},
			want: want{lapses: []bool{false, false, true}},
		},
		"NoCondition": {
			reason: "A sample without an Available condition (or its time) is a lapse: nothing shows it is an echo.",
			args:   args{samples: []Sample{{"True", at(0), at(1)}, {"", time.Time{}, at(2)}}},
			want:   want{lapses: []bool{false, true}},
		},
		"UnknownIsALapse": {
			reason: "Unknown is a lapse whatever its time: Crossplane's FatalError keeps the condition's lastTransitionTime, so an old time " +
				"does not make it an echo.",
			args: args{samples: []Sample{{"True", at(3), at(4)}, {"Unknown", at(0), at(5)}}},
			want: want{lapses: []bool{false, true}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var tr Tracker
			got := want{}
			for _, s := range tc.args.samples {
				got.lapses = append(got.lapses, tr.Lapse(s))
			}
			got.echoes = tr.Echoes
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nLapse(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
