// Package credentials keeps a Memcached's generated credentials stable, for the composition
// function and the provider alike: generated once per value of spec.auth.rotation and mode
// and, from then on, read back from the auth Secret that holds them, so that no reconcile
// changes the password or the client certificate's key under a running application. Between
// generating them and seeing them stored (the apply and the next observation race), they wait
// in a Store. Certificates (the ClientCertificate mode) are renewed before they expire, keeping
// their keys (package pki): a renewal waits in the Store the same way, so that it too happens
// once.
//
// One Store serves every tenant, so no tenant may make it drop another's pending credentials:
// their owner would generate a second set, locking out the clients that took the first. Each
// Memcached holds at most one entry, each namespace at most MaxPendingPerNamespace, and a new
// entry beyond a bound waits (Waiting) rather than evicting anyone's.
package credentials

import (
	"cmp"
	"crypto/rand"
	"fmt"
	"io"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	cachev1alpha1 "github.com/example/function-memcached/apis/cache/v1alpha1"

	"github.com/example/function-memcached/internal/pki"
	"github.com/example/function-memcached/internal/render"
	"github.com/example/function-memcached/internal/resolve"
)

// MaxPendingPerNamespace bounds the entries of one namespace, one tenant's. An entry lives
// from the reconcile that generated its credentials until their auth Secret is observed,
// seconds later: only creating or rotating that many Memcacheds at once, or rotating some
// again and again, reaches it, and then only that namespace's new entries wait.
const MaxPendingPerNamespace = 64

// MaxPending bounds the whole Store, a few MB, whatever the namespaces: only a tenant holding
// hundreds of full namespaces reaches it.
const MaxPending = 16384

// IdleTTL is how long an entry nobody asked for stays pending. An owner with an entry asks
// again within minutes (the function's SettledTTL, the provider's poll) until it is stored; an
// entry idle longer belongs to a Memcached deleted before its auth Secret was observed (the
// function learns of no deletion). A bound reached is never permanent: an idle entry of the
// same namespace gives way to a new one, and, when the whole Store is full, an idle entry of
// any namespace, whose owner is gone and whose credentials no client can have taken.
const IdleTTL = 15 * time.Minute

// ErrWaiting is what errors.Is finds in the error of a Get whose new credentials wait.
var ErrWaiting = errors.New("new credentials wait")

// Waiting is the error of a Get whose new credentials wait: Pending entries of Namespace (""
// for cluster-scoped XRs without a claim; the whole Store when All) already wait to be
// stored, Limit the most there may be.
type Waiting struct {
	Namespace      string
	All            bool
	Pending, Limit int
}

func (w *Waiting) Error() string {
	if w.All {
		return fmt.Sprintf("%d Memcacheds across all namespaces have new credentials not stored yet, the most there may be: "+
			"new credentials wait until some of theirs are stored, or one of them is idle for %s", w.Pending, IdleTTL)
	}
	where := "namespace " + w.Namespace
	if w.Namespace == "" {
		where = "the cluster scope (XMemcacheds without a claim)"
	}
	return fmt.Sprintf("%s already has %d Memcacheds whose new credentials are not stored yet, the most a namespace may have (%d): "+
		"new credentials wait until one of theirs is stored, or one of them is idle for %s; creating or rotating many Memcacheds at once, "+
		"or rotating one again and again, fills it", where, w.Pending, w.Limit, IdleTTL)
}

// Is makes errors.Is(err, ErrWaiting) true.
func (w *Waiting) Is(target error) bool { return target == ErrWaiting }

// An Owner is the Memcached whose credentials a Store holds: its UID (an XR's or an
// Instance's) and the namespace of the tenant it belongs to, whose bound it counts against.
type Owner struct {
	Namespace, UID string
}

// entry is an owner's pending credentials: those generated (or renewed) for rotation and
// mode, and when the owner last asked for them.
type entry struct {
	namespace, rotation, mode string
	auth                      render.Auth
	used                      time.Time
}

