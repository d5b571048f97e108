package fn

import (
	"maps"
	"slices"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/example/function-memcached/internal/render"
)

// A Memcached in another cluster gets its credentials and TLS details from the provider: it
// generates the credentials there and publishes the Instance's connection details (the keys
// of render.ConnectionDetails, same names and values as a local claim's) to the Secret the
// Instance's spec.writeConnectionSecretToRef names. Crossplane reads that Secret and hands its
// data to the function with the observed Instance (observed.resources[k].connection_details;
// nothing without a writeConnectionSecretToRef), and the function carries it into the claim's
// connection details, or a namespaced XR's composed connection Secret.

// InstanceConnectionSecretSuffix ends the name of the Secret an Instance publishes its
// connection details to, beside the Instance in the claim's namespace: <instance>.instance-connection.
// The dot keeps it apart from every name the function gives an object (DNS labels with
// suffixes such as -connection, -auth, -tls-active, none with a dot), whatever the claims of
// the namespace are called; and the name is derived from the Instance's own, never from the
// claim's spec.
const InstanceConnectionSecretSuffix = ".instance-connection"

// InstanceConnectionSecretName is the Secret the Instance named instance publishes its
// connection details to, in its own namespace.
func InstanceConnectionSecretName(instance string) string {
	return instance + InstanceConnectionSecretSuffix
}

// connectionKeys are every key of a Memcached's connection details, and addressKeys those the
// function derives from its name alone (endpoint, host, port, srv): both from render's one
// definition. The other keys (username, password, tls, ca.crt) of a Memcached in another
// cluster only its Instance knows.
var (
	connectionKeys = render.ConnectionKeys()
	addressKeys    = slices.Sorted(maps.Keys(render.ConnectionDetails(render.Memcached{})))
)

// remoteConnection returns the connection details of a Memcached that runs in another cluster
// through the Instance under composed resource name ik, rendered as r:
//   - once that Instance has published its details, those (of connectionKeys), the endpoint,
//     host and port the function knows standing in for any it lacks;
//   - until then, the endpoint, host and port the function knows, and whatever else the claim
//     already holds (held): an Instance that published once and lacks its Secret in one
//     observation (Crossplane's cache behind the provider, a Secret deleted by hand and
//     published again) blanks out no credential an application uses;
//   - but nothing of what the claim holds while a move is under way (moving): those are the
//     credentials of the Memcached being deleted, here or in the old cluster, and the new one's
//     come when its Instance publishes them.
//
// A legacy claim's connection Secret only ever gains keys (Crossplane merges the XR's details
// into the XR's Secret and copies that to the claim's), so a key the claim holds and must lose
// is given empty; a namespaced XR's composed Secret just omits it.
//
// Of what the Instance published, only the keys m's authentication mode and TLS have: a
// provider before this version publishes with a merge patch that never removes a key, so its
// Secret keeps the client key after a change to the password, or the password after auth is
// turned off.
func remoteConnection(o *observation, r *rendered, ik string, namespaced bool, m render.Memcached) map[string][]byte {
	published := o.resources[ik].GetConnectionDetails()
	held := o.heldConnection(namespaced)
	keys := publishedKeys(m)
	out := make(map[string][]byte, len(connectionKeys))
	for _, k := range addressKeys {
		out[k] = r.connection[k]
	}
	switch {
	case anyOf(published, keys):
		for _, k := range keys {
			if v := published[k]; len(v) > 0 {
				out[k] = v
			}
		}
	case !moving(o, r):
		for _, k := range keys {
			if v := held[k]; len(v) > 0 && !slices.Contains(addressKeys, k) {
				out[k] = v
			}
		}
	}
	if !namespaced {
		for _, k := range connectionKeys {
			if _, ok := out[k]; !ok && len(held[k]) > 0 {
				out[k] = []byte{}
			}
		}
	}
	return out
}

// publishedKeys are the connection keys of a Memcached like m: its address, its authentication
// mode's credentials and, with TLS (which client certificates always have), TLS's.
func publishedKeys(m render.Memcached) []string {
	var shape render.Memcached
	if m.Auth != nil {
		shape.Auth = &render.Auth{Mode: m.Auth.Mode}
	}
	if m.TLS != nil || render.ClientCertificates(m) {
		shape.TLS = &render.TLS{CA: "-"}
	}
	return slices.Sorted(maps.Keys(render.ConnectionDetails(shape)))
}

// heldConnection is what the claim's connection details hold now: a legacy claim's, which
// Crossplane sends as the observed XR's, or a namespaced XR's composed connection Secret's.
func (o *observation) heldConnection(namespaced bool) map[string][]byte {
	if namespaced {
		return secretData(o.resources[KeyConnectionSecret].GetResource(), connectionKeys...)
	}
	return o.xrConnection
}

// moving reports whether a composed resource of the function's is observed that rendering r
// no longer desires: the Memcached is moving, from here or from another cluster, and what the
// claim holds is the old one's.
func moving(o *observation, r *rendered) bool {
	for k := range o.resources {
		if _, desired := r.objects[k]; !desired && (slices.Contains(ownKeys, k) || isInstanceKey(k)) {
			return true
		}
	}
	return false
}

// anyOf reports whether details has a non-empty value for one of keys.
func anyOf(details map[string][]byte, keys []string) bool {
	for _, k := range keys {
		if len(details[k]) > 0 {
			return true
		}
	}
	return false
}

// connectionSecret renders a namespaced XR's composed connection Secret for m with data, the
// connection details of a Memcached in another cluster, which differ by call and so are not
// part of the cached rendering.
func connectionSecret(m render.Memcached, data map[string][]byte) (*structpb.Struct, error) {
	s := render.ConnectionSecret(m)
	s.Data = data
	u, err := render.ToApply(s)
	if err != nil {
		return nil, err
	}
	st, err := structpb.NewStruct(u.Object)
	return st, errors.Wrapf(err, "cannot render Secret %q", s.GetName())
}
