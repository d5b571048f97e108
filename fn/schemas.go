package fn

import (
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	memcachedv1alpha1 "github.com/example/function-memcached/apis/memcached/v1alpha1"
	"github.com/example/function-memcached/internal/render"
)

// Crossplane answers a function's request for the OpenAPI schema of a kind (required
// schemas), with an empty schema when the API server does not serve the kind. The function
// asks before it composes a kind whose CRD a platform may not have installed: an Instance
// needs provider-memcached, a ServiceMonitor and a PrometheusRule the Prometheus Operator's
// CRDs. Without the answer Crossplane would fail to apply the kind, and the claim would show a
// Synced error its team cannot act on.
//
// A Composition's step declares the schemas up front, in requirements.requiredSchemas under
// the names below, and Crossplane sends them with the first call of every reconcile. A schema
// not declared there the function asks for in its response, under the name with
// askedSuffix: Crossplane then calls again with it, a second call on every reconcile
// (Crossplane does not remember required schemas between reconciles). The two names keep the
// function's requirements the same on both calls, as Crossplane needs them to be.

// Names a Composition's step gives, in requirements.requiredSchemas, the schemas of the kinds
// the function may compose (docs/operations.md).
const (
	SchemaInstance       = "instance"
	SchemaServiceMonitor = "servicemonitor"
	SchemaPrometheusRule = "prometheusrule"
)

// askedSuffix ends the name under which the function asks, in its response, for a schema
// the Composition did not declare.
const askedSuffix = ".asked"

// RequiredSchemasSince is the oldest Crossplane that answers required schemas
// (CAPABILITY_REQUIRED_SCHEMAS).
const RequiredSchemasSince = "v2.2"

// kindSchema is a kind whose schema the function asks for, and under which name.
type kindSchema struct {
	name, apiVersion, kind string
}

// The kinds the function asks about.
var (
	instanceSchema       = kindSchema{SchemaInstance, memcachedv1alpha1.SchemeGroupVersion.String(), memcachedv1alpha1.InstanceKind}
	serviceMonitorSchema = kindSchema{SchemaServiceMonitor, render.ServiceMonitorAPIVersion, render.ServiceMonitorKind}
	prometheusRuleSchema = kindSchema{SchemaPrometheusRule, render.ServiceMonitorAPIVersion, render.PrometheusRuleKind}
)

// servedAnswer is what a request says about whether the API server serves a kind.
type servedAnswer int

const (
	// servedUnknown: Crossplane does not advertise required schemas; the function composes
	// the kind as it always did and says so in the Available message.
	servedUnknown servedAnswer = iota
	// servedPending: the function asked in this response; the next call has the answer.
	servedPending
	servedYes
	servedNo
)

// kindServed says whether the API server serves k's kind, from the schema the Composition
// declared under k.name, or else the one the function asked for, asking for it when it is
// not in req and Crossplane advertises that it answers.
func kindServed(rsp *fnv1.RunFunctionResponse, req *fnv1.RunFunctionRequest, k kindSchema) servedAnswer {
	if s, ok := req.GetRequiredSchemas()[k.name]; ok {
		return servedOf(s)
	}
	if !slices.Contains(req.GetMeta().GetCapabilities(), fnv1.Capability_CAPABILITY_REQUIRED_SCHEMAS) {
		return servedUnknown
	}
	asked := k.name + askedSuffix
	if rsp.Requirements == nil {
		rsp.Requirements = &fnv1.Requirements{}
	}
	if rsp.Requirements.Schemas == nil {
		rsp.Requirements.Schemas = map[string]*fnv1.SchemaSelector{}
	}
	rsp.Requirements.Schemas[asked] = &fnv1.SchemaSelector{ApiVersion: k.apiVersion, Kind: k.kind}
	if s, ok := req.GetRequiredSchemas()[asked]; ok {
		return servedOf(s)
	}
	return servedPending
}

// servedOf reads Crossplane's answer: a kind the API server does not serve comes back as an
// empty schema.
func servedOf(s *fnv1.Schema) servedAnswer {
	if len(s.GetOpenapiV3().GetFields()) == 0 {
		return servedNo
	}
	return servedYes
}

// instanceNotServed is the claim's error when the kind Instance is not served: only the
// platform can place a Memcached in another cluster then.
func instanceNotServed(placement string) *field.Error {
	return field.Invalid(placementPath, placement, "the kind "+memcachedv1alpha1.InstanceGroupKind+
		" is not served in this cluster, so nothing can be placed in another cluster: the platform must install provider-memcached"+
		" and activate its ManagedResourceDefinition (docs/operations.md), or remove spec.providerConfigRef to run the Memcached here")
}

// monitoringNotComposed is what the Available message says of a ServiceMonitor or
// PrometheusRule left out because the API server does not serve its kind.
func monitoringNotComposed(k kindSchema) string {
	setting, plural := "metrics.serviceMonitor", "servicemonitors"
	if k.kind == render.PrometheusRuleKind {
		setting, plural = "metrics.prometheusRule", "prometheusrules"
	}
	group, _, _ := strings.Cut(k.apiVersion, "/")
	return k.kind + " not composed: this cluster does not serve " + k.apiVersion + " " + k.kind +
		"; the platform installs the Prometheus Operator's CRD " + plural + "." + group +
		" or turns off " + setting + " in the Composition's Input"
}

// uncheckedNote is what the Available message says of kinds composed without knowing
// whether they are served, because Crossplane does not advertise required schemas.
func uncheckedNote(kinds []string) string {
	them := "it"
	if len(kinds) > 1 {
		them = "them"
	}
	return "Crossplane does not advertise CAPABILITY_REQUIRED_SCHEMAS (Crossplane " + RequiredSchemasSince +
		" or later answers it), so the function composed " + strings.Join(kinds, " and ") +
		" without checking that this cluster serves " + them + "; a missing CRD shows as Crossplane's error applying it"
}

// groupKind is k's kind as Kubernetes names it: ServiceMonitor.monitoring.coreos.com.
func (k kindSchema) groupKind() string {
	group, _, _ := strings.Cut(k.apiVersion, "/")
	return k.kind + "." + group
}

// monitoringKinds are the composed resources the function leaves out, with the rest
// composed, when the API server does not serve their kind.
var monitoringKinds = []struct {
	key    string
	schema kindSchema
}{{KeyServiceMonitor, serviceMonitorSchema}, {KeyPrometheusRule, prometheusRuleSchema}}

// servedOnly returns r without the monitoring objects whose kind the API server does not
// serve, and what the Available message says of each left out. One observed is kept: it
// proves its kind served (a CRD's deletion deletes its objects), and a stale answer must not
// delete what runs. r is shared: a rendering that loses an object is a copy.
func servedOnly(rsp *fnv1.RunFunctionResponse, req *fnv1.RunFunctionRequest, o *observation, d *decision, r *rendered) (*rendered, []string) {
	var notes []string
	out := r
	for _, m := range monitoringKinds {
		if _, ok := r.objects[m.key]; !ok {
			continue
		}
		switch kindServed(rsp, req, m.schema) {
		case servedUnknown:
			d.unchecked = append(d.unchecked, m.schema.groupKind())
		case servedNo:
			if _, seen := o.resources[m.key]; seen {
				continue
			}
			if out == r {
				c := *r
				c.objects = maps.Clone(r.objects)
				out = &c
			}
			// Not notServed: the claim serves without it, and a settled one looks again after
			// SettledTTL, not every minute, however long the platform goes without the CRD.
			delete(out.objects, m.key)
			notes = append(notes, monitoringNotComposed(m.schema))
		case servedYes, servedPending:
		}
	}
	return out, notes
}
