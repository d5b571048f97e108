package cluster

import (
	"sync"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// What the provider holds of a target cluster is estimated from what its watches read,
// before client-go decodes it: a decoded object costs perObject bytes however small its JSON
// (an empty Deployment is about 1.3 KiB of Go structs), and perByte bytes for each byte of
// JSON (a Deployment with many small labels decodes to 4.6 times its JSON). Measured on
// Kubernetes 1.35's types: docs/performance.md#what-a-target-cluster-can-make-the-provider-hold.
const (
	perObject = 1536
	perByte   = 5
)

// estimate is what objects decoded from n bytes of JSON hold.
func estimate(objects int, n int64) int64 {
	return int64(objects)*perObject + n*perByte
}

// minWatched is the least the watches of one resource in one namespace may read between two
// lists, however small the last list was: a few hundred changes of a typical object.
const minWatched = 1 << 20

// A ledger adds up what the watches of a set of target namespaces hold, and refuses what
// would take it past its limit: one ledger per namespaced ProviderConfig's connection, whose
// parent is the ledger of every namespaced ProviderConfig of its namespace (its tenant's). A
// nil ledger holds anything: a ClusterProviderConfig's target is the platform's.
type ledger struct {
	// what names whose ledger it is, for errors: "ProviderConfig team-a/hostile".
	what string
	// flag is the provider flag that sets limit.
	flag   string
	limit  int64
	parent *ledger

	mu   sync.Mutex
	held int64
}

// charge adds n (which may be negative) to the ledger and its parents, or, when that takes
// any of them past its limit, nothing, and says which.
func (l *ledger) charge(n int64) error {
	var chain []*ledger
	for x := l; x != nil; x = x.parent {
		x.mu.Lock()
		chain = append(chain, x)
	}
	defer func() {
		for _, x := range chain {
			x.mu.Unlock()
		}
	}()
	if n > 0 {
		for _, x := range chain {
			if x.held+n > x.limit {
				return errors.Errorf("what the provider holds of %s's target clusters would exceed %d MiB (estimated from what their watches read), the provider's limit (%s=%d)", x.what, x.limit>>20, x.flag, x.limit>>20)
			}
		}
	}
	for _, x := range chain {
		x.held += n
	}
	return nil
}

// holds is what the ledger holds now.
func (l *ledger) holds() int64 {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held
}

// errStopped is a request of watches that were stopped meanwhile.
var errStopped = errors.New("the watches of this namespace stopped")

// errRelist is a watch that read its share since the last list: client-go's reflector backs
// off and lists again, which replaces what it held.
type errRelist struct{ error }

// An account is what the watches of one resource in one cache (one target namespace's owned
// objects, or its TLS Secrets) hold: the objects of the last list, those the watches added
// since, and the bytes both read, charged to a ledger.
type account struct {
	resource, namespace string
	// objects bounds the objects held (Limits.Objects).
	objects int
	ledger  *ledger

	mu      sync.Mutex
	held    int
	listed  int64
	watched int64
	charged int64
	closed  bool
}

// list replaces what the account holds by a list of items objects in n bytes, or, for a
// list's next page, adds them to the pages before. It fails, charging nothing, when the list
// holds more objects than the account may, or its ledger cannot hold it.
func (a *account) list(items int, n int64, next bool) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return errStopped
	}
	if next {
		items, n = a.held+items, a.listed+n
	}
	if items > a.objects {
		return a.tooMany(items)
	}
	want := estimate(items, n)
	if err := a.ledger.charge(want - a.charged); err != nil {
		return err
	}
	a.held, a.listed, a.watched, a.charged = items, n, 0, want
	return nil
}

// watch charges n more bytes a watch read. It fails with errRelist once the watches read as
// much as the last list (at least minWatched, at most MaxWatched) or the ledger is full: the
// watch ends and its reflector lists again.
func (a *account) watch(n int64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return errStopped
	}
	share := min(max(a.listed, minWatched), MaxWatched)
	if a.watched+n > share {
		return errRelist{errors.Errorf("the watches of %s in namespace %s read more than %d bytes since they last listed, as much as the provider reads between two lists: they list again", a.resource, a.namespace, share)}
	}
	if err := a.ledger.charge(n * perByte); err != nil {
		return errRelist{err}
	}
	a.watched += n
	a.charged += n * perByte
	return nil
}

// count sets the objects held to n: what the informer's store holds, with the one a watch
// is about to add. It fails when that is more than the account may hold, or more than its
// ledger can.
func (a *account) count(n int) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.set(n)
}

// add counts delta more objects held (fewer when negative).
func (a *account) add(delta int) error {
	if delta == 0 {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.set(max(0, a.held+delta))
}

// set sets the objects held to n; a.mu is held.
func (a *account) set(n int) error {
	if a.closed {
		return errStopped
	}
	if n > a.objects {
		return a.tooMany(n)
	}
	delta := int64(n-a.held) * perObject
	if err := a.ledger.charge(delta); err != nil {
		return err
	}
	a.held = n
	a.charged += delta
	return nil
}

// close gives back what the account held: its watches stopped.
func (a *account) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.closed {
		_ = a.ledger.charge(-a.charged)
		a.closed, a.charged = true, 0
	}
}

func (a *account) tooMany(n int) error {
	return errors.Errorf("the target cluster would have the provider hold %d %s of namespace %s, more than the provider's limit of %d objects of one resource in one namespace (--max-target-objects=%d)", n, a.resource, a.namespace, a.objects, a.objects)
}

// accounts are the accounts of one cache, by resource; the first use of a resource opens its
// account.
type accounts struct {
	namespace string
	objects   int
	ledger    *ledger

	mu sync.Mutex
	m  map[string]*account
}

func newAccounts(namespace string, objects int, l *ledger) *accounts {
	if objects <= 0 {
		objects = int(^uint(0) >> 1)
	}
	return &accounts{namespace: namespace, objects: objects, ledger: l, m: map[string]*account{}}
}

func (as *accounts) of(resource string) *account {
	as.mu.Lock()
	defer as.mu.Unlock()
	a, ok := as.m[resource]
	if !ok {
		a = &account{resource: resource, namespace: as.namespace, objects: as.objects, ledger: as.ledger}
		as.m[resource] = a
	}
	return a
}

// close closes every account.
func (as *accounts) close() {
	as.mu.Lock()
	defer as.mu.Unlock()
	for _, a := range as.m {
		a.close()
	}
}
