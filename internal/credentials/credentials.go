// Package credentials keeps a Memcached's generated credentials stable, for the composition
// function and the provider alike: generated once per value of spec.auth.rotation and, from
// then on, read back from the auth Secret that holds them, so that no reconcile changes the
// password under a running application. Between generating them and seeing them stored (the
// apply and the next observation race), they wait in a Store.
package credentials

import (
	"crypto/rand"
	"io"
	"strings"
	"sync"

	"github.com/example/function-memcached/internal/render"
	"github.com/example/function-memcached/internal/resolve"
)

// MaxPending bounds the credentials a Store holds: each is an entry only from the reconcile
// that generated them until their auth Secret is observed, seconds later. When full, one is
// forgotten at random; it is generated again if still needed.
const MaxPending = 1024

// A Store holds generated credentials until their auth Secret is observed. A nil *Store
// remembers nothing.
type Store struct {
	mu      sync.Mutex
	pending map[string]render.Auth
	// Random returns the source of new passwords and salts: crypto/rand unless a test sets it.
	Random func() io.Reader
}

// NewStore returns a Store that holds nothing yet.
func NewStore() *Store {
	return &Store{pending: map[string]render.Auth{}, Random: func() io.Reader { return rand.Reader }}
}

// A Secret is what an observed auth Secret holds: its data and the rotation it was generated
// for (its render.AnnotationRotation annotation).
type Secret struct {
	Data     map[string][]byte
	Rotation string
}

// Get returns the credentials of the Memcached owner (an XR's or an Instance's UID) for
// rotation: those of observed (nil when no auth Secret is observed) when they are usable and
// were generated for rotation, else those generated for it earlier, else new ones. A new
// rotation therefore replaces the credentials exactly once, even while the observed Secret
// is stale.
//
// Credentials without a salt (from before salts, or set by hand) keep their password and get
// a salt, unless unsalted says their unsalted digest is what the pods run with: then they are
// kept as they are, so that an upgrade restarts no pod. unsalted may be nil.
func (s *Store) Get(owner, rotation string, observed *Secret, unsalted func(render.Auth) bool) (render.Auth, error) {
	key := owner + "\x00" + rotation
	random := func() io.Reader { return rand.Reader }
	if s != nil {
		random = s.Random
		s.mu.Lock()
		defer s.mu.Unlock()
	}
	if observed != nil && observed.Rotation == rotation {
		if a, ok := resolve.Credentials(observed.Data); ok {
			a.Rotation = rotation
			if a.Salt != "" || (unsalted != nil && unsalted(a)) {
				s.forget(key)
				return a, nil
			}
			if p, ok := s.lookup(key); ok && p.Username == a.Username && p.Password == a.Password && p.Salt != "" {
				return p, nil
			}
			salt, err := resolve.NewSalt(random())
			if err != nil {
				return render.Auth{}, err
			}
			a.Salt = salt
			s.remember(key, a)
			return a, nil
		}
	}
	if p, ok := s.lookup(key); ok {
		return p, nil
	}
	a, err := resolve.NewCredentials(random())
	if err != nil {
		return render.Auth{}, err
	}
	a.Rotation = rotation
	s.remember(key, a)
	return a, nil
}

// Forget forgets what the Store holds for owner, whose Memcached is gone.
func (s *Store) Forget(owner string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.pending {
		if strings.HasPrefix(k, owner+"\x00") {
			delete(s.pending, k)
		}
	}
}

// lookup returns the credentials waiting under key; s.mu is held.
func (s *Store) lookup(key string) (render.Auth, bool) {
	if s == nil {
		return render.Auth{}, false
	}
	a, ok := s.pending[key]
	return a, ok
}

// forget forgets the credentials under key; s.mu is held.
func (s *Store) forget(key string) {
	if s != nil {
		delete(s.pending, key)
	}
}

// remember keeps a under key until its auth Secret is observed; s.mu is held.
func (s *Store) remember(key string, a render.Auth) {
	if s == nil {
		return
	}
	if len(s.pending) >= MaxPending {
		for k := range s.pending { // Forget one at random; it is generated again if needed.
			delete(s.pending, k)
			break
		}
	}
	s.pending[key] = a
}
