package packaging

import (
	"regexp"
	"sort"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// validation is what a user reads in the output of `make validate`.
type validation struct {
	// Failed is whether make exited non-zero.
	Failed bool
	// Validated lists the group/kind of every resource that passed, once each.
	Validated []string
	// Invalid lists "<name>: <field>" for every schema or CEL error.
	Invalid []string
	// Missing counts resources whose kind has no schema.
	Missing int
}

var (
	validatedLine = regexp.MustCompile(`(?m)^\[✓\] (\S+?)/\S+, Kind=(\S+), .* validated successfully$`)
	invalidLine   = regexp.MustCompile(`(?m)^\[x\] (?:schema|CEL) validation error \S+, Kind=\S+, (\S*) : ([^:]+):`)
	totalLine     = regexp.MustCompile(`(?m)^Total \d+ resources: (\d+) missing schemas`)
)

func parseValidation(t *testing.T, out string, err error) validation {
	t.Helper()
	v := validation{Failed: err != nil}
	seen := map[string]bool{}
	for _, m := range validatedLine.FindAllStringSubmatch(out, -1) {
		if gk := m[1] + "/" + m[2]; !seen[gk] {
			seen[gk] = true
			v.Validated = append(v.Validated, gk)
		}
	}
	sort.Strings(v.Validated)
	for _, m := range invalidLine.FindAllStringSubmatch(out, -1) {
		v.Invalid = append(v.Invalid, m[1]+": "+m[2])
	}
	m := totalLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("make validate printed no summary line:\n%s", out)
	}
	v.Missing, _ = strconv.Atoi(m[1])
	return v
}

func TestValidate(t *testing.T) {
	cli := crossplaneCLI(t)
	cache := t.TempDir()

	cases := map[string]struct {
		reason    string
		resources string // VALIDATE_RESOURCES, relative to the repository root; empty for the default.
		want      validation
	}{
		"Examples": {
			reason: "Every example a user may apply, including the Input inside each Composition, must match its schema.",
			want: validation{Validated: []string{
				"admissionregistration.k8s.io/ValidatingAdmissionPolicy",
				"admissionregistration.k8s.io/ValidatingAdmissionPolicyBinding",
				"apiextensions.crossplane.io/CompositeResourceDefinition",
				"apiextensions.crossplane.io/Composition",
				"cache.example.com/Memcached",
				"cache.example.com/XMemcached",
				"memcached.fn.example.com/Input",
				"namespaced.cache.example.com/Memcached",
				"pkg.crossplane.io/Function",
				"rbac.authorization.k8s.io/ClusterRole",
				"rbac.authorization.k8s.io/RoleBinding",
			}},
		},
		"ClaimSizeZero": {
			reason:    "A claim below the XRD's minimum size must fail validation, naming the claim and the field.",
			resources: "test/packaging/testdata/invalid/claim-size-zero.yaml",
			want:      validation{Failed: true, Invalid: []string{"empty: spec.size"}},
		},
		"ClaimSizeString": {
			reason:    "A size that is not a number must fail validation.",
			resources: "test/packaging/testdata/invalid/claim-size-string.yaml",
			want:      validation{Failed: true, Invalid: []string{"wordy: spec.size"}},
		},
		"CompositionInputOutOfRange": {
			reason:    "An Input inside a Composition is checked against the Input CRD, although the Composition schema accepts any input.",
			resources: "test/packaging/testdata/invalid/composition-bad-input.yaml",
			want: validation{
				Failed:    true,
				Validated: []string{"apiextensions.crossplane.io/Composition"},
				Invalid:   []string{": policy.maxSize"},
			},
		},
		"UnknownKind": {
			reason:    "A kind no schema defines (a typo) must fail, not be skipped.",
			resources: "test/packaging/testdata/invalid/claim-unknown-kind.yaml",
			want:      validation{Failed: true, Missing: 1},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			args := []string{"validate", "CROSSPLANE=" + cli, "VALIDATE_CACHE=" + cache}
			if tc.resources != "" {
				args = append(args, "VALIDATE_RESOURCES="+tc.resources)
			}
			out, err := runMake(t, args...)
			if diff := cmp.Diff(tc.want, parseValidation(t, out, err), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nmake %v: -want, +got:\n%s\noutput:\n%s", tc.reason, args, diff, out)
			}
		})
	}
}
