package credentials

import (
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/example/function-memcached/internal/render"
)

// counter is a source of new credentials that differs on every use, so that a test tells
// credentials generated once from credentials generated again.
func counter() func() io.Reader {
	n := 0
	return func() io.Reader {
		n++
		return strings.NewReader(strings.Repeat(string(rune('a'+n%26)), 4096))
	}
}

func TestStore(t *testing.T) {
	salted := &Secret{Rotation: "r1", Data: map[string][]byte{
		render.ConnectionUsername: []byte("memcached"), render.ConnectionPassword: []byte("s3cret-s3cret-s3cret"), render.AuthSaltKey: []byte("c2FsdHNhbHRzYWx0c2FsdA")}}
	unsalted := &Secret{Rotation: "r1", Data: map[string][]byte{
		render.ConnectionUsername: []byte("memcached"), render.ConnectionPassword: []byte("s3cret-s3cret-s3cret")}}
	type call struct {
		rotation string
		observed *Secret
		unsalted func(render.Auth) bool
	}
	type want struct {
		// same[i] says whether call i returns what call i-1 returned.
		same []bool
		// fromSecret[i] says whether call i returns the observed Secret's password.
		fromSecret []bool
		salted     []bool
	}
	cases := map[string]struct {
		reason   string
		nilStore bool
		forget   int // Forget the owner before this call (1-based); 0: never.
		calls    []call
		want     want
	}{
		"GeneratedOnce": {
			reason: "Until their Secret is observed, credentials generated for a rotation are the same on every call.",
			calls:  []call{{rotation: "r1"}, {rotation: "r1"}, {rotation: "r1"}},
			want:   want{same: []bool{false, true, true}, fromSecret: []bool{false, false, false}, salted: []bool{true, true, true}},
		},
		"ObservedWins": {
			reason: "Once their Secret is observed for the rotation, its credentials are read back.",
			calls:  []call{{rotation: "r1"}, {rotation: "r1", observed: salted}, {rotation: "r1", observed: salted}},
			want:   want{same: []bool{false, false, true}, fromSecret: []bool{false, true, true}, salted: []bool{true, true, true}},
		},
		"RotatedOnce": {
			reason: "A new rotation replaces the observed credentials once, while the observed Secret is still the old one's.",
			calls:  []call{{rotation: "r2", observed: salted}, {rotation: "r2", observed: salted}},
			want:   want{same: []bool{false, true}, fromSecret: []bool{false, false}, salted: []bool{true, true}},
		},
		"UnsaltedRunning": {
			reason: "Salt-less credentials whose digest the pods run with are kept as they are: an upgrade restarts nothing.",
			calls:  []call{{rotation: "r1", observed: unsalted, unsalted: func(render.Auth) bool { return true }}},
			want:   want{same: []bool{false}, fromSecret: []bool{true}, salted: []bool{false}},
		},
		"UnsaltedGetsOneSalt": {
			reason: "Salt-less credentials not running unsalted keep their password and get a salt, the same one on every call.",
			calls:  []call{{rotation: "r1", observed: unsalted}, {rotation: "r1", observed: unsalted}},
			want:   want{same: []bool{false, true}, fromSecret: []bool{true, true}, salted: []bool{true, true}},
		},
		"NilStoreRemembersNothing": {
			reason:   "A nil Store generates anew on every call without a usable Secret.",
			nilStore: true,
			calls:    []call{{rotation: "r1"}, {rotation: "r1"}},
			want:     want{same: []bool{false, false}, fromSecret: []bool{false, false}, salted: []bool{true, true}},
		},
		"Forgotten": {
			reason: "Forget drops what waits for an owner that is gone.",
			forget: 2,
			calls:  []call{{rotation: "r1"}, {rotation: "r1"}},
			want:   want{same: []bool{false, false}, fromSecret: []bool{false, false}, salted: []bool{true, true}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := NewStore()
			s.Random = counter()
			if tc.nilStore {
				s = nil
			}
			var got want
			var last render.Auth
			for i, c := range tc.calls {
				if tc.forget == i+1 {
					s.Forget("uid")
				}
				a, err := s.Get("uid", c.rotation, c.observed, c.unsalted)
				if err != nil {
					t.Fatalf("%s\nGet #%d: %v", tc.reason, i+1, err)
				}
				if a.Rotation != c.rotation {
					t.Errorf("%s\nGet #%d: rotation %q, want %q", tc.reason, i+1, a.Rotation, c.rotation)
				}
				got.same = append(got.same, i > 0 && a == last)
				got.fromSecret = append(got.fromSecret, c.observed != nil && a.Password == string(c.observed.Data[render.ConnectionPassword]))
				got.salted = append(got.salted, a.Salt != "")
				last = a
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\n-want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestStoreBounded proves that a Store holds at most MaxPending credentials, however many
// owners are waiting.
func TestStoreBounded(t *testing.T) {
	s := NewStore()
	s.Random = counter()
	for i := range MaxPending + 10 {
		if _, err := s.Get(strings.Repeat("x", i%7)+string(rune(i)), "r", nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(s.pending); n > MaxPending {
		t.Errorf("the Store holds %d credentials, want at most %d", n, MaxPending)
	}
}
