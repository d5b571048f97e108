// Package fn is the Memcached composition function: it reads the observed XR and the
// function's Input, renders the Deployment, Service, PodDisruptionBudget, NetworkPolicy, and,
// as the spec and Input ask, the auth Secret, ServiceMonitor and (for namespaced XRs)
// connection Secret, marks each ready from its observed state, and reports the Available
// condition, status and connection details back to the XR and its claim. It keeps generated
// credentials stable and reads a spec's TLS Secret through Crossplane (security.go). It
// composes no kind the API server does not serve, by Crossplane's answer to its request for
// the kind's schema (schemas.go).
//
// Everything it decides is delegated: resolve checks the spec against policy, render builds
// the objects, readiness judges observed state. This package moves data between the
// RunFunctionRequest and those pure functions and applies Crossplane's rules for results.
// It runs on every reconcile of every claim, so it reads observed state straight from the
// request's protobuf Structs (observed.go) and renders each distinct Memcached once
// (desired.go).
package fn

import (
	"context"
	"maps"
	"slices"
	"strings"
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
	"github.com/example/function-memcached/internal/credentials"
	"github.com/example/function-memcached/internal/lru"
	"github.com/example/function-memcached/internal/pki"
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
	// KeyPrometheusRule is the Prometheus Operator's PrometheusRule with the alerts, when the
	// Input asks.
	KeyPrometheusRule = "memcached-prometheusrule"
)

// ownKeys are the composed resources the function may desire, in a fixed order.
var ownKeys = []string{KeyDeployment, KeyService, KeyPDB, KeyConnectionSecret, KeyInstance,
	KeyAuthSecret, KeyNetworkPolicy, KeyServiceMonitor, KeyPrometheusRule, KeyTLSSecret}

// SettledTTL, ResponseTTL and ChangingTTL are how long Crossplane may rely on a response.
// With realtime compositions (Crossplane v2's default) an XR is reconciled again when it or
// anything the function composes or requires changes, and otherwise after the shortest TTL of
// its pipeline; without them Crossplane ignores the TTL and polls. The TTL is the safety net
// for a watch event that never arrives: Crossplane's per-XR circuit breaker drops the events
// of a busy XR (its Responsive condition is then False) for minutes.
//
// So a Memcached is looked at again after ChangingTTL while it is changing or unavailable,
// while its new credentials wait (credentials.Waiting), or while Crossplane drops its XR's
// events; after ResponseTTL when it runs in another cluster (Crossplane does not watch the
// connection details its Instance publishes); after SettledTTL once settled, since each call applies every composed resource and a short TTL
// keeps the API server busy with idle claims; and no later than its TLS certificate's expiry.
// The figures behind each value are in docs/performance.md (the function at scale).
const (
	SettledTTL  = 10 * time.Minute
	ResponseTTL = time.Minute
	ChangingTTL = 15 * time.Second
)

// ConditionResponsive is Crossplane's condition on an XR saying whether it acts on watch
// events: False (reason WatchCircuitOpen) while its circuit breaker drops them.
const ConditionResponsive = "Responsive"

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
	renders     *lru.Cache[lru.Key, *rendered]
	tlsVerdicts *lru.Cache[lru.Key, tlsVerdict]
	credentials *credentials.Store
	// now is the time TLS certificates are judged at (fn/tls.go): time.Now outside tests.
	now func() time.Time
}

// New returns a Function that logs to log. Per-call logs are at debug level only, so a busy
// control plane does not log a line per reconcile.
func New(log logging.Logger) *Function {
	return &Function{
		log:         log,
		renders:     lru.New[lru.Key, *rendered](maxCachedRenders),
		tlsVerdicts: lru.New[lru.Key, tlsVerdict](maxTLSVerdicts),
		credentials: credentials.NewStore(),
		now:         time.Now,
	}
}