// A Store holds generated credentials until their auth Secret is observed. A nil *Store
// remembers nothing, and never waits.
type Store struct {
	mu sync.Mutex
	// pending holds one entry per owner UID; byNamespace the same entries by namespace.
	pending     map[string]*entry
	byNamespace map[string]map[string]*entry
	// Random returns the source of new passwords and salts: crypto/rand unless a test sets it.
	Random func() io.Reader
	// Now is the clock idle entries are judged by: time.Now unless a test sets it.
	Now func() time.Time
}

// NewStore returns a Store that holds nothing yet.
func NewStore() *Store {
	return &Store{
		pending:     map[string]*entry{},
		byNamespace: map[string]map[string]*entry{},
		Random:      func() io.Reader { return rand.Reader },
		Now:         time.Now,
	}
}

// A Secret is what an observed auth Secret holds: its data, and the rotation and mode it was
// generated for (its render.AnnotationRotation and render.AnnotationAuthMode annotations;
// an empty Mode is Password's).
type Secret struct {
	Data           map[string][]byte
	Rotation, Mode string
}

// ObservedSecret is the Secret of an auth Secret's data and annotations.
func ObservedSecret(data map[string][]byte, annotations map[string]string) *Secret {
	return &Secret{Data: data, Rotation: annotations[render.AnnotationRotation], Mode: annotations[render.AnnotationAuthMode]}
}

// A Want is what an owner asks a Store for: credentials of Mode (empty: Password) generated
// for Rotation, judged at Now (certificates due then are renewed). Subject and Hosts name the
// Memcached in the certificates the ClientCertificate mode issues (pki.New).
type Want struct {
	Mode, Rotation string
	Now            time.Time
	Subject        string
	Hosts          []string
}

// SameMode reports whether modes a and b are the same, an empty one being Password.
func SameMode(a, b string) bool {
	return cmp.Or(a, cachev1alpha1.AuthModePassword) == cmp.Or(b, cachev1alpha1.AuthModePassword)
}

// WantFor is what the credentials of m, resolved with auth on, are asked for at now: its
// mode and rotation, and its name and hosts for the certificates. The function and the
// provider ask alike.
func WantFor(m render.Memcached, now time.Time) Want {
	return Want{Mode: m.Auth.Mode, Rotation: m.Auth.Rotation, Now: now,
		Subject: m.Namespace + "/" + m.Name, Hosts: pki.Hosts(render.Host(m), m.Name, m.Namespace)}
}

// mode is w's mode, Password when empty.
func (w Want) mode() string {
	return cmp.Or(w.Mode, cachev1alpha1.AuthModePassword)
}

// read returns the credentials data holds for mode, if usable: a username and password, or
// valid certificates (pki.Valid); and their salt.
func read(mode string, data map[string][]byte) (render.Auth, bool) {
	var a render.Auth
	if mode == cachev1alpha1.AuthModeClientCertificate {
		a.Certificates = pki.Certificates{
			CA: string(data[render.ConnectionCA]), CAKey: string(data[render.CAKey]),
			Client: string(data[corev1.TLSCertKey]), ClientKey: string(data[corev1.TLSPrivateKeyKey]),
			Server: string(data[render.ServerCertKey]), ServerKey: string(data[render.ServerKeyKey]),
		}
		if !pki.Valid(a.Certificates) {
			return render.Auth{}, false
		}
		a.Salt = resolve.Salt(data)
	} else {
		var ok bool
		if a, ok = resolve.Credentials(data); !ok {
			return render.Auth{}, false
		}
	}
	if mode != cachev1alpha1.AuthModePassword {
		a.Mode = mode
	}
	return a, true
}

// generate returns new credentials for w from random: a password (with the SASL realm in the
// username, for SASL) or new certificates.
func generate(w Want, random io.Reader) (render.Auth, error) {
	a, err := resolve.NewCredentials(random)
	if err != nil {
		return render.Auth{}, err
	}
	switch w.mode() {
	case cachev1alpha1.AuthModeSASL:
		a.Username += "@" + render.SASLRealm
	case cachev1alpha1.AuthModeClientCertificate:
		a.Username, a.Password = "", ""
		if a.Certificates, err = pki.New(w.Subject, w.Hosts, w.Now); err != nil {
			return render.Auth{}, err
		}
	}
	if w.mode() != cachev1alpha1.AuthModePassword {
		a.Mode = w.mode()
	}
	a.Rotation = w.Rotation
	return a, nil
}

