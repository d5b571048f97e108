package packaging

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"sigs.k8s.io/yaml"
)

// TestCRDsPassTheAPIServersValidation checks every generated CRD the way the API server does
// when Crossplane installs it: structural schema, CEL rules that compile (a property named
// like a CEL keyword, such as namespace, must be written __namespace__) and whose estimated
// cost fits the budget. `crossplane beta validate` checks resources against a CRD, not the CRD
// itself, so without this a rule the API server refuses would first show at install time.
func TestCRDsPassTheAPIServersValidation(t *testing.T) {
	var files []string
	for _, dir := range []string{"package-provider/crds", "package/input"} {
		fs, err := filepath.Glob(filepath.Join("..", "..", dir, "*.yaml"))
		if err != nil || len(fs) == 0 {
			t.Fatalf("no CRDs in %s: %v", dir, err)
		}
		files = append(files, fs...)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f) //nolint:gosec // The repository's own files.
			if err != nil {
				t.Fatal(err)
			}
			v1 := &apiextv1.CustomResourceDefinition{}
			if err := yaml.Unmarshal(b, v1); err != nil {
				t.Fatal(err)
			}
			for _, v := range v1.Spec.Versions {
				if v.Storage {
					v1.Status.StoredVersions = append(v1.Status.StoredVersions, v.Name)
				}
			}
			crd := &apiextensions.CustomResourceDefinition{}
			if err := apiextv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(v1, crd, nil); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range crdvalidation.ValidateCustomResourceDefinition(context.Background(), crd) {
				got = append(got, e.Error())
			}
			if diff := cmp.Diff([]string(nil), got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("the API server would refuse %s: -want, +got:\n%s", f, diff)
			}
		})
	}
}
