package credentials

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	cachev1alpha1 "github.com/example/function-memcached/apis/cache/v1alpha1"
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
				a, err := s.Get(Owner{Namespace: "team-a", UID: "uid"}, Want{Rotation: c.rotation}, c.observed, c.unsalted)
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

// clock is a Store's clock that a test moves.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

// tenants is what TestStoreTenants reports of a Store once its case has played.
type tenants struct {
	// Same is whether the victim's last Get returned the credentials of its first.
	Same bool
	// Entries are the Store's entries per namespace.
	Entries map[string]int
	// Err is the error of the last Get that failed, "" when none did; Waiting its details.
	Err     string
	Waiting *Waiting
}

func TestStoreTenants(t *testing.T) {
	victim := Owner{Namespace: "team-a", UID: "victim"}
	owner := func(ns string, i int) Owner { return Owner{Namespace: ns, UID: ns + "-" + strconv.Itoa(i)} }
	cases := map[string]struct {
		reason string
		// play drives the Store and fills in what only it knows (Same, Err); Entries are
		// counted after it.
		play func(t *testing.T, s *Store, c *clock, got *tenants)
		want tenants
	}{
		"AnotherNamespaceRotatesInALoop": {
			reason: "A victim's pending credentials survive another namespace's loop of a thousand rotations over more Memcacheds than its bound: the victim's next call returns the same credentials, never a second set.",
			play: func(t *testing.T, s *Store, _ *clock, got *tenants) {
				first := mustGet(t, s, victim, "r2")
				for i := range 2000 {
					_, err := s.Get(owner("team-b", i%(MaxPendingPerNamespace+8)), Want{Rotation: "r" + strconv.Itoa(i)}, nil, nil)
					if err != nil && !errors.Is(err, ErrWaiting) {
						t.Fatal(err)
					}
				}
				got.Same = mustGet(t, s, victim, "r2") == first
			},
			want: tenants{Same: true, Entries: map[string]int{"team-a": 1, "team-b": MaxPendingPerNamespace}},
		},
		"OneEntryPerOwner": {
			reason: "A new rotation replaces the owner's own entry: a thousand rotations leave one entry, and the last one's credentials stay pending.",
			play: func(t *testing.T, s *Store, _ *clock, got *tenants) {
				var last render.Auth
				for i := range 1000 {
					last = mustGet(t, s, victim, "r"+strconv.Itoa(i))
				}
				got.Same = mustGet(t, s, victim, "r999") == last
			},
			want: tenants{Same: true, Entries: map[string]int{"team-a": 1}},
		},
		"NamespaceBoundWaits": {
			reason: "With its namespace at the bound, a new owner's Get waits with a *Waiting naming the namespace, the count and the limit; an owner with an entry still rotates, and another namespace is untouched.",
			play: func(t *testing.T, s *Store, _ *clock, got *tenants) {
				first := mustGet(t, s, victim, "r1")
				for i := range MaxPendingPerNamespace - 1 {
					mustGet(t, s, owner("team-a", i), "r1")
				}
				mustGet(t, s, owner("team-b", 0), "r1")
				_, err := s.Get(owner("team-a", 1000), Want{Rotation: "r1"}, nil, nil)
				got.Err = errString(err)
				errors.As(err, &got.Waiting)
				got.Same = mustGet(t, s, victim, "r2") != first // Rotated, never waiting.
			},
			want: tenants{Same: true, Entries: map[string]int{"team-a": MaxPendingPerNamespace, "team-b": 1},
				Err: "namespace team-a already has 64 Memcacheds whose new credentials are not stored yet, the most a namespace may have (64): " +
					"new credentials wait until one of theirs is stored, or one of them is idle for 15m0s; creating or rotating many Memcacheds at once, " +
					"or rotating one again and again, fills it",
				Waiting: &Waiting{Namespace: "team-a", Pending: MaxPendingPerNamespace, Limit: MaxPendingPerNamespace}},
		},
		"IdleEntryGivesWay": {
			reason: "An entry nobody asked for in IdleTTL (its Memcached deleted before its Secret was observed) gives way to its own namespace's new owner; one still asked for does not, and another namespace's idle entry stays.",
			play: func(t *testing.T, s *Store, c *clock, got *tenants) {
				for i := range MaxPendingPerNamespace {
					mustGet(t, s, owner("team-a", i), "r1")
				}
				mustGet(t, s, owner("team-b", 0), "r1")
				first := mustGet(t, s, owner("team-a", 0), "r1")
				c.now = c.now.Add(IdleTTL - time.Second)
				mustGet(t, s, owner("team-a", 0), "r1") // Still asked for.
				c.now = c.now.Add(time.Second)
				mustGet(t, s, owner("team-a", 1000), "r1")
				got.Same = mustGet(t, s, owner("team-a", 0), "r1") == first
			},
			want: tenants{Same: true, Entries: map[string]int{"team-a": MaxPendingPerNamespace, "team-b": 1}},
		},
		"ForgetFreesItsPlace": {
			reason: "Forget drops the owner's entry, and with it its place in its namespace's bound.",
			play: func(t *testing.T, s *Store, _ *clock, got *tenants) {
				for i := range MaxPendingPerNamespace {
					mustGet(t, s, owner("team-a", i), "r1")
				}
				s.Forget(owner("team-a", 0).UID)
				s.Forget("never-seen")
				mustGet(t, s, owner("team-a", 1000), "r1")
			},
			want: tenants{Entries: map[string]int{"team-a": MaxPendingPerNamespace}},
		},
		"ObservedDropsTheEntry": {
			reason: "Once the auth Secret is observed with the credentials of the rotation, the owner's entry is dropped and its place freed.",
			play: func(t *testing.T, s *Store, _ *clock, got *tenants) {
				a := mustGet(t, s, victim, "r1")
				b, err := s.Get(victim, Want{Rotation: "r1"}, &Secret{Rotation: "r1", Data: dataOf(a)}, nil)
				if err != nil {
					t.Fatal(err)
				}
				got.Same = a == b
			},
			want: tenants{Same: true, Entries: map[string]int{}},
		},
		"StoreFull": {
			reason: "With the whole Store at MaxPending, a new owner of any namespace waits, saying so without naming the namespaces; once IdleTTL passed, an idle entry of any namespace gives way.",
			play: func(t *testing.T, s *Store, c *clock, got *tenants) {
				for i := range MaxPending {
					mustGet(t, s, owner("ns"+strconv.Itoa(i/MaxPendingPerNamespace), i), "r1")
				}
				_, err := s.Get(victim, Want{Rotation: "r1"}, nil, nil)
				errors.As(err, &got.Waiting)
				c.now = c.now.Add(IdleTTL)
				mustGet(t, s, victim, "r1")
				got.Entries = map[string]int{"team-a": len(s.byNamespace["team-a"]), "all": len(s.pending)}
			},
			want: tenants{Entries: map[string]int{"team-a": 1, "all": MaxPending}, Waiting: &Waiting{All: true, Pending: MaxPending, Limit: MaxPending}},
		},
		"NilStore": {
			reason: "A nil Store keeps nothing, and so never waits.",
			play: func(t *testing.T, _ *Store, _ *clock, got *tenants) {
				var s *Store
				for i := range MaxPendingPerNamespace + 1 {
					mustGet(t, s, owner("team-a", i), "r1")
				}
				s.Forget("team-a-0")
				got.Entries = map[string]int{}
			},
			want: tenants{Entries: map[string]int{}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := &clock{now: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
			s := NewStore()
			s.Random, s.Now = counter(), c.Now
			var got tenants
			tc.play(t, s, c, &got)
			if got.Entries == nil {
				got.Entries = map[string]int{}
				for ns, es := range s.byNamespace {
					got.Entries[ns] = len(es)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\n-want, +got:\n%s", tc.reason, diff)
			}
			checkInvariants(t, s)
		})
	}
}

func mustGet(t *testing.T, s *Store, o Owner, rotation string) render.Auth {
	t.Helper()
	a, err := s.Get(o, Want{Rotation: rotation}, nil, nil)
	if err != nil {
		t.Fatalf("Get(%v, %q): %v", o, rotation, err)
	}
	return a
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// dataOf is the data of an auth Secret holding a.
func dataOf(a render.Auth) map[string][]byte {
	return map[string][]byte{render.ConnectionUsername: []byte(a.Username), render.ConnectionPassword: []byte(a.Password), render.AuthSaltKey: []byte(a.Salt)}
}

// checkInvariants fails t unless s holds at most one entry per owner, indexed alike by owner
// and by namespace, within both bounds.
func checkInvariants(t *testing.T, s *Store) {
	t.Helper()
	n := 0
	for ns, es := range s.byNamespace {
		if len(es) == 0 || len(es) > MaxPendingPerNamespace {
			t.Errorf("namespace %q holds %d entries, want 1 to %d", ns, len(es), MaxPendingPerNamespace)
		}
		for uid, e := range es {
			if s.pending[uid] != e || e.namespace != ns {
				t.Errorf("the entry of %q in namespace %q is not the owner's", uid, ns)
			}
		}
		n += len(es)
	}
	if n != len(s.pending) || n > MaxPending {
		t.Errorf("the Store holds %d entries, %d by namespace, want the same and at most %d", len(s.pending), n, MaxPending)
	}
}

// FuzzStore drives one Store with sequences of calls from six Memcacheds in two namespaces
// and from crowds of others (each byte of ops is one step): a Get for the owner's rotation,
// a new rotation, its auth Secret observed, Forget, the clock moving on by half IdleTTL, and a
// crowd filling the owner's namespace up to its bound. It checks that:
//   - the Store keeps its invariants (checkInvariants): one entry per owner, both bounds;
//   - an owner's pending credentials are the same on every call for its rotation, whatever
//     others did, unless it left them idle for IdleTTL;
//   - only an owner without pending credentials waits, and only while its namespace or the
//     Store is full; every error is ErrWaiting.
func FuzzStore(f *testing.F) {
	f.Add([]byte{0, 5, 0, 1, 4, 4, 11, 0})
	f.Add([]byte{5, 0, 6, 4, 4, 5, 1, 7, 2, 3, 0})
	f.Add([]byte{1, 7, 13, 19, 5, 11, 0, 6, 12, 4, 4, 10, 9, 15})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 64 {
			ops = ops[:64]
		}
		c := &clock{now: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
		s := NewStore()
		s.Random, s.Now = counter(), c.Now
		owners := []Owner{{"team-a", "a0"}, {"team-a", "a1"}, {"team-a", "a2"}, {"team-b", "b0"}, {"team-b", "b1"}, {"team-b", "b2"}}
		type pending struct {
			auth render.Auth
			used time.Time
		}
		rotations := make([]int, len(owners))
		model := map[string]pending{} // What each owner was given last, while pending.
		crowd := 0
		for i, op := range ops {
			o := owners[int(op/6)%len(owners)]
			who := int(op/6) % len(owners)
			rotation := func() string { return "r" + strconv.Itoa(rotations[who]) }
			// Each owner has its own mode, so that every mode's credentials share the Store.
			mode := cachev1alpha1.AuthModes[who%len(cachev1alpha1.AuthModes)]
			want := func(rotation string) Want {
				return Want{Mode: mode, Rotation: rotation, Now: c.now, Subject: o.Namespace + "/" + o.UID, Hosts: []string{o.UID + ".svc"}}
			}
			where := fmt.Sprintf("step %d (op %d, %v)", i, op%6, o)
			switch op % 6 {
			case 1:
				rotations[who]++
				if p, ok := model[o.UID]; ok && p.auth.Rotation != rotation() {
					delete(model, o.UID) // Replaced by the Get below.
				}
				fallthrough
			case 0:
				p, had := model[o.UID]
				live := had && p.auth.Rotation == rotation() && c.now.Sub(p.used) < IdleTTL
				a, err := s.Get(o, want(rotation()), nil, nil)
				switch {
				case err != nil && !errors.Is(err, ErrWaiting):
					t.Fatalf("%s: Get: %v", where, err)
				case err != nil && live:
					t.Fatalf("%s: an owner with pending credentials waits: %v", where, err)
				case err != nil && len(s.byNamespace[o.Namespace]) < MaxPendingPerNamespace && len(s.pending) < MaxPending:
					t.Fatalf("%s: waits with room in namespace %s (%d) and the Store (%d): %v", where, o.Namespace, len(s.byNamespace[o.Namespace]), len(s.pending), err)
				case err != nil:
					delete(model, o.UID)
				case live && a != p.auth:
					t.Fatalf("%s: the pending credentials of %q changed without a rotation of its own", where, rotation())
				default:
					model[o.UID] = pending{auth: a, used: c.now}
				}
			case 2:
				p, ok := model[o.UID]
				if !ok {
					continue
				}
				a, err := s.Get(o, want(p.auth.Rotation), stored(p.auth), nil)
				if err != nil {
					t.Fatalf("%s: Get with the Secret observed: %v", where, err)
				}
				if a != p.auth {
					t.Fatalf("%s: the credentials read back from their Secret are not those generated", where)
				}
				delete(model, o.UID)
				if _, ok := s.pending[o.UID]; ok {
					t.Fatalf("%s: the entry stays once its Secret is observed", where)
				}
			case 3:
				s.Forget(o.UID)
				delete(model, o.UID)
			case 4:
				c.now = c.now.Add(IdleTTL / 2)
			case 5:
				for range MaxPendingPerNamespace + 2 {
					crowd++
					if _, err := s.Get(Owner{Namespace: o.Namespace, UID: "crowd-" + strconv.Itoa(crowd)}, Want{Rotation: "r"}, nil, nil); err != nil {
						if !errors.Is(err, ErrWaiting) {
							t.Fatalf("%s: crowd: %v", where, err)
						}
						break
					}
				}
			}
			checkInvariants(t, s)
		}
	})
}

// stored is the auth Secret the function or the provider renders for a, as the next
// observation reads it back.
func stored(a render.Auth) *Secret {
	s := render.AuthSecret(render.Memcached{Name: "sessions", Namespace: "team-a", Auth: &a})
	return ObservedSecret(s.Data, s.Annotations)
}

func TestStoreModes(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	hosts := []string{"sessions.team-a.svc.cluster.local"}
	want := func(mode string, now time.Time) Want {
		return Want{Mode: mode, Rotation: "r1", Now: now, Subject: "team-a/sessions", Hosts: hosts}
	}
	// A call asks for w with the auth Secret as observed: none, what the call before
	// returned (applied and observed), or the Secret observed before that (a stale one).
	const (
		none = iota
		applied
		stale
		garbage
	)
	type call struct {
		want     Want
		observed int
	}
	type result struct {
		// Same says whether the call returned what the call before returned; Mode is the
		// mode of what it returned; SameKeys whether its keys (password, client key) are
		// those of the call before's; Admitted whether the previous client certificate is
		// still admitted by the returned CA bundle.
		Same, SameKeys, Admitted bool
		Mode, Username           string
	}
	cert := cachev1alpha1.AuthModeClientCertificate
	cases := map[string]struct {
		reason string
		calls  []call
		want   []result
	}{
		"ClientCertificatesStable": {
			reason: "Certificates are issued once: read back from their Secret, nothing changes until they are due.",
			calls:  []call{{want(cert, t0), none}, {want(cert, t0), none}, {want(cert, t0.Add(time.Hour)), applied}, {want(cert, t0.Add(59*24*time.Hour)), applied}},
			want: []result{{Mode: cert}, {Same: true, SameKeys: true, Admitted: true, Mode: cert}, {Same: true, SameKeys: true, Admitted: true, Mode: cert},
				{Same: true, SameKeys: true, Admitted: true, Mode: cert}},
		},
		"RenewedOnce": {
			reason: "Certificates due are renewed once, keeping their keys, while the observed Secret still holds the old ones; then read back.",
			calls:  []call{{want(cert, t0), none}, {want(cert, t0), applied}, {want(cert, t0.Add(61*24*time.Hour)), applied}, {want(cert, t0.Add(61*24*time.Hour)), stale}, {want(cert, t0.Add(62*24*time.Hour)), applied}},
			want: []result{{Mode: cert}, {Same: true, SameKeys: true, Admitted: true, Mode: cert}, {SameKeys: true, Admitted: true, Mode: cert},
				{Same: true, SameKeys: true, Admitted: true, Mode: cert}, {Same: true, SameKeys: true, Admitted: true, Mode: cert}},
		},
		"ModeChangedOnce": {
			reason: "A new mode replaces the credentials once, like a new rotation, while the observed Secret is still the old mode's.",
			calls:  []call{{want("", t0), none}, {want("", t0), applied}, {want(cert, t0), applied}, {want(cert, t0), stale}, {want(cert, t0), applied}},
			want: []result{{Mode: "", Username: "memcached"}, {Same: true, SameKeys: true, Mode: "", Username: "memcached"}, {Mode: cert},
				{Same: true, SameKeys: true, Admitted: true, Mode: cert}, {Same: true, SameKeys: true, Admitted: true, Mode: cert}},
		},
		"PasswordIsTheUnnamedMode": {
			reason: "An auth Secret from before modes (no mode annotation) is Password's: an upgrade changes no credential.",
			calls:  []call{{want("", t0), none}, {want(cachev1alpha1.AuthModePassword, t0), applied}},
			want:   []result{{Mode: "", Username: "memcached"}, {Same: true, SameKeys: true, Mode: "", Username: "memcached"}},
		},
		"SASLRealm": {
			reason: "SASL usernames carry their realm: Cyrus SASL would append each replica's own host name to a bare one.",
			calls:  []call{{want(cachev1alpha1.AuthModeSASL, t0), none}, {want(cachev1alpha1.AuthModeSASL, t0), applied}},
			want: []result{{Mode: cachev1alpha1.AuthModeSASL, Username: "memcached@memcached"},
				{Same: true, SameKeys: true, Mode: cachev1alpha1.AuthModeSASL, Username: "memcached@memcached"}},
		},
		"HandEditedCertificates": {
			reason: "Certificates edited by hand into something unusable are replaced whole, once.",
			calls:  []call{{want(cert, t0), none}, {want(cert, t0), applied}, {want(cert, t0), garbage}, {want(cert, t0), garbage}},
			want: []result{{Mode: cert}, {Same: true, SameKeys: true, Admitted: true, Mode: cert}, {Mode: cert},
				{Same: true, SameKeys: true, Admitted: true, Mode: cert}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := NewStore()
			s.Random = counter()
			var got []result
			var last, before render.Auth
			for i, c := range tc.calls {
				var observed *Secret
				switch c.observed {
				case applied:
					observed = stored(last)
				case stale:
					observed = stored(before)
				case garbage:
					observed = stored(last)
					observed.Data[render.CAKey] = []byte("-----BEGIN EC PRIVATE KEY-----\nbm90\n-----END EC PRIVATE KEY-----\n")
				}
				a, err := s.Get(Owner{Namespace: "team-a", UID: "uid"}, c.want, observed, nil)
				if err != nil {
					t.Fatalf("%s\nGet #%d: %v", tc.reason, i+1, err)
				}
				r := result{Same: i > 0 && a == last, Mode: a.Mode, SameKeys: i > 0 && sameKeys(a, last), Username: a.Username}
				if a.Mode == cert && last.Mode == cert {
					r.Admitted = admits(t, a.Certificates.CA, last.Certificates.Client, c.want.Now)
				}
				if a.Mode == cert && (a.Username != "" || a.Password != "") {
					t.Errorf("Get #%d: client certificates with a username or password", i+1)
				}
				got = append(got, r)
				if c.observed != stale {
					before = last
				}
				last = a
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\n-want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// admits reports whether the CA bundle admits the client certificate at now.
func admits(t *testing.T, bundle, client string, now time.Time) bool {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM([]byte(bundle))
	block, _ := pem.Decode([]byte(client))
	if block == nil {
		return false
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	return err == nil
}
