// Package resolve turns what a user wrote (a claim's spec, or an Instance's forProvider) and
// what the platform team configured (the function's Input) into a render.Memcached, or into a
// list of field errors that name the field, the value and the limit. It is the only place
// where defaults and policy live (the XRD schema carries no default the Input could set), so
// the function and the provider accept and reject exactly the same specs.
package resolve

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	cachev1alpha1 "github.com/example/function-memcached/apis/cache/v1alpha1"
	"github.com/example/function-memcached/input/v1beta1"
)

// Built-in defaults, used where neither a claim nor the Input says otherwise.
const (
	// DefaultImage is a pinned memcached release on Alpine: small, and never "latest", so
	// that a node pulling the image months later gets what was tested.
	DefaultImage = "memcached:1.6.39-alpine"
	// DefaultExporterImage is the pinned Prometheus memcached exporter.
	DefaultExporterImage = "prom/memcached-exporter:v0.15.4"
	// DefaultSize is one replica: the smallest Memcached, for a claim that names no size.
	DefaultSize = 1
	// DefaultMemoryLimitMB is memcached's own default cache size. A policy whose maximum is
	// smaller lowers it to that maximum, unless the Input sets defaults.memoryLimitMB.
	DefaultMemoryLimitMB = 64
	// DefaultMaxSize is three replicas unless the platform allows more.
	DefaultMaxSize = 3
	// DefaultMaxMemoryLimitMB caps a cache at 1 GiB unless the platform allows more.
	DefaultMaxMemoryLimitMB = 1024
	// MinMemoryLimitMB is the smallest cache memcached runs usefully with.
	MinMemoryLimitMB = 16
	// DefaultMaxConnections and DefaultThreads are memcached's own defaults.
	DefaultMaxConnections = 1024
	DefaultThreads        = 4
	// MaxConnections and MaxThreads bound what a claim may ask for.
	MaxConnections = 65536
	MaxThreads     = 64
	// DefaultCPURequest is a modest guaranteed share; memcached is rarely CPU-bound.
	DefaultCPURequest = "100m"
	// DefaultAuth is off: turning authentication on for running caches locks out every
	// client without credentials, so it must be the platform team's explicit choice.
	DefaultAuth = false
	// DefaultNetworkPolicy is on: no pod outside a claim's namespace reaches its Memcached
	// unless the claim says so.
	DefaultNetworkPolicy = true
	// MaxItemSizeMB bounds spec.maxItemSizeMB; memcached also refuses more than half of the
	// cache.
	MaxItemSizeMB = 128
	// DefaultMaxExternalStorageMB caps each replica's external storage at 1 GiB of disk unless
	// the platform allows more (or, with 0, none).
	DefaultMaxExternalStorageMB = 1024
	// MinExternalStorageMB is the smallest volume for external storage: its extstore file (at
	// most 90% of it, in whole pages, render.ExtstoreFileMB) is then 7 pages of 64 MB. Fewer
	// pages leave extstore nothing to work with: it keeps a page open to write for each kind
	// of item and compacts and drops pages once a quarter of them are not free.
	MinExternalStorageMB = 512
)

