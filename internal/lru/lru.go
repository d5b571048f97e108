// Package lru is the one cache type of the function and the provider: a bounded,
// least-recently-used map that many goroutines may share, and the one way its keys are made
// from values (KeyOf). Every memo of this repository is one of these, so each has the same
// bound, the same eviction and the same locking, and none has a rule of its own to remember.
package lru

import (
	"crypto/sha256"
	"encoding/json"
	"reflect"
	"strings"

	"k8s.io/utils/lru"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// Cache maps keys to values, holding at most the size it was made with: adding to a full
// cache forgets the entry used least recently. It is safe for concurrent use. A value is
// handed out as it was added, so values must not be changed once added.
type Cache[K comparable, V any] struct {
	c *lru.Cache
}

// New returns an empty Cache that holds at most size entries, at least one.
func New[K comparable, V any](size int) *Cache[K, V] {
	if size < 1 {
		panic("lru.New: a cache holds at least one entry") // k8s.io/utils/lru would hold any number.
	}
	return &Cache[K, V]{c: lru.New(size)}
}

// Get returns the value of key, and whether the cache holds one.
func (c *Cache[K, V]) Get(key K) (V, bool) {
	v, ok := c.c.Get(key)
	if !ok {
		var zero V
		return zero, false
	}
	return v.(V), true
}

// Add sets the value of key.
func (c *Cache[K, V]) Add(key K, value V) {
	c.c.Add(key, value)
}

// Remove forgets key.
func (c *Cache[K, V]) Remove(key K) {
	c.c.Remove(key)
}

// Len is the number of entries held.
func (c *Cache[K, V]) Len() int {
	return c.c.Len()
}

// A Key identifies a value by content: the SHA-256 of its JSON encoding.
type Key [sha256.Size]byte

// KeyOf is the Key of v. It derives from the value's type, never from a list of fields: a
// field added to the type is part of every key without anyone remembering to add it, as long
// as JSON writes it (Keyable checks a key type for that). JSON writes struct fields in
// declaration order and map entries in key order, so equal values have equal keys; a
// resource.Quantity is written in its canonical form, so 1000m and 1 are one key. A key holds
// no readable part of v, so a value with credentials in it may be keyed.
func KeyOf(v any) (Key, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return Key{}, errors.Wrap(err, "cannot encode a cache key")
	}
	return sha256.Sum256(b), nil
}

// Keyable returns an error when KeyOf would leave out a field of the struct type t: an
// unexported field, or one tagged json:"-" or omitempty (which JSON writes for some values
// only). Each cache's guard test calls it on its key type, so that a field added in a hurry
// cannot make two different inputs share a key. It looks at t's own fields: the API types
// they hold are keyed as JSON writes them, which is also how they are rendered.
func Keyable(t reflect.Type) error {
	if t.Kind() != reflect.Struct {
		return errors.Errorf("%s is not a struct", t)
	}
	for f := range t.Fields() {
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case !f.IsExported():
			return errors.Errorf("%s.%s is unexported: JSON, and so KeyOf, leaves it out", t, f.Name)
		case name == "-" || strings.Contains(","+opts+",", ",omitempty,") || strings.Contains(","+opts+",", ",omitzero,"):
			return errors.Errorf("%s.%s is tagged %q: JSON, and so KeyOf, leaves it out for some values", t, f.Name, f.Tag.Get("json"))
		}
	}
	return nil
}