// RunFunction composes a Memcached. It never returns a gRPC error: bad input is reported in
// the response, as a Fatal result for the platform team's Input and as a Warning plus the
// Available condition for the claim owner's spec. It reads the request, decides what to run
// and where, holds what runs (an invalid spec, or credentials that wait with none to serve
// meanwhile) or composes the rendering, and reports.
func (f *Function) RunFunction(_ context.Context, req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
	rsp := response.To(req, ResponseTTL)
	var o observation
	if err := f.read(req, &o); err != nil {
		// Fatal: Crossplane then applies nothing, so what runs stays as is.
		response.Fatal(rsp, err)
		return rsp, nil
	}
	desiredResources(rsp)
	var d decision
	if err := f.decide(rsp, req, &o, &d); err != nil {
		response.Fatal(rsp, err)
		return rsp, nil
	}
	if d.waiting {
		wait(rsp, &o)
		return rsp, nil
	}
	var v verdict
	switch {
	case len(d.errs) > 0:
		v = hold(rsp, &o, &d)
		f.renewHeldClientCertificate(rsp, &o, &d, &v)
	case d.credentialsWait != "" && d.m.Auth == nil:
		v = holdForCredentials(rsp, &o, &d)
	default:
		if err := f.compose(rsp, req, &o, &d, &v); err != nil {
			response.Fatal(rsp, err)
			return rsp, nil
		}
	}
	if len(d.unchecked) > 0 {
		// In the condition, not an event: a Crossplane that lacks the capability lacks it on
		// every call.
		v.cond.Message += "; " + uncheckedNote(d.unchecked)
	}
	report(rsp, &o, &d, &v, f.now())
	reportCredentials(rsp, &o, &d, &v)
	f.log.Debug("Composed Memcached", "tag", req.GetMeta().GetTag(), "name", d.m.Name, "namespace", d.m.Namespace,
		"size", d.m.Size, "reason", v.cond.Reason)
	return rsp, nil
}

// observation is what a request says about a Memcached, read once.
type observation struct {
	settings resolve.Settings
	xr       *structpb.Struct
	// resources are the observed composed resources, by name; among them the Deployment
	// (nil when not observed) and the Instances, read.
	resources  map[string]*fnv1.Resource
	deployment *appsv1.Deployment
	instances  map[string]*memcachedv1alpha1.Instance
	// xrConnection is the XR's connection details as Crossplane last published them (a
	// legacy claim's; nil for a namespaced XR, which has none).
	xrConnection map[string][]byte
	// reason is the Available reason the last call decided (status.availableReason, or the
	// condition's for an XR no call of this version has written); message is the
	// condition's message when the condition says that reason ("" when it says another: an
	// earlier condition Crossplane wrote back, see cachev1alpha1.XMemcachedStatus).
	reason, message string
	// unresponsive is true while Crossplane drops the XR's watch events (ConditionResponsive).
	unresponsive bool
}

// read reads the step's Settings and the observed state the function judges into o. An
// error is the platform team's Input, or an observed object that cannot be trusted.
func (f *Function) read(req *fnv1.RunFunctionRequest, o *observation) error {
	s, err := settings(req)
	if err != nil {
		return err
	}
	oc := req.GetObserved().GetComposite()
	*o = observation{settings: s, xr: oc.GetResource(), resources: req.GetObserved().GetResources(), xrConnection: oc.GetConnectionDetails()}
	if od, ok := o.resources[KeyDeployment]; ok {
		if o.deployment, err = readDeployment(od.GetResource()); err != nil {
			return err
		}
	}
	if o.instances, err = observedInstances(o.resources); err != nil {
		return err
	}
	o.reason, o.message = previousVerdict(o.xr)
	responsive, _, _ := condition(o.xr, ConditionResponsive)
	o.unresponsive = responsive == "False"
	return nil
}

// previousVerdict is the reason and message of the Available condition the last call
// decided, as observed XR xr holds them (see observation.reason).
func previousVerdict(xr *structpb.Struct) (reason, message string) {
	_, cr, cm := condition(xr, ConditionAvailable)
	reason = str(xr, "status", "availableReason")
	switch {
	case reason == "":
		return cr, cm
	case reason != cr:
		return reason, ""
	}
	return reason, cm
}

// decision is what the function makes of an observation: the Memcached to run and where,
// or why the spec is invalid.
type decision struct {
	t targetInfo
	// m is the resolved Memcached; with errs, only its name and namespace are known.
	m render.Memcached
	// placement is where the Memcached runs: nil for this cluster.
	placement *cachev1alpha1.ProviderConfigReference
	// tlsExpiry is when the first certificate of the TLS pair served expires (zero without
	// TLS): the verdict on it changes then, watched or not.
	tlsExpiry time.Time
	// renewAt is when the first of the certificates the function issued is due for renewal
	// (zero without any): the function renews it on a call after then.
	renewAt time.Time
	errs    field.ErrorList
	// waiting is true while the TLS Secret the spec names has not been fetched: until
	// Crossplane sends it, nothing can be decided.
	waiting bool
	// credentialsWait says why the credentials spec.auth asks for wait, for the claim ("" when
	// they do not): m.Auth then holds those of the observed auth Secret, which keep serving,
	// or is nil when none may and what runs is held.
	credentialsWait string
	// notServed is true when a kind the Memcached needs is not served (schemas.go): the
	// platform's fix, which Crossplane does not watch for the XR, shows after ResponseTTL.
	notServed bool
	// unchecked are the kinds composed without knowing whether they are served, because
	// Crossplane does not advertise required schemas.
	unchecked []string
}