// Settings are the Input with every default applied and checked.
type Settings struct {
	Image             string
	ExporterImage     string
	MemoryLimitMB     int64
	MaxSize           int64
	MaxMemoryLimitMB  int64
	AllowedRegistries []string
	// ProviderConfigRef places claims that name none in another cluster; nil keeps them here.
	ProviderConfigRef *cachev1alpha1.ProviderConfigReference
	// AllowedProviderConfigs, when not empty, are the only ProviderConfigs a Memcached may
	// be placed with, each with its kind filled in.
	AllowedProviderConfigs []cachev1alpha1.ProviderConfigReference
	// PodDiagnostics lets the function ask for a Memcached's pods to explain why replicas
	// are not available.
	PodDiagnostics bool

	// Auth is spec.auth.enabled for claims that do not set it; RequireAuth refuses false.
	Auth, RequireAuth bool
	// AuthMode is spec.auth.mode for claims that do not set it.
	AuthMode string
	// AllowedAuthModes, when not empty, are the only modes claims may choose.
	AllowedAuthModes []string
	// AuthProxyImage is the auth proxy sidecar's image; empty when the platform named none.
	AuthProxyImage string
	// NetworkPolicy is spec.networkPolicy.enabled for claims that do not set it;
	// RequireNetworkPolicy refuses false.
	NetworkPolicy, RequireNetworkPolicy bool
	// AllowedNamespaceLabels are the namespace label keys a claim's allowedNamespaces may
	// select on; empty allows none.
	AllowedNamespaceLabels []string
	// MonitoringNamespace may reach the metrics port; empty means no other namespace.
	MonitoringNamespace string
	// ServiceMonitor composes a ServiceMonitor for claims with metrics on.
	ServiceMonitor bool
	// PrometheusRule composes a PrometheusRule with the alerts for claims with metrics on.
	PrometheusRule bool
	// AllowedPriorityClasses, when set, are the only PriorityClasses claims may name.
	AllowedPriorityClasses []string
	// MaxExternalStorageMB bounds spec.externalStorage.sizeMB; 0 refuses external storage.
	MaxExternalStorageMB int64
	// AllowedStorageClasses are the only StorageClasses spec.externalStorage.storageClassName
	// may name; empty allows none (an emptyDir only).
	AllowedStorageClasses []string
	// AllowedTolerationKeys and AllowedNodeSelectorKeys, when not nil, are the only taint
	// and node label keys claims may name; nil allows any but the node-role.kubernetes.io/
	// ones (and never a toleration without a key).
	AllowedTolerationKeys, AllowedNodeSelectorKeys []string
}

