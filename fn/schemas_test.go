package fn

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/structpb"
	"sigs.k8s.io/yaml"

	apiextensionsv1 "github.com/crossplane/crossplane/apis/v2/apiextensions/v1"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
)

// TestExampleCompositionsDeclareSchemas keeps each example Composition's
// requirements.requiredSchemas in step with what the function reads: every kind its step's
// Input may make the function compose whose CRD a cluster may lack, under the name and with
// the apiVersion and kind the function asks for. Crossplane then sends them with the first
// call; a schema the function must ask for itself costs a second call on every reconcile.
func TestExampleCompositionsDeclareSchemas(t *testing.T) {
	for _, file := range []string{"composition.yaml", filepath.Join("namespaced", "composition.yaml")} {
		t.Run(file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("..", "example", file))
			if err != nil {
				t.Fatal(err)
			}
			c := &apiextensionsv1.Composition{}
			if err := yaml.UnmarshalStrict(b, c); err != nil {
				t.Fatalf("cannot read example/%s as a Composition: %v", file, err)
			}
			for _, step := range c.Spec.Pipeline {
				req := &fnv1.RunFunctionRequest{}
				if step.Input != nil {
					req.Input = &structpb.Struct{}
					if err := req.Input.UnmarshalJSON(step.Input.Raw); err != nil {
						t.Fatalf("step %s: cannot read its Input: %v", step.Step, err)
					}
				}
				s, err := settings(req)
				if err != nil {
					t.Fatalf("step %s: %v", step.Step, err)
				}
				want := map[string]apiextensionsv1.RequiredSchemaSelector{}
				needs := []kindSchema{instanceSchema}
				if s.ServiceMonitor {
					needs = append(needs, serviceMonitorSchema)
				}
				if s.PrometheusRule {
					needs = append(needs, prometheusRuleSchema)
				}
				for _, k := range needs {
					want[k.name] = apiextensionsv1.RequiredSchemaSelector{RequirementName: k.name, APIVersion: k.apiVersion, Kind: k.kind}
				}
				got := map[string]apiextensionsv1.RequiredSchemaSelector{}
				if step.Requirements != nil {
					for _, r := range step.Requirements.RequiredSchemas {
						got[r.RequirementName] = r
					}
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("example/%s step %s: requirements.requiredSchemas differ from what the function asks for with its Input: -want, +got:\n%s", file, step.Step, diff)
				}
			}
		})
	}
}