// decide resolves the XR's spec against the Settings into d, reads the TLS Secret it names
// (asking Crossplane for it) and gives a Memcached with auth on its stable credentials. An
// error is one the claim owner cannot fix (no randomness for a password).
func (f *Function) decide(rsp *fnv1.RunFunctionResponse, req *fnv1.RunFunctionRequest, o *observation, d *decision) error {
	spec := decideSpec(o, d)
	if d.placement != nil && len(d.errs) == 0 {
		switch kindServed(rsp, req, instanceSchema) {
		case servedNo:
			if len(o.instances) > 0 {
				// An observed Instance proves its kind served (a CRD's deletion deletes its
				// objects), as an observed ServiceMonitor does: a stale answer holds nothing.
				break
			}
			// Held, as any invalid spec: what runs stays, here or in another cluster.
			d.errs = append(d.errs, instanceNotServed(d.placement.Name))
			d.notServed = true
		case servedUnknown:
			d.unchecked = append(d.unchecked, instanceSchema.groupKind())
		}
	}
	if name := tlsSecretName(spec); name != "" && d.placement == nil {
		secret, fetched := requireTLSSecret(rsp, req, name, d.t.namespace)
		if !fetched {
			d.waiting = true
			return nil
		}
		served, expiry, errs := f.servedTLS(o, d.m, name, secret)
		if d.errs = append(d.errs, errs...); len(d.errs) == 0 {
			d.m.TLS, d.tlsExpiry = served, expiry
		}
	}
	// The provider generates the credentials of a Memcached in another cluster, in that
	// cluster: credentials generated here would reach nobody. A Memcached's tenant is the
	// namespace its objects live in: a namespaced XR's own (never a label, which whoever
	// creates the XR sets), or its claim's.
	if len(d.errs) == 0 && d.m.Auth != nil && d.placement == nil {
		owner := credentials.Owner{Namespace: d.t.namespace, UID: credentialKey(o.xr, d.t)}
		want := credentials.WantFor(d.m, f.now())
		a, w, err := credentialsOf(f.credentials, owner, want, o.resources[KeyAuthSecret].GetResource(), o.resources[KeyDeployment].GetResource())
		if err != nil {
			return err
		}
		d.m.Auth = a
		if w != nil {
			d.credentialsWait = credentials.Message(want.Rotation, a, w)
		}
		if a != nil && render.ClientCertificates(d.m) {
			d.renewAt = pki.RenewAt(a.Certificates)
			if d.m.TLS == nil && tlsSecretName(spec) == "" {
				// No TLS Secret named: memcached serves the certificate the function issued.
				d.m.TLS = render.IssuedTLS(a.Certificates)
				d.m.TLS.Digest = loadedDigest(o, d.m.TLS.Digest)
			}
		}
	}
	return nil
}

// decideSpec derives where the XR's objects live and resolves its spec into d. It returns
// the spec as decoded (nil when there is none to read).
func decideSpec(o *observation, d *decision) *cachev1alpha1.XMemcachedSpec {
	xr := o.xr
	t, errs := target(str(xr, "metadata", "name"), str(xr, "metadata", "namespace"),
		str(xr, "metadata", "labels", LabelClaimName), str(xr, "metadata", "labels", LabelClaimNamespace))
	*d = decision{t: t, m: render.Memcached{Name: t.name, Namespace: t.namespace}, errs: errs}
	if len(errs) > 0 {
		return nil
	}
	m, placement, spec, errs := resolveSpec(xr, t, o.settings)
	d.placement, d.errs = placement, errs
	if len(errs) == 0 {
		d.m = m
	}
	return spec
}

// verdict is what a call reports: the Available condition, the rendering whose endpoint,
// selector and connection details the XR carries, and whose replicas it counts.
type verdict struct {
	cond readiness.Condition
	r    rendered
	// elsewhere is true when the Memcached runs in another cluster, through instance (nil
	// until observed).
	elsewhere bool
	instance  *memcachedv1alpha1.Instance
}