// NewSettings applies defaults to the Input (nil means no Input) and checks it. An error
// here is the platform team's mistake, not the claim owner's: the function reports it as
// Fatal, and the message names the Input field and, when a default breaks the Input's own
// policy, the policy field too.
func NewSettings(in *v1beta1.Input) (Settings, error) {
	if in == nil {
		in = &v1beta1.Input{}
	}
	s := Settings{
		Image:             DefaultImage,
		ExporterImage:     DefaultExporterImage,
		MaxSize:           int64(ptr.Deref(in.Policy.MaxSize, DefaultMaxSize)),
		MaxMemoryLimitMB:  int64(ptr.Deref(in.Policy.MaxMemoryLimitMB, DefaultMaxMemoryLimitMB)),
		AllowedRegistries: in.Policy.AllowedRegistries,
		PodDiagnostics:    ptr.Deref(in.Diagnostics.Pods, true),

		RequireAuth:            in.Policy.RequireAuth,
		AuthMode:               cmp.Or(in.Defaults.Auth.Mode, cachev1alpha1.AuthModePassword),
		AllowedAuthModes:       in.Policy.AllowedAuthModes,
		AuthProxyImage:         in.Defaults.AuthProxyImage,
		RequireNetworkPolicy:   in.Policy.RequireNetworkPolicy,
		AllowedNamespaceLabels: in.Policy.NetworkPolicy.AllowedNamespaceLabels,
		MonitoringNamespace:    in.Metrics.MonitoringNamespace,
		ServiceMonitor:         in.Metrics.ServiceMonitor,
		PrometheusRule:         in.Metrics.PrometheusRule,
		AllowedPriorityClasses: in.Policy.AllowedPriorityClasses,
		MaxExternalStorageMB:   int64(ptr.Deref(in.Policy.MaxExternalStorageMB, DefaultMaxExternalStorageMB)),
		AllowedStorageClasses:  in.Policy.AllowedStorageClasses,

		AllowedTolerationKeys:   in.Policy.Scheduling.AllowedTolerationKeys,
		AllowedNodeSelectorKeys: in.Policy.Scheduling.AllowedNodeSelectorKeys,
	}
	// Built-in defaults yield to a policy that requires more; a default the platform team
	// wrote does not, and is checked against its policy below.
	s.Auth = ptr.Deref(in.Defaults.Auth.Enabled, DefaultAuth || s.RequireAuth)
	s.NetworkPolicy = ptr.Deref(in.Defaults.NetworkPolicy.Enabled, DefaultNetworkPolicy || s.RequireNetworkPolicy)
	if s.AllowedNamespaceLabels == nil {
		s.AllowedNamespaceLabels = []string{corev1.LabelMetadataName}
	}
	// The built-in cache size yields to a smaller policy maximum; a default the platform team
	// wrote does not, and is checked against it below.
	s.MemoryLimitMB = int64(ptr.Deref(in.Defaults.MemoryLimitMB, int32(min(DefaultMemoryLimitMB, max(s.MaxMemoryLimitMB, MinMemoryLimitMB)))))
	if in.Defaults.Image != "" {
		s.Image = in.Defaults.Image
	}
	if in.Defaults.ExporterImage != "" {
		s.ExporterImage = in.Defaults.ExporterImage
	}
	if r := in.Defaults.ProviderConfigRef; r != nil {
		s.ProviderConfigRef = withDefaultKind(*r)
	}

	var errs field.ErrorList
	if s.MaxSize < 1 {
		errs = append(errs, field.Invalid(field.NewPath("policy", "maxSize"), s.MaxSize, "must be at least 1"))
	}
	if s.MaxMemoryLimitMB < MinMemoryLimitMB {
		errs = append(errs, field.Invalid(field.NewPath("policy", "maxMemoryLimitMB"), s.MaxMemoryLimitMB, fmt.Sprintf("must be at least %d", MinMemoryLimitMB)))
	} else if s.MemoryLimitMB < MinMemoryLimitMB || s.MemoryLimitMB > s.MaxMemoryLimitMB {
		errs = append(errs, field.Invalid(field.NewPath("defaults", "memoryLimitMB"), s.MemoryLimitMB, "must be "+s.Rule("memoryLimitMB")))
	}
	if n := s.MaxExternalStorageMB; n != 0 && n < MinExternalStorageMB {
		errs = append(errs, field.Invalid(field.NewPath("policy", "maxExternalStorageMB"), n,
			fmt.Sprintf("must be 0 (no external storage) or at least %d, the smallest volume external storage takes", MinExternalStorageMB)))
	}
	for i, sc := range s.AllowedStorageClasses {
		if msgs := validation.IsDNS1123Subdomain(sc); len(msgs) > 0 {
			errs = append(errs, field.Invalid(field.NewPath("policy", "allowedStorageClasses").Index(i), sc,
				"must be a StorageClass name: "+strings.Join(msgs, "; ")))
		}
	}
	for i, r := range s.AllowedRegistries {
		if _, err := name.NewRegistry(r, name.StrictValidation); err != nil || r == "" {
			errs = append(errs, field.Invalid(field.NewPath("policy", "allowedRegistries").Index(i), r, "must be a registry host, like docker.io or registry.example.com:5000"))
		}
	}
	for i, r := range in.Policy.AllowedProviderConfigs {
		ref := withDefaultKind(r)
		errs = append(errs, checkRef(field.NewPath("policy", "allowedProviderConfigs").Index(i), ref)...)
		s.AllowedProviderConfigs = append(s.AllowedProviderConfigs, *ref)
	}
	if r := s.ProviderConfigRef; r != nil {
		p := field.NewPath("defaults", "providerConfigRef")
		if rerrs := checkRef(p, r); len(rerrs) > 0 {
			errs = append(errs, rerrs...)
		} else {
			errs = append(errs, s.ProviderConfigAllowed(p, *r)...)
		}
	}
	errs = append(errs, s.checkImage(field.NewPath("defaults", "image"), s.Image)...)
	errs = append(errs, s.checkImage(field.NewPath("defaults", "exporterImage"), s.ExporterImage)...)
	if s.AuthProxyImage != "" {
		errs = append(errs, s.checkImage(field.NewPath("defaults", "authProxyImage"), s.AuthProxyImage)...)
	}
	errs = append(errs, s.checkSecurity()...)
	if len(errs) > 0 {
		return Settings{}, errors.Wrap(errs.ToAggregate(), "invalid function Input")
	}
	return s, nil
}

// authModeAllowed reports whether the platform's policy lets a claim choose mode.
func (s Settings) authModeAllowed(mode string) bool {
	return len(s.AllowedAuthModes) == 0 || slices.Contains(s.AllowedAuthModes, mode)
}