// Get returns the credentials of owner for w: those of observed (nil when no auth Secret is
// observed) when they are usable and were generated for w's rotation and mode, else those
// generated for them earlier, else new ones. A new rotation or mode therefore replaces the
// credentials exactly once, even while the observed Secret is stale. Certificates due for
// renewal at w.Now are renewed, once too: until observed holds the renewal, the Store keeps it.
//
// Credentials without a salt (from before salts, or set by hand) keep their password and get
// a salt, unless unsalted says their unsalted digest is what the pods run with: then they are
// kept as they are, so that an upgrade restarts no pod. unsalted may be nil.
//
// New credentials replace the owner's own entry, if any; an owner without one needs a new
// entry, which waits while its namespace or the Store is full: the error is then a *Waiting
// (ErrWaiting), and the owner keeps what it runs (Held) until a later call gets them.
func (s *Store) Get(owner Owner, w Want, observed *Secret, unsalted func(render.Auth) bool) (render.Auth, error) {
	mode, rotation := w.mode(), w.Rotation
	// What the observed Secret holds, and its renewal, is worked out before the Store is
	// locked: the Secret is the tenant's to write, and parsing it costs its own call, not every
	// tenant's waiting on the lock.
	var a, renewed render.Auth
	var usable, changed bool
	if observed != nil && observed.Rotation == rotation && cmp.Or(observed.Mode, cachev1alpha1.AuthModePassword) == mode {
		if a, usable = read(mode, observed.Data); usable {
			a.Rotation = rotation
			renewed = a
			if mode == cachev1alpha1.AuthModeClientCertificate {
				var err error
				if renewed.Certificates, changed, err = pki.Renew(a.Certificates, w.Subject, w.Hosts, w.Now); err != nil {
					return render.Auth{}, err
				}
			}
		}
	}
	var e *entry
	if s != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		if e = s.pending[owner.UID]; e != nil && e.namespace != owner.Namespace {
			s.drop(owner.UID) // Counted in another namespace: here it is a new entry.
			e = nil
		}
		if e != nil {
			e.used = s.Now()
		}
	}
	pending := e != nil && e.rotation == rotation && e.mode == mode
	if usable {
		switch {
		case !changed && (a.Salt != "" || (unsalted != nil && unsalted(a))):
			s.forget(owner.UID)
			return a, nil
		case pending && e.auth.Salt != "" && sameKeys(e.auth, a) && (!changed || pki.RenewAt(e.auth.Certificates).After(w.Now)):
			return e.auth, nil // The salt, or the renewal, generated earlier.
		}
		return s.remember(owner, rotation, mode, func(random io.Reader) (render.Auth, error) {
			if renewed.Salt != "" {
				return renewed, nil
			}
			salt, err := resolve.NewSalt(random)
			renewed.Salt = salt
			return renewed, err
		})
	}
	if pending {
		return e.auth, nil
	}
	return s.remember(owner, rotation, mode, func(random io.Reader) (render.Auth, error) { return generate(w, random) })
}

// sameKeys reports whether pending and observed are the same credentials but for their salt
// and the certificates' renewal: the same password, or the same keys.
func sameKeys(pending, observed render.Auth) bool {
	p, o := pending.Certificates, observed.Certificates
	return pending.Username == observed.Username && pending.Password == observed.Password &&
		p.ClientKey == o.ClientKey && p.ServerKey == o.ServerKey
}

// remember keeps the credentials generate makes from the Store's randomness as owner's entry
// for rotation, once admit lets it: a nil Store generates them from crypto/rand and keeps
// nothing. s.mu is held.
func (s *Store) remember(owner Owner, rotation, mode string, generate func(io.Reader) (render.Auth, error)) (render.Auth, error) {
	if s == nil {
		return generate(rand.Reader)
	}
	now := s.Now()
	if err := s.admit(owner, now); err != nil {
		return render.Auth{}, err
	}
	a, err := generate(s.Random())
	if err != nil {
		return render.Auth{}, err
	}
	s.put(owner, rotation, mode, a, now)
	return a, nil
}

