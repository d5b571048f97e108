// Package fn is the Memcached composition function: it reads the observed XR and the
// function's Input, renders the Deployment, Service, PodDisruptionBudget and (for namespaced
// XRs) connection Secret, marks each ready from its observed state, and reports the
// Available condition, status and connection details back to the XR and its claim.
//
// Everything it decides is delegated: resolve checks the spec against policy, render builds
// the objects, readiness judges observed state. This package only moves data between the
// RunFunctionRequest and those pure functions, and applies Crossplane's rules for results.
package fn

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"

	"github.com/pkg/errors"
	"google.golang.org/protobuf/encoding/protojson"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/request"
	"github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/resource/composed"
	"github.com/crossplane/function-sdk-go/response"

	"github.com/example/function-memcached/input/v1beta1"
	"github.com/example/function-memcached/readiness"
	"github.com/example/function-memcached/render"
	"github.com/example/function-memcached/resolve"
)

// Names of the composed resources this function owns in the desired state. Resources under
// other names, desired by earlier pipeline steps, pass through untouched.
const (
	KeyDeployment       resource.Name = "memcached-deployment"
	KeyService          resource.Name = "memcached-service"
	KeyPDB              resource.Name = "memcached-pdb"
	KeyConnectionSecret resource.Name = "memcached-connection-secret"
)

// ConditionAvailable is the function's own condition on the XR and claim: the tutorial's
// Available, carried into Crossplane, which owns Ready and Synced itself.
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

	log logging.Logger
}

// New returns a Function that logs to log. Per-call logs are at debug level only, so a busy
// control plane does not log a line per reconcile.
func New(log logging.Logger) *Function {
	return &Function{log: log}
}

// RunFunction composes a Memcached. It never returns a gRPC error: bad input is reported in
// the response, as a Fatal result for the platform team's Input and as a Warning plus the
// Available condition for the claim owner's spec.
func (f *Function) RunFunction(_ context.Context, req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
	log := f.log.WithValues("tag", req.GetMeta().GetTag())
	rsp := response.To(req, response.DefaultTTL)

	in, err := input(req)
	if err != nil {
		response.Fatal(rsp, err)
		return rsp, nil
	}
	settings, err := resolve.NewSettings(in)
	if err != nil {
		response.Fatal(rsp, err)
		return rsp, nil
	}
	oxr, err := request.GetObservedCompositeResource(req)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot get the observed composite resource"))
		return rsp, nil
	}
	observed, err := request.GetObservedComposedResources(req)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot get the observed composed resources"))
		return rsp, nil
	}
	desired, err := request.GetDesiredComposedResources(req)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot get the desired composed resources"))
		return rsp, nil
	}
	dxr, err := request.GetDesiredCompositeResource(req)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot get the desired composite resource"))
		return rsp, nil
	}
	log = log.WithValues("xr", oxr.Resource.GetName(), "xr-namespace", oxr.Resource.GetNamespace())

	var observedDeployment *appsv1.Deployment
	if o, ok := observed[KeyDeployment]; ok {
		observedDeployment = &appsv1.Deployment{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Resource.Object, observedDeployment); err != nil {
			// Fatal: Crossplane then applies nothing, so the running Deployment stays as is.
			response.Fatal(rsp, errors.Wrapf(err, "cannot read the observed Deployment %q", o.Resource.GetName()))
			return rsp, nil
		}
	}

	t, errs := target(oxr.Resource.GetName(), oxr.Resource.GetNamespace(), oxr.Resource.GetLabels())
	m := render.Memcached{Name: t.name, Namespace: t.namespace}
	if len(errs) == 0 {
		spec, ok := oxr.Resource.Object["spec"].(map[string]any)
		if !ok && oxr.Resource.Object["spec"] != nil {
			errs = field.ErrorList{field.Invalid(field.NewPath("spec"), oxr.Resource.Object["spec"], "must be an object")}
		}
		if len(errs) == 0 {
			var resolved render.Memcached
			if resolved, errs = resolve.Memcached(spec, t.name, t.namespace, settings); len(errs) == 0 {
				m = resolved
			}
		}
	}

	var cond readiness.Condition
	if len(errs) > 0 {
		// Hold: keep what runs exactly as observed, and create nothing new.
		for _, k := range []resource.Name{KeyDeployment, KeyService, KeyPDB, KeyConnectionSecret} {
			if o, ok := observed[k]; ok {
				desired[k] = &resource.DesiredComposed{Resource: hold(o.Resource), Ready: resource.ReadyTrue}
			}
		}
		if observedDeployment != nil {
			desired[KeyDeployment].Ready = ready(readiness.Deployment(observedDeployment, ptrOr(observedDeployment.Spec.Replicas, 1)))
		}
		cond = readiness.Condition{Reason: readiness.ReasonInvalidSpec, Message: invalidMessage(errs)}
	} else {
		if err := compose(desired, observed, observedDeployment, m, t.namespaced); err != nil {
			response.Fatal(rsp, err)
			return rsp, nil
		}
		cond = readiness.Available(observedDeployment, m.Size, string(oxr.Resource.GetCondition(ConditionAvailable).Reason))
	}

	if err := report(rsp, oxr, dxr, observedDeployment, m, t, cond); err != nil {
		response.Fatal(rsp, err)
		return rsp, nil
	}
	if err := response.SetDesiredComposedResources(rsp, desired); err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot set the desired composed resources"))
		return rsp, nil
	}
	log.Debug("Composed Memcached", "size", m.Size, "available", cond.Available, "reason", cond.Reason)
	return rsp, nil
}

