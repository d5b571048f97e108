package cluster

import "time"

// Limits bound what one target cluster, whose server a tenant may run, can make the shared
// provider hold or wait for. A ClusterProviderConfig's target is the platform's: of these,
// only Objects applies to it. The provider's flags set them (docs/operations.md); each error
// a limit causes names its flag, so that the tenant who reached it and the platform team that
// set it both know which it was.
type Limits struct {
	// Objects bounds the objects of one resource in one target namespace: what one list
	// answers, and what the watches of that resource hold after it (--max-target-objects).
	Objects int
	// ConfigMemory bounds, in bytes, the memory the watches of one namespaced ProviderConfig's
	// target cluster may hold, estimated from what they read (--max-target-memory-mb); half of
	// it bounds each answer its client reads directly.
	ConfigMemory int64
	// TenantMemory bounds, in bytes, the same for all namespaced ProviderConfigs of one
	// namespace together (--max-tenant-memory-mb).
	TenantMemory int64
	// Namespaces bounds the target namespaces the namespaced ProviderConfigs of one
	// namespace watch at once, together (--max-target-namespaces). A ClusterProviderConfig's
	// placement bounds its own.
	Namespaces int
	// Reconciles bounds the reconciles that use the namespaced ProviderConfigs of one
	// namespace at once (--max-target-reconciles).
	Reconciles int
	// WakeRate bounds how many Instances per second, on average, the watches of the
	// namespaced ProviderConfigs of one namespace wake; wakes beyond it wait, merged
	// (--target-wake-rate).
	WakeRate float64
	// Idle is how long a connection no Instance uses is kept before it is closed
	// (--target-idle).
	Idle time.Duration
}

// DefaultLimits are the provider's flags' defaults.
func DefaultLimits() Limits {
	return Limits{
		Objects:      2048,
		ConfigMemory: 16 << 20,
		TenantMemory: 32 << 20,
		Namespaces:   8,
		Reconciles:   2,
		WakeRate:     2,
		Idle:         10 * time.Minute,
	}
}