// wait holds what runs while Crossplane fetches the TLS Secret for the next call: this
// call's response is not the one Crossplane applies, and holding keeps it harmless all the
// same.
func wait(rsp *fnv1.RunFunctionResponse, o *observation) {
	if !holdRunning(rsp.Desired.Resources, o) {
		composite(rsp).Ready = fnv1.Ready_READY_FALSE
	}
}

// hold answers an invalid spec: every composed resource of the function's stays exactly as
// it runs, and nothing new is desired, because one bad field must not change or drop
// anything that runs. The verdict is InvalidSpec naming every bad field.
func hold(rsp *fnv1.RunFunctionResponse, o *observation, d *decision) verdict {
	return holdAs(rsp, o, d.m, readiness.Condition{Reason: readiness.ReasonInvalidSpec, Message: resolve.Message(d.errs)})
}

// holdAs holds everything of the Memcached m that runs, as hold does, with verdict cond.
func holdAs(rsp *fnv1.RunFunctionResponse, o *observation, m render.Memcached, cond readiness.Condition) verdict {
	if !holdRunning(rsp.Desired.Resources, o) {
		// Nothing of this Memcached runs, and Crossplane would count zero unready
		// composed resources as a ready XR.
		composite(rsp).Ready = fnv1.Ready_READY_FALSE
	}
	// Nothing rendered, yet the endpoint and the pods' selector are known when the target
	// is, and the credentials of what runs stay in the connection details.
	r := rendered{endpoint: render.Endpoint(m), connection: render.ConnectionDetails(m), selector: selector(m)}
	if secret := authSecret(o.resources[KeyAuthSecret].GetResource()); secret != nil {
		if a, ok := credentials.Held(secret, func(render.Auth) bool { return true }); ok {
			held := m
			held.Auth = &a
			for k, v := range render.ConnectionDetails(held) {
				if !slices.Contains(addressKeys, k) && k != render.ConnectionTLS && k != render.ConnectionCA {
					r.connection[k] = v
				}
			}
		}
	}
	heldTLS(o, r.connection)
	// It runs where it already ran.
	oi := anyInstance(o.instances)
	return verdict{cond: cond, r: r, elsewhere: oi != nil, instance: oi}
}

// holdRunning desires every observed composed resource of the function's exactly as it
// runs, marked ready from its observed state, and reports whether it holds anything.
func holdRunning(desired map[string]*fnv1.Resource, o *observation) bool {
	holding := false
	owner := composedFieldOwner(o.xr)
	for k, r := range o.resources {
		if slices.Contains(ownKeys, k) || isInstanceKey(k) {
			desired[k] = &fnv1.Resource{Resource: held(r.GetResource(), owner), Ready: fnv1.Ready_READY_TRUE}
			holding = true
		}
	}
	if od := o.deployment; od != nil {
		desired[KeyDeployment].Ready = ready(readiness.Deployment(od, readiness.Wanted(od)))
	}
	for k, i := range o.instances {
		desired[k].Ready = ready(remote.Ready(i))
	}
	return holding
}

// compose desires the rendering of the decided Memcached, here or through an Instance where
// it is placed, and judges it into v. While everything is applied and still not every
// replica serves, the pods say why.
func (f *Function) compose(rsp *fnv1.RunFunctionResponse, req *fnv1.RunFunctionRequest, o *observation, d *decision, v *verdict) error {
	var ik, iname string
	var oi *memcachedv1alpha1.Instance
	if d.placement != nil {
		ik, iname, oi = instanceFor(o.instances, d.placement, d.m.Name)
	}
	r, err := f.rendering(renderInput{M: d.m, Namespaced: d.t.namespaced, Placement: d.placement, InstanceKey: ik, InstanceName: iname})
	if err != nil {
		return err
	}
	r, notes := servedOnly(rsp, req, o, d, r)
	cond := desire(rsp.Desired.Resources, o, r, oi, d.placement)
	if len(notes) > 0 {
		cond.Message += "; " + strings.Join(notes, "; ")
	}
	if o.settings.PodDiagnostics && d.placement == nil && !cond.Available && readiness.Applied(o.deployment, r.want) {
		cond.Message = explain(rsp, req, d.m, cond.Message)
	}
	*v = verdict{cond: cond, r: *r, elsewhere: d.placement != nil, instance: oi}
	v.r.connection = maps.Clone(r.connection) // This call's: the rendering's is shared.
	if d.placement == nil && !d.t.namespaced {
		// A legacy claim's connection Secret only ever gains keys: one this Memcached no
		// longer has (a password after a change to client certificates) is given empty.
		for _, k := range connectionKeys {
			if _, ok := v.r.connection[k]; !ok && len(o.xrConnection[k]) > 0 {
				v.r.connection[k] = []byte{}
			}
		}
	}
	if d.placement != nil {
		// The connection details are the Instance's, not the rendering's: this call's alone.
		v.r.connection = remoteConnection(o, r, ik, d.t.namespaced, d.m)
		if d.t.namespaced {
			s, err := connectionSecret(d.m, v.r.connection)
			if err != nil {
				return err
			}
			rsp.Desired.Resources[KeyConnectionSecret].Resource = s
		}
	}
	return nil
}

