package v1beta1

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestDecode(t *testing.T) {
	type want struct {
		in  *Input
		err string
	}
	cases := map[string]struct {
		reason string
		args   string
		want   want
	}{
		"Valid": {
			reason: "An Input of known fields decodes.",
			args:   `{"apiVersion":"memcached.fn.example.com/v1beta1","kind":"Input","policy":{"maxSize":3}}`,
			want:   want{in: &Input{TypeMeta: metav1.TypeMeta{APIVersion: APIVersion, Kind: Kind}, Policy: Policy{MaxSize: ptr.To[int32](3)}}},
		},
		"UnknownField": {
			reason: "A misspelt field is refused, named.",
			args:   `{"apiVersion":"memcached.fn.example.com/v1beta1","kind":"Input","policy":{"maxSzie":3}}`,
			want:   want{err: `invalid function Input (memcached.fn.example.com/v1beta1): json: unknown field "maxSzie"`},
		},
		"WrongType": {
			reason: "A value of the wrong type is refused with the field's path.",
			args:   `{"apiVersion":"memcached.fn.example.com/v1beta1","kind":"Input","policy":{"maxSize":"three"}}`,
			want:   want{err: "invalid function Input (memcached.fn.example.com/v1beta1): json: cannot unmarshal string into Go struct field Policy.policy.maxSize of type int32"},
		},
		"WrongCase": {
			reason: "A field's name in another case is refused, as function-sdk-go refuses it for the function.",
			args:   `{"apiVersion":"memcached.fn.example.com/v1beta1","kind":"Input","policy":{"MaxSize":3}}`,
			want:   want{err: "invalid function Input (memcached.fn.example.com/v1beta1): a field's name differs from the Input's in case (field names are case-sensitive)"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			// The SDK's decoder words an error one of two ways at random: the message
			// must not.
			for range 20 {
				in, err := Decode([]byte(tc.args))
				got := want{in: in}
				if err != nil {
					got.err = err.Error()
				}
				if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
					t.Fatalf("\n%s\nDecode(%s): -want, +got:\n%s", tc.reason, tc.args, diff)
				}
			}
		})
	}
}
