package journey

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

var start = time.Date(2026, 12, 6, 22, 0, 0, 250_000_000, time.UTC)

// at is start's whole second plus s seconds, as the API server writes a timestamp.
func at(s int) metav1.Time {
	return metav1.NewTime(start.Truncate(time.Second).Add(time.Duration(s) * time.Second))
}

func xr(created int, available map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetCreationTimestamp(at(created))
	conds := []any{map[string]any{"type": "Ready", "status": "True", "lastTransitionTime": at(90).UTC().Format(time.RFC3339)}}
	if available != nil {
		conds = append(conds, available)
	}
	_ = unstructured.SetNestedSlice(u.Object, conds, "status", "conditions")
	return u
}

func TestClaimObserve(t *testing.T) {
	s := func(x float64) time.Duration { return time.Duration(x * float64(time.Second)) }
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{CreationTimestamp: at(40)},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: at(55)},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: at(70)},
		}},
	}
	type args struct {
		xr  *unstructured.Unstructured
		d   *appsv1.Deployment
		pod *corev1.Pod
	}
	cases := map[string]struct {
		reason string
		args   args
		want   [numStages]time.Duration
	}{
		"AllObjects": {
			reason: "Each stage is read from the object that records it, as the middle of its second after start.",
			args: args{
				xr: xr(3, map[string]any{"type": "Available", "status": "True", "lastTransitionTime": at(80).UTC().Format(time.RFC3339)}),
				d: &appsv1.Deployment{
					ObjectMeta: metav1.ObjectMeta{CreationTimestamp: at(20)},
					Status: appsv1.DeploymentStatus{Conditions: []appsv1.DeploymentCondition{
						{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, LastTransitionTime: at(21)},
						{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, LastTransitionTime: at(76)},
					}},
				},
				pod: pod,
			},
			want: [numStages]time.Duration{s(0.1), s(3.25), s(20.25), s(40.25), s(55.25), s(70.25), s(76.25), s(80.25), s(95)},
		},
		"NotAvailable": {
			reason: "An XR or Deployment not Available and a pod not Ready leave their stages Unknown.",
			args: args{
				xr: xr(3, map[string]any{"type": "Available", "status": "False", "lastTransitionTime": at(80).UTC().Format(time.RFC3339)}),
				d: &appsv1.Deployment{
					ObjectMeta: metav1.ObjectMeta{CreationTimestamp: at(20)},
					Status: appsv1.DeploymentStatus{Conditions: []appsv1.DeploymentCondition{
						{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionFalse, LastTransitionTime: at(21)},
					}},
				},
				pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: at(40)}},
			},
			want: [numStages]time.Duration{s(0.1), s(3.25), s(20.25), s(40.25), Unknown, Unknown, Unknown, Unknown, s(95)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := NewClaim("a", s(0.1), s(95))
			c.Observe(start, tc.args.xr, tc.args.d, tc.args.pod)
			if diff := cmp.Diff(tc.want, c.At); diff != "" {
				t.Errorf("%s\nObserve(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestHops(t *testing.T) {
	claim := func(name string, at ...time.Duration) Claim {
		c := Claim{Name: name}
		for i := range c.At {
			c.At[i] = Unknown
		}
		copy(c.At[:], at)
		return c
	}
	sec := time.Second
	type want struct {
		hops []Hop
		csv  string
	}
	cases := map[string]struct {
		reason string
		claims []Claim
		want   want
	}{
		"StageNobodyReached": {
			reason: "A stage no claim reached is passed over: the hop runs from the stage before it; a claim that missed a stage counts only in the hops it has both ends of.",
			claims: []Claim{
				claim("b", 0, Unknown, 10*sec, 20*sec, 21*sec, 30*sec, 35*sec, 40*sec, 50*sec),
				claim("a", 0, Unknown, 5*sec, 10*sec, 11*sec, 20*sec, 21*sec, 25*sec, 26*sec),
				claim("c", 0, Unknown, 7*sec, Unknown, 30*sec, 31*sec, 31*sec, 32*sec, 90*sec),
			},
			want: want{
				hops: []Hop{
					{From: Created, To: DeploymentCreated, Median: 7 * sec, P90: 10 * sec, Claims: 3},
					{From: DeploymentCreated, To: PodCreated, Median: 10 * sec, P90: 10 * sec, Claims: 2},
					{From: PodCreated, To: PodScheduled, Median: sec, P90: sec, Claims: 2},
					{From: PodScheduled, To: PodReady, Median: 9 * sec, P90: 9 * sec, Claims: 3},
					{From: PodReady, To: DeploymentAvailable, Median: sec, P90: 5 * sec, Claims: 3},
					{From: DeploymentAvailable, To: XRAvailable, Median: 4 * sec, P90: 5 * sec, Claims: 3},
					{From: XRAvailable, To: Available, Median: 10 * sec, P90: 58 * sec, Claims: 3},
				},
				csv: "claim,created_s,xr_created_s,deployment_created_s,pod_created_s,pod_scheduled_s,pod_ready_s,deployment_available_s,xr_available_s,available_s\n" +
					"a,0.0,,5.0,10.0,11.0,20.0,21.0,25.0,26.0\n" +
					"b,0.0,,10.0,20.0,21.0,30.0,35.0,40.0,50.0\n" +
					"c,0.0,,7.0,,30.0,31.0,31.0,32.0,90.0\n",
			},
		},
		"None": {
			reason: "No claims, no hops: only the header.",
			want:   want{csv: "claim,created_s,xr_created_s,deployment_created_s,pod_created_s,pod_scheduled_s,pod_ready_s,deployment_available_s,xr_available_s,available_s\n"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want.hops, Hops(tc.claims)); diff != "" {
				t.Errorf("%s\nHops(...): -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.csv, CSV(tc.claims)); diff != "" {
				t.Errorf("%s\nCSV(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