// desire desires the rendered objects, each marked ready from its observed state, and
// returns the Available verdict: from the Deployment here, or from the provider's Instance
// oi (nil until observed) when the Memcached runs in another cluster.
func desire(desired map[string]*fnv1.Resource, o *observation, r *rendered, oi *memcachedv1alpha1.Instance, placement *cachev1alpha1.ProviderConfigReference) readiness.Condition {
	for k, obj := range r.objects {
		_, seen := o.resources[k]
		rd := ready(seen)
		switch {
		case k == KeyDeployment:
			rd = ready(readiness.Deployment(o.deployment, r.want))
		case isInstanceKey(k):
			rd = ready(oi != nil && remote.Ready(oi))
		}
		desired[k] = &fnv1.Resource{Resource: obj, Ready: rd}
	}
	if placement == nil {
		return readiness.Available(o.deployment, r.want, o.reason)
	}
	if oi == nil {
		oi = &memcachedv1alpha1.Instance{}
	}
	return remote.Available(oi)
}

// report writes the verdict into the response: the XR's status and connection details, the
// Available condition and its event, and how soon Crossplane should call again (see
// SettledTTL): soon while the Memcached changes or Crossplane drops its XR's watch events,
// later once settled or while its spec is invalid (only the owner's fix, a watched change,
// helps then), and no later than its certificate's expiry or the renewal of one it issued.
func report(rsp *fnv1.RunFunctionResponse, o *observation, d *decision, v *verdict, now time.Time) {
	replicas, available := observedReplicas(v.elsewhere, o.deployment, v.instance)
	reportStatus(rsp, replicas, available, v.cond.Reason, &v.r, d.t)
	reportCondition(rsp, v.cond, o.reason, o.message)
	rsp.Meta.Ttl = durationpb.New(responseTTL(o, d, v, now))
}

// responseTTL is how long Crossplane may rely on this call's response (see SettledTTL).
func responseTTL(o *observation, d *decision, v *verdict, now time.Time) time.Duration {
	changing := !v.cond.Available && v.cond.Reason != readiness.ReasonInvalidSpec
	switch {
	case changing || o.unresponsive || d.credentialsWait != "":
		return ChangingTTL
	case v.elsewhere || d.notServed:
		return ResponseTTL
	}
	ttl := SettledTTL
	for _, at := range []time.Time{d.tlsExpiry, d.renewAt} {
		if !at.IsZero() {
			ttl = min(ttl, max(at.Sub(now)+time.Second, ChangingTTL))
		}
	}
	return ttl
}

// desiredResources returns the response's desired composed resources, creating the map
// when no earlier step desired any.
func desiredResources(rsp *fnv1.RunFunctionResponse) map[string]*fnv1.Resource {
	if rsp.Desired == nil {
		rsp.Desired = &fnv1.State{}
	}
	if rsp.Desired.Resources == nil {
		rsp.Desired.Resources = map[string]*fnv1.Resource{}
	}
	return rsp.Desired.Resources
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
		m = resolve.Remote(m)
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

// reportStatus writes status.replicas, status.availableReplicas, status.availableReason (the
// verdict reason, which the next call reads back), status.endpoint and
// status.selector (the pods' label selector, which the scale subresource serves to autoscalers)
// into the desired XR, keeping whatever earlier steps put there, and connection details for
// claims.
func reportStatus(rsp *fnv1.RunFunctionResponse, replicas, available int32, reason string, r *rendered, t targetInfo) {
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
	status.Fields["availableReason"] = structpb.NewStringValue(reason)
	if t.namespace == "" {
		return
	}
	status.Fields["endpoint"] = structpb.NewStringValue(r.endpoint)
	status.Fields["selector"] = structpb.NewStringValue(r.selector)
	if !t.namespaced {
		if dxr.ConnectionDetails == nil {
			dxr.ConnectionDetails = map[string][]byte{}
		}
		maps.Copy(dxr.ConnectionDetails, r.connection)
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
