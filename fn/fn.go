// Package fn is the Memcached composition function: it reads the observed XR and the
// function's Input, renders the Deployment, Service, PodDisruptionBudget, NetworkPolicy, and,
// as the spec and Input ask, the auth Secret, ServiceMonitor and (for namespaced XRs)
// connection Secret, marks each ready from its observed state, and reports the Available
// condition, status and connection details back to the XR and its claim. It keeps generated
// credentials stable and reads a spec's TLS Secret through Crossplane (security.go).
//
// Everything it decides is delegated: resolve checks the spec against policy, render builds
// the objects, readiness judges observed state. This package moves data between the
// RunFunctionRequest and those pure functions and applies Crossplane's rules for results.
// It runs on every reconcile of every claim, so it reads observed state straight from the
// request's protobuf Structs (observed.go) and renders each distinct Memcached once
// (desired.go); Wire sends those renderings pre-encoded (wire.go).
package fn

import (
	"context"
	"slices"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/response"

	cachev1alpha1 "github.com/example/function-memcached/apis/cache/v1alpha1"
	memcachedv1alpha1 "github.com/example/function-memcached/apis/memcached/v1alpha1"
	"github.com/example/function-memcached/internal/readiness"
	"github.com/example/function-memcached/internal/remote"
	"github.com/example/function-memcached/internal/render"
	"github.com/example/function-memcached/internal/resolve"
)

// Names of the composed resources this function owns in the desired state. Resources under
// other names, desired by earlier pipeline steps, pass through untouched.
const (
	KeyDeployment       = "memcached-deployment"
	KeyService          = "memcached-service"
	KeyPDB              = "memcached-pdb"
	KeyConnectionSecret = "memcached-connection-secret"
	// KeyInstance is the Instance of the Memcached provider composed instead of the
	// Deployment, Service and PodDisruptionBudget when the Memcached runs in another cluster.
	KeyInstance = "memcached-instance"
	// KeyAuthSecret is the Secret holding the credentials, with auth on.
	KeyAuthSecret = "memcached-auth-secret"
	// KeyNetworkPolicy is the NetworkPolicy admitting clients.
	KeyNetworkPolicy = "memcached-networkpolicy"
	// KeyServiceMonitor is the Prometheus Operator's ServiceMonitor, when the Input asks.
	KeyServiceMonitor = "memcached-servicemonitor"
)

// ownKeys are the composed resources the function may desire, in a fixed order.
var ownKeys = []string{KeyDeployment, KeyService, KeyPDB, KeyConnectionSecret, KeyInstance,
	KeyAuthSecret, KeyNetworkPolicy, KeyServiceMonitor}

// ResponseTTL and ChangingTTL are how long Crossplane may rely on a response. With realtime
// compositions (the default in Crossplane v2) an XR is reconciled again when it or anything
// the function composes or requires changes, and otherwise after the shortest TTL of its
// pipeline: Crossplane does not poll. Everything this function reads is watched and the
// function is deterministic, so the TTL is the safety net for a watch event that never
// arrives — and one does not: Crossplane's per-XR circuit breaker (100 events, then one a
// second) drops the watch events of a busy XR, and a resize of real pods (3 → 5 → 2, each
// pod's readiness a new event) trips it within seconds (the node lane's TestNodeResize).
// Once the pods settle nothing changes, no further event comes, and the claim keeps its last
// status until the TTL. So a Memcached that is changing or unavailable is looked at again
// after ChangingTTL, which bounds that lag; an available one after ResponseTTL, one idle call
// per XR a minute. Without realtime compositions Crossplane ignores the TTL and polls.
const (
	ResponseTTL = time.Minute
	ChangingTTL = 15 * time.Second
)

// ConditionAvailable is the function's own condition on the XR and claim: whether the
// Memcached serves, and why not. Crossplane owns Ready and Synced itself.
const ConditionAvailable = "Available"

// Labels Crossplane puts on a claim's XR, from which the function learns where the claim
// lives.
const (
	LabelClaimName      = "crossplane.io/claim-name"
	LabelClaimNamespace = "crossplane.io/claim-namespace"
)

// Function runs Memcached composition requests.
type Function struct {
	fnv1.UnimplementedFunctionRunnerServiceServer

	log         logging.Logger
	inputs      settingsCache
	renders     renderCache
	credentials *credentialStore
}

// New returns a Function that logs to log. Per-call logs are at debug level only, so a busy
// control plane does not log a line per reconcile.
func New(log logging.Logger) *Function {
	return &Function{
		log:         log,
		inputs:      settingsCache{m: map[string]settingsEntry{}},
		renders:     renderCache{m: map[renderKey]*rendered{}, wire: &preEncoded{m: map[*structpb.Struct][]byte{}}},
		credentials: newCredentialStore(),
	}
}

