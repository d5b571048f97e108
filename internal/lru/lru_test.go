package lru

import (
	"reflect"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCache checks what every memo relies on: a value is found under its key until it is
// removed or, the cache being full, it is the one used least recently when another is added.
func TestCache(t *testing.T) {
	type args struct {
		size int
		do   func(c *Cache[string, int])
	}
	cases := map[string]struct {
		reason string
		args   args
		want   map[string]int
	}{
		"Kept": {
			reason: "Values added to a cache with room are all found.",
			args:   args{size: 3, do: func(c *Cache[string, int]) { c.Add("a", 1); c.Add("b", 2) }},
			want:   map[string]int{"a": 1, "b": 2},
		},
		"Replaced": {
			reason: "Adding a key again replaces its value and takes no more room.",
			args:   args{size: 2, do: func(c *Cache[string, int]) { c.Add("a", 1); c.Add("b", 2); c.Add("a", 3) }},
			want:   map[string]int{"a": 3, "b": 2},
		},
		"LeastRecentlyUsedEvicted": {
			reason: "A full cache forgets the entry used least recently: a, read after b was added, stays.",
			args: args{size: 2, do: func(c *Cache[string, int]) {
				c.Add("a", 1)
				c.Add("b", 2)
				c.Get("a")
				c.Add("c", 3)
			}},
			want: map[string]int{"a": 1, "c": 3},
		},
		"Removed": {
			reason: "A removed key is not found.",
			args:   args{size: 2, do: func(c *Cache[string, int]) { c.Add("a", 1); c.Add("b", 2); c.Remove("a") }},
			want:   map[string]int{"b": 2},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := New[string, int](tc.args.size)
			tc.args.do(c)
			got := map[string]int{}
			for _, k := range []string{"a", "b", "c"} {
				if v, ok := c.Get(k); ok {
					got[k] = v
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\n-want, +got:\n%s", tc.reason, diff)
			}
			if c.Len() != len(tc.want) {
				t.Errorf("%s\nLen() = %d, want %d", tc.reason, c.Len(), len(tc.want))
			}
		})
	}
}

// TestCacheConcurrently uses one cache from many goroutines, as the function's calls do; the
// race detector (make test) fails it on any unsynchronised access.
func TestCacheConcurrently(t *testing.T) {
	c := New[int, int](16)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				k := (g + i) % 32
				if v, ok := c.Get(k); ok && v != k*k {
					t.Errorf("Get(%d) = %d, want %d", k, v, k*k)
				}
				c.Add(k, k*k)
			}
		})
	}
	wg.Wait()
	if c.Len() > 16 {
		t.Errorf("Len() = %d, over the bound of 16", c.Len())
	}
}

// TestKeyOf checks that keys tell values apart by content: equal values have equal keys
// whatever the order their maps were filled in, and any change of any field is another key.
func TestKeyOf(t *testing.T) {
	type value struct {
		Name   string
		Size   *int32
		Labels map[string]string
		Items  []string
	}
	size := int32(3)
	base := value{Name: "a", Size: &size, Labels: map[string]string{"x": "1", "y": "2"}, Items: []string{"p"}}
	key := func(v value) Key {
		k, err := KeyOf(v)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	reordered := base
	reordered.Labels = map[string]string{"y": "2", "x": "1"}
	if key(reordered) != key(base) {
		t.Error("equal values filled in another order have different keys")
	}
	other := int32(4)
	for name, v := range map[string]value{
		"Name":   {Name: "b", Size: &size, Labels: base.Labels, Items: base.Items},
		"Size":   {Name: "a", Size: &other, Labels: base.Labels, Items: base.Items},
		"NoSize": {Name: "a", Labels: base.Labels, Items: base.Items},
		"Labels": {Name: "a", Size: &size, Labels: map[string]string{"x": "1"}, Items: base.Items},
		"Items":  {Name: "a", Size: &size, Labels: base.Labels, Items: []string{"p", "q"}},
		// A length-prefix-free encoding would let content pass for a separator.
		"Boundary": {Name: "a\",\"Size\":3", Labels: base.Labels, Items: base.Items},
	} {
		if key(v) == key(base) {
			t.Errorf("a change of %s keeps the key", name)
		}
	}
	if _, err := KeyOf(func() {}); err == nil {
		t.Error("KeyOf(a func): want an error, got none")
	}
}

// TestKeyable checks that a key type whose field KeyOf would leave out is refused.
func TestKeyable(t *testing.T) {
	type good struct {
		Name string
		Size *int32 `json:"size"`
	}
	type unexported struct {
		Name string
		size int32
	}
	type skipped struct {
		Name string `json:"-"`
	}
	type omitted struct {
		Name string `json:"name,omitempty"`
	}
	cases := map[string]struct {
		reason string
		typ    reflect.Type
		ok     bool
	}{
		"Good":       {reason: "Exported fields JSON always writes are keyable.", typ: reflect.TypeFor[good](), ok: true},
		"Unexported": {reason: "JSON leaves an unexported field out.", typ: reflect.TypeFor[unexported]()},
		"Skipped":    {reason: "JSON leaves a field tagged - out.", typ: reflect.TypeFor[skipped]()},
		"Omitted":    {reason: "JSON leaves an omitempty field out when empty.", typ: reflect.TypeFor[omitted]()},
		"NotStruct":  {reason: "Only a struct is checked.", typ: reflect.TypeFor[string]()},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if err := Keyable(tc.typ); (err == nil) != tc.ok {
				t.Errorf("%s\nKeyable(%s) = %v, want ok %t", tc.reason, tc.typ, err, tc.ok)
			}
		})
	}
	_ = unexported{}.size
}