// checkSecurity reports Input fields of authentication, network policy, metrics and
// scheduling that no claim could satisfy or that are not valid Kubernetes names.
func (s Settings) checkSecurity() field.ErrorList {
	var errs field.ErrorList
	if s.RequireAuth && !s.Auth {
		errs = append(errs, field.Invalid(field.NewPath("defaults", "auth", "enabled"), false, "must be true (policy.requireAuth)"))
	}
	for i, mode := range s.AllowedAuthModes {
		if !slices.Contains(cachev1alpha1.AuthModes, mode) {
			errs = append(errs, field.NotSupported(field.NewPath("policy", "allowedAuthModes").Index(i), mode, cachev1alpha1.AuthModes))
		}
	}
	switch p := field.NewPath("defaults", "auth", "mode"); {
	case !slices.Contains(cachev1alpha1.AuthModes, s.AuthMode):
		errs = append(errs, field.NotSupported(p, s.AuthMode, cachev1alpha1.AuthModes))
	case !s.authModeAllowed(s.AuthMode):
		errs = append(errs, field.Invalid(p, s.AuthMode, "must be one of "+strings.Join(s.AllowedAuthModes, ", ")+" (policy.allowedAuthModes)"))
	}
	if s.RequireNetworkPolicy && !s.NetworkPolicy {
		errs = append(errs, field.Invalid(field.NewPath("defaults", "networkPolicy", "enabled"), false, "must be true (policy.requireNetworkPolicy)"))
	}
	// The alerts select their series by the labels the ServiceMonitor's scrape gives them;
	// under another scrape they would match nothing and stay silent.
	if s.PrometheusRule && !s.ServiceMonitor {
		errs = append(errs, field.Invalid(field.NewPath("metrics", "prometheusRule"), true, "needs metrics.serviceMonitor: the alerts read the series its scrape labels"))
	}
	for i, k := range s.AllowedNamespaceLabels {
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			errs = append(errs, field.Invalid(field.NewPath("policy", "networkPolicy", "allowedNamespaceLabels").Index(i), k,
				"must be a label key: "+strings.Join(msgs, "; ")))
		}
	}
	if ns := s.MonitoringNamespace; ns != "" {
		if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
			errs = append(errs, field.Invalid(field.NewPath("metrics", "monitoringNamespace"), ns, "must be a namespace name: "+strings.Join(msgs, "; ")))
		}
	}
	for i, pc := range s.AllowedPriorityClasses {
		if msgs := validation.IsDNS1123Subdomain(pc); len(msgs) > 0 {
			errs = append(errs, field.Invalid(field.NewPath("policy", "allowedPriorityClasses").Index(i), pc,
				"must be a PriorityClass name: "+strings.Join(msgs, "; ")))
		}
	}
	for _, l := range []struct {
		name string
		keys []string
	}{{"allowedTolerationKeys", s.AllowedTolerationKeys}, {"allowedNodeSelectorKeys", s.AllowedNodeSelectorKeys}} {
		for i, k := range l.keys {
			if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
				errs = append(errs, field.Invalid(field.NewPath("policy", "scheduling", l.name).Index(i), k,
					"must be a label key: "+strings.Join(msgs, "; ")))
			}
		}
	}
	return errs
}

// checkImage reports an image that is not a valid reference or whose registry the policy
// does not allow.
func (s Settings) checkImage(p *field.Path, image string) field.ErrorList {
	ref, err := name.ParseReference(image)
	if err != nil {
		return field.ErrorList{field.Invalid(p, image, "must be a valid image reference, like memcached:1.6.39-alpine")}
	}
	if len(s.AllowedRegistries) == 0 {
		return nil
	}
	reg := normalizeRegistry(ref.Context().RegistryStr())
	for _, r := range s.AllowedRegistries {
		if normalizeRegistry(r) == reg {
			return nil
		}
	}
	return field.ErrorList{field.Invalid(p, image, "registry "+reg+" is not allowed; policy.allowedRegistries allows "+strings.Join(s.AllowedRegistries, ", "))}
}

// normalizeRegistry maps Docker Hub's aliases to one name, so that a policy naming
// docker.io allows "memcached:1.6" (whose registry go-containerregistry calls
// index.docker.io).
func normalizeRegistry(r string) string {
	if r == name.DefaultRegistry || r == "docker.io" || r == "registry-1.docker.io" {
		return "docker.io"
	}
	return r
}