// RunFunction composes a Memcached. It never returns a gRPC error: bad input is reported in
// the response, as a Fatal result for the platform team's Input and as a Warning plus the
// Available condition for the claim owner's spec.
func (f *Function) RunFunction(_ context.Context, req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
	rsp := response.To(req, ResponseTTL)

	settings, err := f.inputs.settings(req)
	if err != nil {
		response.Fatal(rsp, err)
		return rsp, nil
	}
	xr := req.GetObserved().GetComposite().GetResource()
	observed := req.GetObserved().GetResources()

	var od *appsv1.Deployment
	if o, ok := observed[KeyDeployment]; ok {
		if od, err = readDeployment(o.GetResource()); err != nil {
			// Fatal: Crossplane then applies nothing, so the running Deployment stays as is.
			response.Fatal(rsp, err)
			return rsp, nil
		}
	}
	instances, err := observedInstances(observed)
	if err != nil {
		response.Fatal(rsp, err)
		return rsp, nil
	}
	oi := anyInstance(instances)

	t, errs := target(str(xr, "metadata", "name"), str(xr, "metadata", "namespace"),
		str(xr, "metadata", "labels", LabelClaimName), str(xr, "metadata", "labels", LabelClaimNamespace))
	m := render.Memcached{Name: t.name, Namespace: t.namespace}
	var placement *cachev1alpha1.ProviderConfigReference
	var spec *cachev1alpha1.XMemcachedSpec
	if len(errs) == 0 {
		var resolved render.Memcached
		if resolved, placement, spec, errs = resolveSpec(xr, t, settings); len(errs) == 0 {
			m = resolved
		}
	}

	if rsp.Desired == nil {
		rsp.Desired = &fnv1.State{}
	}
	if rsp.Desired.Resources == nil {
		rsp.Desired.Resources = map[string]*fnv1.Resource{}
	}
	desired := rsp.Desired.Resources
	prevReason, prevMessage := condition(xr, ConditionAvailable)

	// TLS needs the Secret the spec names, which Crossplane fetches for the next call when
	// this one asks for it. Until then nothing is decided: this call's response is not the
	// one Crossplane applies, and holding what runs keeps it harmless all the same.
	if name := tlsSecretName(spec); name != "" && placement == nil {
		secret, fetched := requireTLSSecret(rsp, req, name, t.namespace)
		if !fetched {
			if _, holding := hold(desired, observed, od, instances, nil); !holding {
				composite(rsp).Ready = fnv1.Ready_READY_FALSE
			}
			return rsp, nil
		}
		served, terrs := resolve.TLSSecret(tlsPath, name, m.Namespace, secret)
		if errs = append(errs, terrs...); len(errs) == 0 {
			m.TLS = served
		}
	}
	if len(errs) == 0 && m.Auth != nil {
		a, err := f.credentials.get(credentialKey(xr, t), m.Auth.Rotation, observed[KeyAuthSecret].GetResource())
		if err != nil {
			response.Fatal(rsp, err)
			return rsp, nil
		}
		a.Rotation = m.Auth.Rotation
		m.Auth = &a
	}

	var cond readiness.Condition
	var r *rendered
	if len(errs) > 0 {
		var holding bool
		cond, holding = hold(desired, observed, od, instances, errs)
		// Nothing rendered, yet the endpoint and the pods' selector are known when the
		// target is, and the credentials of what runs stay in the connection details.
		r = &rendered{endpoint: render.Endpoint(m), connection: render.ConnectionDetails(m), selector: selector(m)}
		if o := observed[KeyAuthSecret].GetResource(); o != nil {
			if a, ok := resolve.Credentials(secretData(o, render.ConnectionUsername, render.ConnectionPassword)); ok {
				r.connection[render.ConnectionUsername] = []byte(a.Username)
				r.connection[render.ConnectionPassword] = []byte(a.Password)
			}
		}
		if !holding {
			// Nothing of this Memcached runs, and Crossplane would count zero unready
			// composed resources as a ready XR.
			composite(rsp).Ready = fnv1.Ready_READY_FALSE
		}
	} else {
		var ik, iname string
		if placement != nil {
			ik, iname, oi = instanceFor(instances, placement, m.Name)
		}
		if r, err = f.renders.get(m, t.namespaced, placement, ik, iname); err != nil {
			response.Fatal(rsp, err)
			return rsp, nil
		}
		cond = compose(desired, observed, r, od, oi, placement, prevReason)
		if settings.PodDiagnostics && placement == nil && !cond.Available && readiness.Applied(od, r.want) {
			// Everything is applied and still not every replica serves: the pods say why.
			cond.Message = explain(rsp, req, m, cond.Message)
		}
	}

	// Where the Memcached runs: where it is placed, or, with an invalid spec that changes
	// nothing, where it already ran.
	elsewhere := placement != nil
	if len(errs) > 0 {
		elsewhere = oi != nil
	}
	replicas, available := observedReplicas(elsewhere, od, oi)
	reportStatus(rsp, replicas, available, r, t)
	reportCondition(rsp, cond, prevReason, prevMessage)
	if !cond.Available && cond.Reason != readiness.ReasonInvalidSpec {
		rsp.Meta.Ttl = durationpb.New(ChangingTTL)
	}
	f.log.Debug("Composed Memcached", "tag", req.GetMeta().GetTag(), "name", m.Name, "namespace", m.Namespace,
		"size", m.Size, "reason", cond.Reason)
	return rsp, nil
}

