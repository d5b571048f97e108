package instance

import (
	"context"
	"reflect"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/function-memcached/apis/memcached/v1alpha1"
	"github.com/example/function-memcached/internal/lru"
	"github.com/example/function-memcached/internal/render"
	"github.com/example/function-memcached/internal/render/rendertest"
)

func BenchmarkObserveSteadyState(b *testing.B) {
	t := &testing.T{}
	i := instance(was(available))
	c := applied(t, i, rollout(3))
	tg := newTarget(c)
	e := &External{Target: tg, Settings: settings(t), Drifts: NewDrifts()}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Observe(context.Background(), i); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDrift(b *testing.B) {
	t := &testing.T{}
	i := instance(was(available))
	c := applied(t, i, rollout(3))
	e := &External{Target: newTarget(c), Settings: settings(t)}
	o, _, err := e.observe(context.Background(), i, key, nil)
	if err != nil {
		b.Fatal(err)
	}
	m := memcached(t)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := drift(o, m, i); err != nil {
			b.Fatal(err)
		}
	}
}

func TestDrifts(t *testing.T) {
	// Drift is judged again only when what it depends on changed: the Memcached the Instance
	// resolves to, or a live object's version.
	i := instance(was(available))
	c := applied(t, i, rollout(3))
	e := &External{Target: newTarget(c), Settings: settings(t)}
	o, _, err := e.observe(context.Background(), i, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := memcached(t)
	d := NewDrifts()
	judged := 0
	judge := func(diff string) func() (string, error) {
		return func() (string, error) {
			judged++
			return diff, nil
		}
	}
	steps := []struct {
		reason  string
		change  func()
		verdict string
		want    string
		judged  int
	}{
		{reason: "The first verdict is judged.", change: func() {}, verdict: "first", want: "first", judged: 1},
		{reason: "Nothing changed: the verdict stands without judging.", change: func() {}, verdict: "second", want: "first", judged: 1},
		{reason: "A live object changed (new version): judged again.", change: func() { o.deployment().ResourceVersion += "1" }, verdict: "third", want: "third", judged: 2},
		{reason: "The spec changed: judged again.", change: func() { m.Size = 2 }, verdict: "fourth", want: "fourth", judged: 3},
		{reason: "An object went: judged again.", change: func() { delete(o, rolePDB) }, verdict: "fifth", want: "fifth", judged: 4},
		{reason: "maxItemSizeMB changed: judged again.", change: func() { m.MaxItemSizeMB = 4 }, verdict: "item size", want: "item size", judged: 5},
		{reason: "Scheduling changed: judged again.", change: func() { m.Scheduling = &render.Scheduling{NodeSelector: map[string]string{"disk": "ssd"}} }, verdict: "scheduling", want: "scheduling", judged: 6},
		{reason: "Only the node selector changed: judged again.", change: func() { m.Scheduling.NodeSelector["disk"] = "hdd" }, verdict: "selector", want: "selector", judged: 7},
	}
	for _, s := range steps {
		s.change()
		got, err := d.Judge(i, o, m, judge(s.verdict))
		if err != nil || got != s.want || judged != s.judged {
			t.Errorf("%s\nJudge(...) = %q, %v after %d judgements; want %q after %d", s.reason, got, err, judged, s.want, s.judged)
		}
	}
	d.Forget(i.GetUID())
	if got, _ := d.Judge(i, o, m, judge("sixth")); got != "sixth" {
		t.Errorf("after Forget(...): Judge(...) = %q, want judged again", got)
	}
	var none *Drifts
	if got, _ := none.Judge(i, o, m, judge("seventh")); got != "seventh" {
		t.Errorf("without Drifts: Judge(...) = %q, want judged", got)
	}
}

// TestEverySpecFieldKeysTheDriftBasis proves that a drift verdict is judged again after a
// change of any field of render.Memcached: a field missing from the basis keeps the verdict
// judged on the old spec, and the change is never applied (as maxItemSizeMB and scheduling
// once were not).
func TestEverySpecFieldKeysTheDriftBasis(t *testing.T) {
	i := instance(was(available))
	c := applied(t, i, rollout(3))
	e := &External{Target: newTarget(c), Settings: settings(t)}
	o, _, err := e.observe(context.Background(), i, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	base := mustBasis(t, i, o, rendertest.Base())
	if again := mustBasis(t, i, o, rendertest.Base()); again != base {
		t.Fatal("basis(...) differs for equal Memcacheds")
	}
	for p, m := range rendertest.Variants(t) {
		if mustBasis(t, i, o, m) == base {
			t.Errorf("basis(...) is the same after a change of render.Memcached.%s: the verdict judged on the old spec would stand, and the change would never be applied", p)
		}
	}
}

// TestDriftBasis proves that a drift verdict is judged again when the Instance is another
// (its field manager and ownership stamp differ) or any of its live objects changed, went or
// was replaced: a verdict judged on other objects would hide a change made by hand, which
// would then never be undone.
func TestDriftBasis(t *testing.T) {
	i := instance(was(available))
	c := applied(t, i, rollout(3))
	e := &External{Target: newTarget(c), Settings: settings(t)}
	live, _, err := e.observe(context.Background(), i, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := memcached(t)
	base := mustBasis(t, i, live, m)
	if len(live) < 2 {
		t.Fatalf("observed %d live objects, want a Deployment and more to change", len(live))
	}

	type args struct {
		change func(i *v1alpha1.Instance, o observed)
	}
	type want struct {
		same bool
	}
	type testCase struct {
		reason string
		args   args
		want   want
	}
	cases := map[string]testCase{
		"Unchanged": {
			reason: "The same Instance over the same objects keeps its verdict.",
			args:   args{change: func(*v1alpha1.Instance, observed) {}},
			want:   want{same: true},
		},
		"InstanceUID": {
			reason: "An Instance recreated under the same name owns nothing of its predecessor's.",
			args:   args{change: func(i *v1alpha1.Instance, _ observed) { i.SetUID("another-uid") }},
		},
		"InstanceName": {
			reason: "Another Instance applies with another field manager.",
			args:   args{change: func(i *v1alpha1.Instance, _ observed) { i.SetName("carts") }},
		},
		"InstanceNamespace": {
			reason: "Another namespace's Instance applies with another field manager.",
			args:   args{change: func(i *v1alpha1.Instance, _ observed) { i.SetNamespace("team-b") }},
		},
	}
	for _, k := range managedKinds {
		if _, ok := live[k.role]; !ok {
			continue
		}
		cases[k.role+"Version"] = testCase{
			reason: "A " + k.kind + " changed (by hand, or by a controller) is judged again.",
			args: args{change: func(_ *v1alpha1.Instance, o observed) {
				o[k.role].SetResourceVersion(o[k.role].GetResourceVersion() + "1")
			}},
		}
		cases[k.role+"UID"] = testCase{
			reason: "A " + k.kind + " deleted and made again between two reconciles is judged again.",
			args:   args{change: func(_ *v1alpha1.Instance, o observed) { o[k.role].SetUID("another-uid") }},
		}
		cases[k.role+"Gone"] = testCase{
			reason: "A " + k.kind + " that went is judged again.",
			args:   args{change: func(_ *v1alpha1.Instance, o observed) { delete(o, k.role) }},
		}
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ci, co := i.DeepCopy(), observed{}
			for role, obj := range live {
				co[role] = obj.DeepCopyObject().(client.Object)
			}
			tc.args.change(ci, co)
			if got := mustBasis(t, ci, co, m) == base; got != tc.want.same {
				t.Errorf("\n%s\nbasis(...) unchanged: %v, want %v", tc.reason, got, tc.want.same)
			}
		})
	}
}

// mustBasis is basis(i, o, m), failing t when it cannot be made.
func mustBasis(t *testing.T, i *v1alpha1.Instance, o observed, m render.Memcached) lru.Key {
	t.Helper()
	k, err := basis(i, o, m)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestDriftBasisKeyTypes checks that the drift basis covers every field of what it keys
// (lru.Keyable): a field lru.KeyOf leaves out would let a verdict judged on one state of an
// Instance stand for another.
func TestDriftBasisKeyTypes(t *testing.T) {
	for _, typ := range []reflect.Type{reflect.TypeFor[driftBasis](), reflect.TypeFor[liveVersion]()} {
		if err := lru.Keyable(typ); err != nil {
			t.Error(err)
		}
	}
}
