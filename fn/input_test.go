package fn

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/example/function-memcached/input/v1beta1"
)

// TestInputAsTheProviderReadsIt checks that the function reads a step's Input as the
// provider reads a Composition's (v1beta1.Decode): the same Inputs accepted, the same
// refusals in the same words.
func TestInputAsTheProviderReadsIt(t *testing.T) {
	cases := map[string]struct {
		reason string
		args   string
	}{
		"Valid":        {reason: "A valid Input decodes alike.", args: `{"apiVersion":"memcached.fn.example.com/v1beta1","kind":"Input","policy":{"maxSize":3,"allowedRegistries":["docker.io"]}}`},
		"UnknownField": {reason: "A misspelt field is refused alike.", args: `{"apiVersion":"memcached.fn.example.com/v1beta1","kind":"Input","defaults":{"imgae":"memcached"}}`},
		"WrongType":    {reason: "A mistyped field is refused alike.", args: `{"apiVersion":"memcached.fn.example.com/v1beta1","kind":"Input","policy":{"requireAuth":"yes"}}`},
		"WrongCase":    {reason: "A field named in another case is refused alike.", args: `{"apiVersion":"memcached.fn.example.com/v1beta1","kind":"Input","policy":{"MaxSize":3}}`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := &structpb.Struct{}
			if err := protojson.Unmarshal([]byte(tc.args), s); err != nil {
				t.Fatal(err)
			}
			got, gotErr := input(&fnv1.RunFunctionRequest{Input: s})
			want, wantErr := v1beta1.Decode([]byte(tc.args))
			if diff := cmp.Diff(errorText(wantErr), errorText(gotErr)); diff != "" {
				t.Errorf("\n%s\ninput(...): -v1beta1.Decode's error, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("\n%s\ninput(...): -v1beta1.Decode, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func errorText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