// Held returns the credentials observed holds, for the rotation they were generated for, when
// they may keep serving while new ones wait: usable, and salted or, as unsalted (nil: never)
// says, running unsalted. Anything else would need new credentials or a new salt.
func Held(observed *Secret, unsalted func(render.Auth) bool) (render.Auth, bool) {
	if observed == nil {
		return render.Auth{}, false
	}
	a, ok := read(cmp.Or(observed.Mode, cachev1alpha1.AuthModePassword), observed.Data)
	if !ok || (a.Salt == "" && (unsalted == nil || !unsalted(a))) {
		return render.Auth{}, false
	}
	a.Rotation = observed.Rotation
	return a, true
}

// Forget forgets what the Store holds for the owner with uid, whose Memcached is gone.
func (s *Store) Forget(uid string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.drop(uid)
}

// forget drops the entry of the owner with uid, if any, from a Store that may be nil. s.mu is
// held.
func (s *Store) forget(uid string) {
	if s != nil {
		s.drop(uid)
	}
}

// admit makes room for owner's entry, or says why it waits. Its own entry is replaced, never
// anyone else's but an idle one (IdleTTL). s.mu is held.
func (s *Store) admit(owner Owner, now time.Time) error {
	if s.pending[owner.UID] != nil {
		return nil
	}
	ns := s.byNamespace[owner.Namespace]
	if len(ns) >= MaxPendingPerNamespace && !s.reclaim(ns, now) {
		return &Waiting{Namespace: owner.Namespace, Pending: len(ns), Limit: MaxPendingPerNamespace}
	}
	if len(s.pending) >= MaxPending && !s.reclaim(ns, now) && !s.reclaim(s.pending, now) {
		return &Waiting{All: true, Pending: len(s.pending), Limit: MaxPending}
	}
	return nil
}

// reclaim drops the entry of entries idle the longest, if one is idle for IdleTTL, and
// reports whether it did. s.mu is held.
func (s *Store) reclaim(entries map[string]*entry, now time.Time) bool {
	uid, idle := "", time.Duration(0)
	for u, e := range entries {
		if d := now.Sub(e.used); d >= IdleTTL && d > idle {
			uid, idle = u, d
		}
	}
	if uid == "" {
		return false
	}
	s.drop(uid)
	return true
}

// put makes a owner's entry for rotation and mode, replacing its own. s.mu is held.
func (s *Store) put(owner Owner, rotation, mode string, a render.Auth, now time.Time) {
	s.drop(owner.UID)
	e := &entry{namespace: owner.Namespace, rotation: rotation, mode: mode, auth: a, used: now}
	s.pending[owner.UID] = e
	ns := s.byNamespace[owner.Namespace]
	if ns == nil {
		ns = map[string]*entry{}
		s.byNamespace[owner.Namespace] = ns
	}
	ns[owner.UID] = e
}

// drop drops the entry of the owner with uid, if any. s.mu is held.
func (s *Store) drop(uid string) {
	e := s.pending[uid]
	if e == nil {
		return
	}
	delete(s.pending, uid)
	ns := s.byNamespace[e.namespace]
	delete(ns, uid)
	if len(ns) == 0 {
		delete(s.byNamespace, e.namespace)
	}
}

// The condition a claim and an Instance carry while the credentials their spec asks for wait
// (False, ReasonWaiting), and once they no longer do (True, ReasonRotated).
const (
	ConditionRotated = "CredentialsRotated"
	ReasonWaiting    = "Waiting"
	ReasonRotated    = "Rotated"
)

// Message is the condition's message while the credentials asked for, for rotation, wait
// for w: those held (nil when none) serve meanwhile, or nothing new runs without them. It
// names rotations, never a credential, and no field: the claim and its Instance share it.
func Message(rotation string, held *render.Auth, w *Waiting) string {
	msg := "new credentials wait"
	if rotation != "" {
		msg = fmt.Sprintf("the credentials of rotation %q wait", rotation)
	}
	switch {
	case held == nil:
		msg += ", and nothing new runs without them"
	case held.Rotation != "":
		msg += fmt.Sprintf(", those of rotation %q serve meanwhile", held.Rotation)
	default:
		msg += ", the current ones serve meanwhile"
	}
	return msg + ": " + w.Error()
}

// MessageRotated is the condition's message once nothing waits.
const MessageRotated = "the credentials are those of the rotation the spec asks for"
