package render

import (
	"cmp"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Key is a canonical encoding of every field of m, nested ones included. Two Memcacheds with
// equal keys render the same objects and connection details, so a key stands for "this
// Memcached" wherever something is remembered per Memcached: the function's render cache, the
// provider's drift verdicts. (Two that differ only where rendering does not look, like an
// empty node selector and none, may have two keys: that costs a rendering, never a wrong
// one.) It is derived from the type by reflection, never listed field by field, so a field
// added to Memcached is part of it without anyone remembering to add it.
// It holds the credentials: keep it in memory, never in a status, event, log or error.
func Key(m Memcached) string {
	return string(AppendKey(nil, m))
}

// AppendKey appends Key(m) to b. It allocates nothing beyond b's growth (and a node
// selector's sorted keys), which matters on the function's path of every reconcile.
func AppendKey(b []byte, m Memcached) []byte {
	// Reflection needs m addressable, which would move every m to the heap: a pooled copy
	// does not.
	p := keyScratch.Get().(*Memcached)
	*p = m
	b = keyOfMemcached(b, reflect.ValueOf(p).Elem())
	*p = Memcached{} // Hold on to nothing of m.
	keyScratch.Put(p)
	return b
}

// keyScratch are the addressable copies AppendKey reflects on.
var keyScratch = sync.Pool{New: func() any { return &Memcached{} }}

// keyEncoder appends the encoding of v, a value of the type it was built for, to b.
type keyEncoder func(b []byte, v reflect.Value) []byte

// keyOfMemcached is built once, from the type.
var keyOfMemcached = encoderFor(reflect.TypeFor[Memcached](), map[reflect.Type]bool{})

// encoderFor builds the encoder of t. Every value is written so that the encoding can be read
// back unambiguously: strings and collections are length-prefixed, a nil pointer differs from
// any value, struct fields come in declaration order and map entries in key order. A CPU
// quantity is its canonical string (so 1000m and 1 are one key, as they render the same). A
// type this cannot walk (an interface, unexported fields) is its JSON encoding.
func encoderFor(t reflect.Type, building map[reflect.Type]bool) keyEncoder {
	if t == reflect.TypeFor[resource.Quantity]() {
		return appendQuantity
	}
	if building[t] {
		return appendJSON // A type that contains itself: none does today.
	}
	building[t] = true
	defer delete(building, t)
	switch t.Kind() {
	case reflect.Bool:
		return func(b []byte, v reflect.Value) []byte { return strconv.AppendBool(b, v.Bool()) }
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return func(b []byte, v reflect.Value) []byte { return strconv.AppendInt(b, v.Int(), 10) }
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return func(b []byte, v reflect.Value) []byte { return strconv.AppendUint(b, v.Uint(), 10) }
	case reflect.String:
		return func(b []byte, v reflect.Value) []byte { return appendString(b, v.String()) }
	case reflect.Pointer:
		elem := encoderFor(t.Elem(), building)
		return func(b []byte, v reflect.Value) []byte {
			if v.IsNil() {
				return append(b, '~')
			}
			return elem(append(b, '&'), v.Elem())
		}
	case reflect.Slice:
		elem := encoderFor(t.Elem(), building)
		return func(b []byte, v reflect.Value) []byte {
			if v.IsNil() {
				return append(b, '~')
			}
			b = append(strconv.AppendInt(append(b, '['), int64(v.Len()), 10), ':')
			for i := range v.Len() {
				b = append(elem(b, v.Index(i)), ',')
			}
			return append(b, ']')
		}
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			break
		}
		elem := encoderFor(t.Elem(), building)
		return func(b []byte, v reflect.Value) []byte {
			if v.IsNil() {
				return append(b, '~')
			}
			keys := v.MapKeys()
			slices.SortFunc(keys, func(x, y reflect.Value) int { return cmp.Compare(x.String(), y.String()) })
			b = append(strconv.AppendInt(append(b, '{'), int64(len(keys)), 10), ':')
			for _, k := range keys {
				b = append(elem(append(appendString(b, k.String()), '='), v.MapIndex(k)), ',')
			}
			return append(b, '}')
		}
	case reflect.Struct:
		fields := make([]keyEncoder, t.NumField())
		walkable := true
		for i := range t.NumField() {
			if !t.Field(i).IsExported() {
				walkable = false
				break
			}
			fields[i] = encoderFor(t.Field(i).Type, building)
		}
		if !walkable {
			break
		}
		return func(b []byte, v reflect.Value) []byte {
			b = append(b, '(')
			for i, f := range fields {
				b = append(f(b, v.Field(i)), ';')
			}
			return append(b, ')')
		}
	}
	return appendJSON
}

// appendJSON appends the JSON encoding of v, for types encoderFor cannot walk.
func appendJSON(b []byte, v reflect.Value) []byte {
	j, _ := json.Marshal(v.Interface()) // A typed value of the API's types encodes.
	return appendString(b, string(j))
}

// appendQuantity appends a quantity's canonical form, as Quantity.String writes it but
// without caching it in the quantity, which others may be reading. The form (digits, a sign,
// a decimal point, an exponent or a suffix) holds no separator, so it needs no length.
func appendQuantity(b []byte, v reflect.Value) []byte {
	var q *resource.Quantity
	if v.CanAddr() {
		q = v.Addr().Interface().(*resource.Quantity)
	} else {
		c := v.Interface().(resource.Quantity)
		q = &c
	}
	if q.IsZero() {
		return append(b, '0')
	}
	n, suffix := q.CanonicalizeBytes(b) // Appends the number to b.
	return append(n, suffix...)
}

// appendString appends s with its length, so that no content can pass for a separator.
func appendString(b []byte, s string) []byte {
	return append(append(strconv.AppendInt(b, int64(len(s)), 10), ':'), s...)
}
