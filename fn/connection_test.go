package fn

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/example/function-memcached/internal/render"
)

// TestRemoteConnection covers what the fixtures do not: which of an Instance's published
// details and of the claim's held ones make a remote claim's connection details.
func TestRemoteConnection(t *testing.T) {
	m := render.Memcached{Name: "sessions", Namespace: "team-a"}
	address := render.ConnectionDetails(m)
	with := func(extra ...string) map[string][]byte {
		out := render.ConnectionDetails(m)
		for i := 0; i+1 < len(extra); i += 2 {
			out[extra[i]] = []byte(extra[i+1])
		}
		return out
	}
	instance := func(details map[string][]byte) *fnv1.Resource {
		return &fnv1.Resource{Resource: &structpb.Struct{}, ConnectionDetails: details}
	}
	r := &rendered{objects: map[string]*structpb.Struct{KeyInstance: {}}, connection: with(render.ConnectionUsername, "", render.ConnectionPassword, "")}
	type args struct {
		resources  map[string]*fnv1.Resource
		held       map[string][]byte
		namespaced bool
	}
	cases := map[string]struct {
		reason string
		args   args
		want   map[string][]byte
	}{
		"NothingYet": {
			reason: "A new Instance, a new claim: the endpoint, host and port, and not the empty credentials of the rendering.",
			args:   args{resources: map[string]*fnv1.Resource{}},
			want:   address,
		},
		"PublishedIsWhole": {
			reason: "Published details are the whole truth: TLS the claim held and the Instance no longer publishes is given empty for a legacy claim, whose Secret only gains keys.",
			args: args{
				resources: map[string]*fnv1.Resource{KeyInstance: instance(with(render.ConnectionUsername, "memcached", render.ConnectionPassword, "pw"))},
				held:      with(render.ConnectionTLS, "true", render.ConnectionCA, "ca"),
			},
			want: with(render.ConnectionUsername, "memcached", render.ConnectionPassword, "pw", render.ConnectionTLS, "", render.ConnectionCA, ""),
		},
		"PublishedIsWholeNamespaced": {
			reason: "A namespaced XR's composed Secret omits what the Instance no longer publishes.",
			args: args{
				resources:  map[string]*fnv1.Resource{KeyInstance: instance(with(render.ConnectionUsername, "memcached", render.ConnectionPassword, "pw"))},
				namespaced: true,
			},
			want: with(render.ConnectionUsername, "memcached", render.ConnectionPassword, "pw"),
		},
		"AddressFromRendering": {
			reason: "An Instance that publishes credentials only still gives the claim the endpoint, host and port.",
			args: args{
				resources: map[string]*fnv1.Resource{KeyInstance: instance(map[string][]byte{render.ConnectionPassword: []byte("pw")})},
			},
			want: with(render.ConnectionPassword, "pw"),
		},
		"UnknownKeysDropped": {
			reason: "A key that is no connection detail of a Memcached, written into the Instance's Secret by hand, reaches no claim.",
			args: args{
				resources: map[string]*fnv1.Resource{KeyInstance: instance(map[string][]byte{"kubeconfig": []byte("x"), render.ConnectionPassword: []byte("pw")})},
			},
			want: with(render.ConnectionPassword, "pw"),
		},
		"MoveFromHere": {
			reason: "Moving from here (the local auth Secret still observed), the credentials the claim holds are the local Memcached's, being deleted: given empty.",
			args: args{
				resources: map[string]*fnv1.Resource{KeyAuthSecret: {Resource: &structpb.Struct{}}},
				held:      with(render.ConnectionUsername, "memcached", render.ConnectionPassword, "local"),
			},
			want: with(render.ConnectionUsername, "", render.ConnectionPassword, ""),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := &observation{resources: tc.args.resources, xrConnection: tc.args.held}
			if tc.args.namespaced {
				o.resources[KeyConnectionSecret] = &fnv1.Resource{Resource: secretStruct(tc.args.held)}
				r.objects[KeyConnectionSecret] = &structpb.Struct{}
				defer delete(r.objects, KeyConnectionSecret)
			}
			got := remoteConnection(o, r, KeyInstance, tc.args.namespaced, render.Memcached{Auth: &render.Auth{}, TLS: &render.TLS{}})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nremoteConnection(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// secretStruct is a Secret with data, as Crossplane observes it.
func secretStruct(data map[string][]byte) *structpb.Struct {
	d := map[string]any{}
	for k, v := range data {
		d[k] = base64.StdEncoding.EncodeToString(v)
	}
	s, _ := structpb.NewStruct(map[string]any{"apiVersion": "v1", "kind": "Secret", "data": d})
	return s
}

// TestConnectionCredentialsNotReported runs every request fixture with a debug logger and
// checks that no password it carries (an observed Instance's published connection details, the
// claim's held ones, an auth Secret's) reaches a condition, a result, a log line, the XR's
// status or a desired object other than the connection Secret and the auth Secret.
func TestConnectionCredentialsNotReported(t *testing.T) {
	var lines []string
	f := New(logging.NewLogrLogger(funcr.New(func(prefix, args string) { lines = append(lines, prefix+args) }, funcr.Options{Verbosity: 1})))
	for _, d := range fixtures(t) {
		req := &fnv1.RunFunctionRequest{}
		readProtoYAML(t, d, req)
		var passwords []string
		add := func(pw []byte) {
			if len(pw) >= minTracedPassword {
				passwords = append(passwords, string(pw), base64.StdEncoding.EncodeToString(pw))
			}
		}
		add(req.GetObserved().GetComposite().GetConnectionDetails()[render.ConnectionPassword])
		for _, r := range req.GetObserved().GetResources() {
			add(r.GetConnectionDetails()[render.ConnectionPassword])
			add(secretData(r.GetResource(), render.ConnectionPassword)[render.ConnectionPassword])
		}
		lines = lines[:0]
		rsp, err := f.RunFunction(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		texts := map[string]string{"the XR": jsonOf(rsp.GetDesired().GetComposite().GetResource())}
		for _, c := range rsp.GetConditions() {
			texts["condition "+c.GetType()] = c.GetMessage()
		}
		for _, r := range rsp.GetResults() {
			texts["result "+r.GetReason()] += r.GetMessage()
		}
		for k, r := range rsp.GetDesired().GetResources() {
			if k != KeyConnectionSecret && k != KeyAuthSecret {
				texts[k] = jsonOf(r.GetResource())
			}
		}
		texts["the log"] = strings.Join(lines, "\n")
		for where, text := range texts {
			for _, pw := range passwords {
				if strings.Contains(text, pw) {
					t.Errorf("%s: %s carries a password", d, where)
				}
			}
		}
	}
}
