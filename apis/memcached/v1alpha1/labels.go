package v1alpha1

// Labels and annotations of the provider's API. They are part of the API: platform teams
// select on them, and the provider finds what it owns by them.
const (
	// LabelInstanceUID marks every object the provider creates in a target cluster with the
	// UID of the Instance it belongs to. An object under an Instance's names without it, or
	// with another UID, is not the Instance's: the provider neither applies over it nor
	// deletes it unless the Instance's adoptionPolicy is Adopt.
	LabelInstanceUID = Group + "/instance-uid"

	// AnnotationInstance names the Instance ("<namespace>/<name>") an object in a target
	// cluster belongs to, so that a change to the object wakes that Instance, and so that a
	// person reading the object knows where it comes from.
	AnnotationInstance = Group + "/instance"

	// LabelInstancePolicy marks the Composition whose function-memcached Input is the
	// policy (defaults and limits) of Instances created directly, so that they obey what
	// claims obey. Set it to "true" on exactly one Composition: without one Instances are
	// refused (unless the provider runs with --allow-builtin-policy, which gives them the
	// built-in policy, as claims get under a Composition without an Input), and with two
	// or more they are refused naming them.
	LabelInstancePolicy = Group + "/instance-policy"
)
