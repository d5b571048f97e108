package fn

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