// hold desires every observed composed resource of the function's exactly as it runs, and
// nothing new, because the spec is invalid: one bad field must not change or drop anything
// that runs. It returns the InvalidSpec verdict naming every bad field, and whether it holds
// anything at all.
func hold(desired map[string]*fnv1.Resource, observed map[string]*fnv1.Resource, od *appsv1.Deployment, instances map[string]*memcachedv1alpha1.Instance, errs field.ErrorList) (readiness.Condition, bool) {
	holding := false
	for k, o := range observed {
		if slices.Contains(ownKeys, k) || isInstanceKey(k) {
			desired[k] = &fnv1.Resource{Resource: held(o.GetResource()), Ready: fnv1.Ready_READY_TRUE}
			holding = true
		}
	}
	if od != nil {
		desired[KeyDeployment].Ready = ready(readiness.Deployment(od, readiness.Wanted(od)))
	}
	for k, i := range instances {
		desired[k].Ready = ready(remote.Ready(i))
	}
	return readiness.Condition{Reason: readiness.ReasonInvalidSpec, Message: resolve.Message(errs)}, holding
}

// compose desires the rendered objects, each marked ready from its observed state, and
// returns the Available verdict: from the Deployment here, or from the provider's Instance
// when the Memcached runs in another cluster.
func compose(desired, observed map[string]*fnv1.Resource, r *rendered, od *appsv1.Deployment,
	oi *memcachedv1alpha1.Instance, placement *cachev1alpha1.ProviderConfigReference, prevReason string) readiness.Condition {
	for k, o := range r.objects {
		_, seen := observed[k]
		rd := ready(seen)
		switch {
		case k == KeyDeployment:
			rd = ready(readiness.Deployment(od, r.want))
		case isInstanceKey(k):
			rd = ready(oi != nil && remote.Ready(oi))
		}
		desired[k] = &fnv1.Resource{Resource: o, Ready: rd}
	}
	if placement == nil {
		return readiness.Available(od, r.want, prevReason)
	}
	if oi == nil {
		oi = &memcachedv1alpha1.Instance{}
	}
	return remote.Available(oi)
}

// observedReplicas are the replica counts the XR reports where the Memcached is placed: the
// provider's, for a Memcached in another cluster, or the local Deployment's.
func observedReplicas(elsewhere bool, od *appsv1.Deployment, oi *memcachedv1alpha1.Instance) (replicas, available int32) {
	switch {
	case elsewhere && oi != nil:
		return oi.Status.AtProvider.Replicas, oi.Status.AtProvider.AvailableReplicas
	case elsewhere:
		// Not observed there yet; a local Deployment being replaced does not count.
		return 0, 0
	case od != nil:
		return od.Status.Replicas, od.Status.AvailableReplicas
	}
	return 0, 0
}

// Where a claim's fields live, for field errors: built once, since a field.Path is immutable.
var (
	specPath      = field.NewPath("spec")
	placementPath = specPath.Child("providerConfigRef")
	tlsPath       = specPath.Child("tls", "secretName")
)

// resolveSpec resolves the XR's spec: the Memcached, where it runs (nil for this cluster),
// and the spec as decoded (nil when it is not an object).
func resolveSpec(xr *structpb.Struct, t targetInfo, s resolve.Settings) (render.Memcached, *cachev1alpha1.ProviderConfigReference, *cachev1alpha1.XMemcachedSpec, field.ErrorList) {
	spec, errs := decodeSpec(xr, s)
	if spec == nil {
		return render.Memcached{}, nil, nil, errs
	}
	m, merrs := resolve.Memcached(specPath, spec.MemcachedSpec, t.name, t.namespace, s)
	p, perrs := resolve.Placement(placementPath, spec.ProviderConfigRef, s)
	errs = append(append(errs, merrs...), perrs...)
	if p != nil && len(merrs) == 0 {
		var rerrs field.ErrorList
		m, rerrs = resolve.Remote(specPath, spec.MemcachedSpec, m, s)
		errs = append(errs, rerrs...)
	}
	return m, p, spec, errs
}