// input decodes the step's Input strictly: an unknown or mistyped field is the platform
// team's mistake and is reported with its path, rather than silently ignored. A step without
// Input gets every default.
func input(req *fnv1.RunFunctionRequest) (*v1beta1.Input, error) {
	in := &v1beta1.Input{}
	if req.GetInput() == nil {
		return in, nil
	}
	b, err := protojson.Marshal(req.GetInput())
	if err != nil {
		return nil, errors.Wrap(err, "cannot read the function's Input")
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(in); err != nil {
		return nil, errors.Wrap(err, "invalid function Input (memcached.fn.example.com/v1beta1)")
	}
	return in, nil
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
func target(name, namespace string, labels map[string]string) (targetInfo, field.ErrorList) {
	if namespace != "" {
		return targetInfo{name: render.Name(name), namespace: namespace, namespaced: true}, nil
	}
	if ns := labels[LabelClaimNamespace]; ns != "" {
		claim := labels[LabelClaimName]
		if claim == "" {
			claim = name
		}
		return targetInfo{name: render.Name(claim), namespace: ns}, nil
	}
	return targetInfo{}, field.ErrorList{field.Required(field.NewPath("metadata", "labels").Key(LabelClaimNamespace),
		"a cluster-scoped XMemcached has no namespace for its Deployment: create it through a Memcached claim, or use the namespaced API")}
}

// compose adds the rendered objects to desired, each marked ready from its observed state.
func compose(desired map[resource.Name]*resource.DesiredComposed, observed map[resource.Name]resource.ObservedComposed, od *appsv1.Deployment, m render.Memcached, namespaced bool) error {
	objs := map[resource.Name]runtime.Object{
		KeyDeployment: render.Deployment(m),
		KeyService:    render.Service(m),
	}
	if render.NeedsPodDisruptionBudget(m) {
		objs[KeyPDB] = render.PodDisruptionBudget(m)
	}
	if namespaced {
		objs[KeyConnectionSecret] = render.ConnectionSecret(m)
	}
	for k, o := range objs {
		u, err := toComposed(o)
		if err != nil {
			return errors.Wrapf(err, "cannot render %s", k)
		}
		_, seen := observed[k]
		r := ready(seen)
		if k == KeyDeployment {
			r = ready(readiness.Deployment(od, m.Size))
		}
		desired[k] = &resource.DesiredComposed{Resource: u, Ready: r}
	}
	return nil
}

// report writes status, connection details, the Available condition and, on a transition
// worth a person's attention, one event.
func report(rsp *fnv1.RunFunctionResponse, oxr, dxr *resource.Composite, od *appsv1.Deployment, m render.Memcached, t targetInfo, c readiness.Condition) error {
	var replicas, available int64
	if od != nil {
		replicas, available = int64(od.Status.Replicas), int64(od.Status.AvailableReplicas)
	}
	status := map[string]any{"replicas": replicas, "availableReplicas": available}
	if t.namespace != "" {
		status["endpoint"] = render.Endpoint(m)
		if !t.namespaced {
			dxr.ConnectionDetails = render.ConnectionDetails(m)
		}
	}
	if err := dxr.Resource.SetValue("status", status); err != nil {
		return errors.Wrap(err, "cannot set the composite's status")
	}
	if err := response.SetDesiredCompositeResource(rsp, dxr); err != nil {
		return errors.Wrap(err, "cannot set the desired composite resource")
	}

	if c.Available {
		response.ConditionTrue(rsp, ConditionAvailable, c.Reason).WithMessage(c.Message).TargetCompositeAndClaim()
	} else {
		response.ConditionFalse(rsp, ConditionAvailable, c.Reason).WithMessage(c.Message).TargetCompositeAndClaim()
	}

	prev := oxr.Resource.GetCondition(ConditionAvailable)
	changed := string(prev.Reason) != c.Reason ||
		(c.Reason == readiness.ReasonInvalidSpec && prev.Message != c.Message)
	if !changed {
		return nil
	}
	switch c.Reason {
	case readiness.ReasonInvalidSpec:
		response.Warning(rsp, errors.New(c.Message)).WithReason(c.Reason).TargetCompositeAndClaim()
	case readiness.ReasonDegraded:
		response.Warning(rsp, errors.New("Memcached is degraded: "+c.Message)).WithReason(c.Reason).TargetCompositeAndClaim()
	case readiness.ReasonAvailable:
		response.Normal(rsp, "Memcached is available: "+c.Message).WithReason(c.Reason).TargetCompositeAndClaim()
	case readiness.ReasonResizing:
		response.Normal(rsp, "Memcached is "+c.Message).WithReason(c.Reason).TargetCompositeAndClaim()
	}
	return nil
}

// invalidMessage joins field errors into one line a claim owner can act on.
func invalidMessage(errs field.ErrorList) string {
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return "invalid spec, nothing was changed: " + strings.Join(msgs, "; ")
}

// toComposed converts a rendered object into the unstructured form the SDK sends, without
// the empty status and null creationTimestamp that typed objects serialize.
func toComposed(o runtime.Object) (*composed.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return nil, err
	}
	delete(m, "status")
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	u := composed.New()
	u.SetUnstructuredContent(m)
	return u, nil
}

// hold returns the desired form of an observed object that must stay exactly as it runs:
// its identity, labels and content (spec, data), without the status and server-set metadata
// that an apply must not carry.
func hold(o *composed.Unstructured) *composed.Unstructured {
	out := map[string]any{}
	for k, v := range o.Object {
		if k != "status" && k != "metadata" {
			out[k] = v
		}
	}
	md := map[string]any{"name": o.GetName()}
	if ns := o.GetNamespace(); ns != "" {
		md["namespace"] = ns
	}
	if om, ok := o.Object["metadata"].(map[string]any); ok && om["labels"] != nil {
		md["labels"] = om["labels"]
	}
	out["metadata"] = md
	u := composed.New()
	u.SetUnstructuredContent(out)
	return u
}

func ready(b bool) resource.Ready {
	if b {
		return resource.ReadyTrue
	}
	return resource.ReadyFalse
}

func ptrOr(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}
