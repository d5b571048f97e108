package cluster

import (
	"sync"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

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

// lock locks l and its parents, child first, and returns them.
func (l *ledger) lock() []*ledger {
	var chain []*ledger
	for x := l; x != nil; x = x.parent {
		x.mu.Lock()
		chain = append(chain, x)
	}
	return chain
}

func unlock(chain []*ledger) {
	for _, x := range chain {
		x.mu.Unlock()
	}
}

// charge adds n (which may be negative) to the ledger and its parents, or, when that takes
// any of them past its limit, nothing, and says which.
func (l *ledger) charge(n int64) error {
	chain := l.lock()
	defer unlock(chain)
	if err := over(chain, n); err != nil {
		return err
	}
	for _, x := range chain {
		x.held += n
	}
	return nil
}

// fits says which of l and its parents could not hold n more; nil when all could.
func (l *ledger) fits(n int64) error {
	chain := l.lock()
	defer unlock(chain)
	return over(chain, n)
}

func over(chain []*ledger, n int64) error {
	if n <= 0 {
		return nil
	}
	for _, x := range chain {
		if x.held+n > x.limit {
			return errors.Errorf("what the provider holds of %s's target clusters would exceed %d MiB (estimated from what their answers decode to), the provider's limit (%s=%d)", x.what, x.limit>>20, x.flag, x.limit>>20)
		}
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
// objects, or its TLS Secrets) hold, charged to a ledger: each object the informer's store
// holds, by key, at the estimate of what it decoded from (an object of a list at the list's
// average), a list's estimate from when the transport reads it until the informer has its
// objects, and each watch event's from when it is read until the informer has it.
type account struct {
	resource, namespace string
	// objects bounds the objects held (Limits.Objects).
	objects int
	ledger  *ledger

	mu sync.Mutex
	// keys are the objects held, and the estimate charged for each.
	keys map[string]int64
	// page counts the objects of the list being read (its pages add up), list its estimate.
	page int
	list int64
	// events are the estimates of the watch events read and not yet handed on, in order.
	events []int64
	// listed and watched are the bytes of the last list and of the watches since, for the
	// watches' share.
	listed, watched int64
	charged         int64
	closed          bool
}

// charge charges n to the account's ledger; a.mu is held.
func (a *account) charge(n int64) error {
	if err := a.ledger.charge(n); err != nil {
		return err
	}
	a.charged += n
	return nil
}

// admits says why a list's page of which items objects, estimated at cost, have been read so
// far cannot be held (a first page replacing the list before it); nil while it can.
func (a *account) admits(items int, cost int64, next bool) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return errStopped
	}
	if next {
		items += a.page
	} else {
		cost -= a.list
	}
	if items > a.objects {
		return a.tooMany(items)
	}
	return a.ledger.fits(cost)
}

// listing charges a list's page of items objects, n bytes estimated at cost, before client-go
// decodes it: a first page replaces the list before it, a next page adds to it. It fails,
// charging nothing, when the list has more objects than the account may hold, or its ledger
// cannot hold it.
func (a *account) listing(items int, n, cost int64, next bool) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return errStopped
	}
	if !next {
		_ = a.charge(-a.list)
		a.page, a.list, a.listed = 0, 0, 0
	}
	if a.page+items > a.objects {
		return a.tooMany(a.page + items)
	}
	if err := a.charge(cost); err != nil {
		return err
	}
	a.page += items
	a.list += cost
	a.listed += n
	a.watched = 0
	return nil
}

// decoded replaces the objects held by keys, those of a page the informer decoded (added to
// the page before when next), at the list's average estimate.
func (a *account) decoded(keys []string, next bool) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return errStopped
	}
	if !next {
		for _, c := range a.keys {
			_ = a.charge(-c)
		}
		a.keys = map[string]int64{}
	}
	if len(a.keys)+len(keys) > a.objects {
		return a.tooMany(len(a.keys) + len(keys))
	}
	each := a.list / int64(max(1, len(keys)))
	for _, k := range keys {
		a.keys[k] += each
	}
	// What stays of the page's estimate (its rounding) is charged to nothing held.
	_ = a.charge(-(a.list - each*int64(len(keys))))
	a.list = 0
	return nil
}

// reading charges n more bytes a watch read, which hold a partial event estimated at
// partial. It fails with errRelist once the watches read as much as the last list (at least
// minWatched, at most MaxWatched), and otherwise when the ledger cannot hold the event.
func (a *account) reading(n, partial int64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return errStopped
	}
	share := min(max(a.listed, minWatched), MaxWatched)
	if a.watched+n > share {
		return errRelist{errors.Errorf("the watches of %s in namespace %s read more than %d bytes since they last listed, as much as the provider reads between two lists: they list again", a.resource, a.namespace, share)}
	}
	a.watched += n
	return a.ledger.fits(partial)
}

// read charges a watch event estimated at cost, read whole, until the informer has it.
func (a *account) read(cost int64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return errStopped
	}
	if err := a.charge(cost); err != nil {
		return err
	}
	a.events = append(a.events, cost)
	return nil
}

// restart forgets the events of a watch that ended: a new one begins.
func (a *account) restart() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, c := range a.events {
		_ = a.charge(-c)
	}
	a.events = nil
}

// Event kinds of the watch events an account hands on.
const (
	upsert = iota
	remove
	other
)

// handOn moves the next watch event's estimate to the object key it concerns: an upsert
// holds it (instead of what the key held), a remove frees both, any other event frees its
// own. It fails when an upsert of a new key would hold more objects than the account may.
func (a *account) handOn(key string, kind int) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return errStopped
	}
	var cost int64
	if len(a.events) > 0 {
		cost, a.events = a.events[0], a.events[1:]
	}
	old, held := a.keys[key]
	switch {
	case kind == upsert && !held && len(a.keys)+1 > a.objects:
		_ = a.charge(-cost)
		return a.tooMany(len(a.keys) + 1)
	case kind == upsert:
		if a.keys == nil {
			a.keys = map[string]int64{}
		}
		a.keys[key] = cost
		_ = a.charge(-old)
	case kind == remove:
		delete(a.keys, key)
		_ = a.charge(-old - cost)
	default:
		_ = a.charge(-cost)
	}
	return nil
}

// held is how many objects the account holds.
func (a *account) held() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.keys)
}

// close gives back what the account held: its watches stopped.
func (a *account) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.closed {
		_ = a.ledger.charge(-a.charged)
		a.closed, a.charged, a.keys, a.events = true, 0, nil, nil
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
		a = &account{resource: resource, namespace: as.namespace, objects: as.objects, ledger: as.ledger, keys: map[string]int64{}}
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