// credentialKey identifies a Memcached's credentials until its auth Secret is observed: its
// XR's UID, or, for an XR without one (a fixture, `crossplane render`), where it runs.
func credentialKey(xr *structpb.Struct, t targetInfo) string {
	if uid := str(xr, "metadata", "uid"); uid != "" {
		return uid
	}
	return t.namespace + "/" + t.name
}

// targetInfo says where a Memcached's objects live and what they are called.
type targetInfo struct {
	name, namespace string
	// namespaced is true for a Crossplane v2 namespaced XR, which gets a composed
	// connection Secret instead of connection details.
	namespaced bool
}

// target derives the objects' namespace and base name: a namespaced XR's own, or, for a
// claim's LegacyCluster XR, the claim's. A cluster XR without a claim has no namespace to
// put a Deployment in, which is reported like any other invalid spec.
func target(name, namespace, claimName, claimNamespace string) (targetInfo, field.ErrorList) {
	if namespace != "" {
		return targetInfo{name: render.Name(name), namespace: namespace, namespaced: true}, nil
	}
	if ns := claimNamespace; ns != "" {
		claim := claimName
		if claim == "" {
			claim = name
		}
		return targetInfo{name: render.Name(claim), namespace: ns}, nil
	}
	return targetInfo{}, field.ErrorList{field.Required(field.NewPath("metadata", "labels").Key(LabelClaimNamespace),
		"a cluster-scoped XMemcached has no namespace for its Deployment: create it through a Memcached claim, or use the namespaced API")}
}

// reportStatus writes status.replicas, status.availableReplicas, status.endpoint and
// status.selector (the pods' label selector, which the scale subresource serves to autoscalers)
// into the desired XR, keeping whatever earlier steps put there, and connection details for
// claims.
func reportStatus(rsp *fnv1.RunFunctionResponse, replicas, available int32, r *rendered, t targetInfo) {
	dxr := composite(rsp)
	if dxr.Resource == nil {
		dxr.Resource = &structpb.Struct{}
	}
	if dxr.Resource.Fields == nil {
		dxr.Resource.Fields = map[string]*structpb.Value{}
	}
	status := dxr.Resource.Fields["status"].GetStructValue()
	if status == nil {
		status = &structpb.Struct{}
		dxr.Resource.Fields["status"] = structpb.NewStructValue(status)
	}
	if status.Fields == nil {
		status.Fields = map[string]*structpb.Value{}
	}
	status.Fields["replicas"] = structpb.NewNumberValue(float64(replicas))
	status.Fields["availableReplicas"] = structpb.NewNumberValue(float64(available))
	if t.namespace == "" {
		return
	}
	status.Fields["endpoint"] = structpb.NewStringValue(r.endpoint)
	status.Fields["selector"] = structpb.NewStringValue(r.selector)
	if !t.namespaced {
		if dxr.ConnectionDetails == nil {
			dxr.ConnectionDetails = map[string][]byte{}
		}
		for k, v := range r.connection {
			dxr.ConnectionDetails[k] = v
		}
	}
}

// reportCondition sets the Available condition and, on a transition worth a person's
// attention (the readiness package's table of reasons says which and how), one event: never
// one per call, which Crossplane's function spec forbids.
func reportCondition(rsp *fnv1.RunFunctionResponse, c readiness.Condition, prevReason, prevMessage string) {
	if c.Available {
		response.ConditionTrue(rsp, ConditionAvailable, c.Reason).WithMessage(c.Message).TargetCompositeAndClaim()
	} else {
		response.ConditionFalse(rsp, ConditionAvailable, c.Reason).WithMessage(c.Message).TargetCompositeAndClaim()
	}
	if readiness.StateOf(prevReason, prevMessage) == readiness.StateOf(c.Reason, c.Message) {
		return
	}
	switch severity, msg := readiness.Announcement(c); severity {
	case readiness.Normal:
		response.Normal(rsp, msg).WithReason(c.Reason).TargetCompositeAndClaim()
	case readiness.Warning:
		response.Warning(rsp, errors.New(msg)).WithReason(c.Reason).TargetCompositeAndClaim()
	}
}

// composite is the desired XR of rsp, created when no earlier step desired one.
func composite(rsp *fnv1.RunFunctionResponse) *fnv1.Resource {
	if rsp.Desired.Composite == nil {
		rsp.Desired.Composite = &fnv1.Resource{}
	}
	return rsp.Desired.Composite
}

func ready(b bool) fnv1.Ready {
	if b {
		return fnv1.Ready_READY_TRUE
	}
	return fnv1.Ready_READY_FALSE
}
