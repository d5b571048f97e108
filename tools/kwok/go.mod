// Module kwok pins kwok, which plays the kubelet for the end-to-end suite: it runs fake
// nodes and moves pods through their lifecycle, so Deployments become Available without
// containers.
// Every module it shares with tools/kubernetes is replaced by the version tools/kubernetes
// builds with (test/packaging's TestToolsShareKubernetesPins), so that the Go build cache
// compiles the Kubernetes libraries once for the control plane and kwok: about 36 MB of
// source a cold machine no longer compiles a second time (docs/performance.md, building).
// k8s.io/cri-api and k8s.io/cri-client stay at kwok's v0.36.1: kwok v0.8.0 calls their
// v0.36 API (logs.LogOptions fields, crilogs.ReadLogs), which v0.35.4 lacks.
module github.com/example/function-memcached/tools/kwok

go 1.26.0

tool sigs.k8s.io/kwok/cmd/kwok

require (
	cel.dev/expr v0.25.1 // indirect
	dario.cat/mergo v1.0.1 // indirect
	github.com/Masterminds/goutils v1.1.1 // indirect
	github.com/Masterminds/semver/v3 v3.4.0 // indirect
	github.com/Masterminds/sprig/v3 v3.3.0 // indirect
	github.com/Microsoft/go-winio v0.6.2 // indirect
	github.com/antlr4-go/antlr/v4 v4.13.0 // indirect
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/blang/semver/v4 v4.0.0 // indirect
	github.com/cenkalti/backoff/v4 v4.3.0 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/creack/pty v1.1.24 // indirect
	github.com/davecgh/go-spew v1.1.2-0.20180830191138-d8f796af33cc // indirect
	github.com/emicklei/go-restful/v3 v3.13.0 // indirect
	github.com/evanphx/json-patch/v5 v5.9.11 // indirect
	github.com/felixge/httpsnoop v1.0.4 // indirect
	github.com/fsnotify/fsnotify v1.9.0 // indirect
	github.com/fxamacker/cbor/v2 v2.9.0 // indirect
	github.com/go-errors/errors v1.5.1 // indirect
	github.com/go-logr/logr v1.4.3 // indirect
	github.com/go-logr/stdr v1.2.2 // indirect
	github.com/go-openapi/jsonpointer v0.21.0 // indirect
	github.com/go-openapi/jsonreference v0.21.0 // indirect
	github.com/go-openapi/swag v0.23.0 // indirect
	github.com/google/cel-go v0.26.0 // indirect
	github.com/google/gnostic-models v0.7.0 // indirect
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/grpc-ecosystem/grpc-gateway/v2 v2.27.7 // indirect
	github.com/huandu/xstrings v1.5.0 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/itchyny/gojq v0.12.19 // indirect
	github.com/itchyny/timefmt-go v0.1.8 // indirect
	github.com/josharian/intern v1.0.0 // indirect
	github.com/json-iterator/go v1.1.12 // indirect
	github.com/mailru/easyjson v0.7.7 // indirect
	github.com/mitchellh/copystructure v1.2.0 // indirect
	github.com/mitchellh/reflectwalk v1.0.2 // indirect
	github.com/moby/spdystream v0.5.1 // indirect
	github.com/modern-go/concurrent v0.0.0-20180306012644-bacd9c7ef1dd // indirect
	github.com/modern-go/reflect2 v1.0.3-0.20250322232337-35a7c28c31ee // indirect
	github.com/monochromegane/go-gitignore v0.0.0-20200626010858-205db1a8cc00 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/pmezard/go-difflib v1.0.1-0.20181226105442-5d4384ee4fb2 // indirect
	github.com/prometheus/client_golang v1.23.2 // indirect
	github.com/prometheus/client_model v0.6.2 // indirect
	github.com/prometheus/common v0.67.5 // indirect
	github.com/prometheus/procfs v0.19.2 // indirect
	github.com/shopspring/decimal v1.4.0 // indirect
	github.com/spf13/cast v1.7.0 // indirect
	github.com/spf13/cobra v1.10.2 // indirect
	github.com/spf13/pflag v1.0.10 // indirect
	github.com/stoewer/go-strcase v1.3.0 // indirect
	github.com/wzshiming/cmux v0.4.2 // indirect
	github.com/wzshiming/ctc v1.2.3 // indirect
	github.com/wzshiming/easycel v0.6.0 // indirect
	github.com/wzshiming/httpseek v0.6.1 // indirect
	github.com/wzshiming/trie v0.3.1 // indirect
	github.com/wzshiming/winseq v0.0.0-20200720163736-7fa652d2b50e // indirect
	github.com/x448/float16 v0.8.4 // indirect
	github.com/xlab/treeprint v1.2.0 // indirect
	go.opentelemetry.io/auto/sdk v1.2.1 // indirect
	go.opentelemetry.io/contrib/instrumentation/github.com/emicklei/go-restful/otelrestful v0.69.0 // indirect
	go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc v0.65.0 // indirect
	go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp v0.65.0 // indirect
	go.opentelemetry.io/otel v1.44.0 // indirect
	go.opentelemetry.io/otel/exporters/otlp/otlptrace v1.40.0 // indirect
	go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc v1.40.0 // indirect
	go.opentelemetry.io/otel/metric v1.44.0 // indirect
	go.opentelemetry.io/otel/sdk v1.44.0 // indirect
	go.opentelemetry.io/otel/trace v1.44.0 // indirect
	go.opentelemetry.io/proto/otlp v1.9.0 // indirect
	go.yaml.in/yaml/v2 v2.4.3 // indirect
	go.yaml.in/yaml/v3 v3.0.4 // indirect
	golang.org/x/crypto v0.48.0 // indirect
	golang.org/x/exp v0.0.0-20251219203646-944ab1f22d93 // indirect
	golang.org/x/net v0.51.0 // indirect
	golang.org/x/oauth2 v0.36.0 // indirect
	golang.org/x/sys v0.46.0 // indirect
	golang.org/x/term v0.44.0 // indirect
	golang.org/x/text v0.34.0 // indirect
	golang.org/x/time v0.14.0 // indirect
	google.golang.org/genproto/googleapis/api v0.0.0-20260226221140-a57be14db171 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260226221140-a57be14db171 // indirect
	google.golang.org/grpc v1.81.1 // indirect
	google.golang.org/protobuf v1.36.12-0.20260120151049-f2248ac996af // indirect
	gopkg.in/evanphx/json-patch.v4 v4.13.0 // indirect
	gopkg.in/inf.v0 v0.9.1 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
	k8s.io/api v0.36.1 // indirect
	k8s.io/apimachinery v0.36.1 // indirect
	k8s.io/apiserver v0.36.1 // indirect
	k8s.io/client-go v0.36.1 // indirect
	k8s.io/component-base v0.36.1 // indirect
	k8s.io/cri-api v0.36.1 // indirect
	k8s.io/cri-client v0.36.1 // indirect
	k8s.io/cri-streaming v0.36.1 // indirect
	k8s.io/klog/v2 v2.140.0 // indirect
	k8s.io/kube-openapi v0.0.0-20260317180543-43fb72c5454a // indirect
	k8s.io/streaming v0.36.1 // indirect
	k8s.io/utils v0.0.0-20260210185600-b8788abfbbc2 // indirect
	sigs.k8s.io/json v0.0.0-20250730193827-2d320260d730 // indirect
	sigs.k8s.io/kustomize/api v0.21.1 // indirect
	sigs.k8s.io/kustomize/kyaml v0.21.1 // indirect
	sigs.k8s.io/kwok v0.8.0 // indirect
	sigs.k8s.io/randfill v1.0.0 // indirect
	sigs.k8s.io/structured-merge-diff/v6 v6.3.2 // indirect
	sigs.k8s.io/yaml v1.6.0 // indirect
)

replace cel.dev/expr => cel.dev/expr v0.24.0

replace cloud.google.com/go/compute/metadata => cloud.google.com/go/compute/metadata v0.7.0

replace github.com/GoogleCloudPlatform/opentelemetry-operations-go/detectors/gcp => github.com/GoogleCloudPlatform/opentelemetry-operations-go/detectors/gcp v1.26.0

replace github.com/alecthomas/units => github.com/alecthomas/units v0.0.0-20211218093645-b94a6e3cc137

replace github.com/cncf/xds/go => github.com/cncf/xds/go v0.0.0-20250121191232-2f005788dc42

replace github.com/coreos/go-oidc => github.com/coreos/go-oidc v2.3.0+incompatible

replace github.com/coreos/go-systemd/v22 => github.com/coreos/go-systemd/v22 v22.5.0

replace github.com/cpuguy83/go-md2man/v2 => github.com/cpuguy83/go-md2man/v2 v2.0.6

replace github.com/creack/pty => github.com/creack/pty v1.1.18

replace github.com/davecgh/go-spew => github.com/davecgh/go-spew v1.1.1

replace github.com/emicklei/go-restful/v3 => github.com/emicklei/go-restful/v3 v3.12.2

replace github.com/envoyproxy/go-control-plane => github.com/envoyproxy/go-control-plane v0.13.4

replace github.com/envoyproxy/go-control-plane/envoy => github.com/envoyproxy/go-control-plane/envoy v1.32.4

replace github.com/envoyproxy/protoc-gen-validate => github.com/envoyproxy/protoc-gen-validate v1.2.1

replace github.com/go-errors/errors => github.com/go-errors/errors v1.4.2

replace github.com/go-jose/go-jose/v4 => github.com/go-jose/go-jose/v4 v4.0.4

replace github.com/go-openapi/jsonreference => github.com/go-openapi/jsonreference v0.20.2

replace github.com/golang-jwt/jwt/v5 => github.com/golang-jwt/jwt/v5 v5.2.2

replace github.com/golang/glog => github.com/golang/glog v1.2.4

replace github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus => github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus v1.0.1

replace github.com/grpc-ecosystem/go-grpc-middleware/v2 => github.com/grpc-ecosystem/go-grpc-middleware/v2 v2.3.0

replace github.com/grpc-ecosystem/grpc-gateway/v2 => github.com/grpc-ecosystem/grpc-gateway/v2 v2.26.3

replace github.com/klauspost/compress => github.com/klauspost/compress v1.18.0

replace github.com/pmezard/go-difflib => github.com/pmezard/go-difflib v1.0.0

replace github.com/prometheus/common => github.com/prometheus/common v0.66.1

replace github.com/prometheus/procfs => github.com/prometheus/procfs v0.16.1

replace github.com/sergi/go-diff => github.com/sergi/go-diff v1.2.0

replace github.com/spf13/cobra => github.com/spf13/cobra v1.10.0

replace github.com/spf13/pflag => github.com/spf13/pflag v1.0.9

replace github.com/spiffe/go-spiffe/v2 => github.com/spiffe/go-spiffe/v2 v2.5.0

replace go.etcd.io/etcd/api/v3 => go.etcd.io/etcd/api/v3 v3.6.5

replace go.etcd.io/etcd/client/pkg/v3 => go.etcd.io/etcd/client/pkg/v3 v3.6.5

replace go.etcd.io/etcd/client/v3 => go.etcd.io/etcd/client/v3 v3.6.5

replace go.etcd.io/etcd/pkg/v3 => go.etcd.io/etcd/pkg/v3 v3.6.5

replace go.etcd.io/etcd/server/v3 => go.etcd.io/etcd/server/v3 v3.6.5

replace go.opentelemetry.io/contrib/detectors/gcp => go.opentelemetry.io/contrib/detectors/gcp v1.34.0

replace go.opentelemetry.io/contrib/instrumentation/github.com/emicklei/go-restful/otelrestful => go.opentelemetry.io/contrib/instrumentation/github.com/emicklei/go-restful/otelrestful v0.44.0

replace go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc => go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc v0.60.0

replace go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp => go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp v0.61.0

replace go.opentelemetry.io/contrib/propagators/b3 => go.opentelemetry.io/contrib/propagators/b3 v1.19.0

replace go.opentelemetry.io/otel => go.opentelemetry.io/otel v1.41.0

replace go.opentelemetry.io/otel/exporters/otlp/otlptrace => go.opentelemetry.io/otel/exporters/otlp/otlptrace v1.34.0

replace go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc => go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc v1.34.0

replace go.opentelemetry.io/otel/metric => go.opentelemetry.io/otel/metric v1.41.0

replace go.opentelemetry.io/otel/sdk => go.opentelemetry.io/otel/sdk v1.36.0

replace go.opentelemetry.io/otel/sdk/metric => go.opentelemetry.io/otel/sdk/metric v1.36.0

replace go.opentelemetry.io/otel/trace => go.opentelemetry.io/otel/trace v1.41.0

replace go.opentelemetry.io/proto/otlp => go.opentelemetry.io/proto/otlp v1.5.0

replace go.uber.org/zap => go.uber.org/zap v1.27.0

replace golang.org/x/crypto => golang.org/x/crypto v0.45.0

replace golang.org/x/exp => golang.org/x/exp v0.0.0-20240719175910-8a7402abbf56

replace golang.org/x/mod => golang.org/x/mod v0.29.0

replace golang.org/x/net => golang.org/x/net v0.47.0

replace golang.org/x/oauth2 => golang.org/x/oauth2 v0.30.0

replace golang.org/x/sync => golang.org/x/sync v0.18.0

replace golang.org/x/sys => golang.org/x/sys v0.38.0

replace golang.org/x/term => golang.org/x/term v0.37.0

replace golang.org/x/text => golang.org/x/text v0.31.0

replace golang.org/x/time => golang.org/x/time v0.9.0

replace golang.org/x/tools => golang.org/x/tools v0.38.0

replace golang.org/x/tools/go/expect => golang.org/x/tools/go/expect v0.1.0-deprecated

replace google.golang.org/genproto/googleapis/api => google.golang.org/genproto/googleapis/api v0.0.0-20250303144028-a0af3efb3deb

replace google.golang.org/genproto/googleapis/rpc => google.golang.org/genproto/googleapis/rpc v0.0.0-20250528174236-200df99c418a

replace google.golang.org/grpc => google.golang.org/grpc v1.72.2

replace google.golang.org/protobuf => google.golang.org/protobuf v1.36.8

replace k8s.io/api => k8s.io/api v0.35.4

replace k8s.io/apimachinery => k8s.io/apimachinery v0.35.4

replace k8s.io/apiserver => k8s.io/apiserver v0.35.4

replace k8s.io/client-go => k8s.io/client-go v0.35.4

replace k8s.io/component-base => k8s.io/component-base v0.35.4

replace k8s.io/gengo/v2 => k8s.io/gengo/v2 v2.0.0-20250922181213-ec3ebc5fd46b

replace k8s.io/klog/v2 => k8s.io/klog/v2 v2.130.1

replace k8s.io/kms => k8s.io/kms v0.35.4

replace k8s.io/kube-openapi => k8s.io/kube-openapi v0.0.0-20250910181357-589584f1c912

replace k8s.io/utils => k8s.io/utils v0.0.0-20251002143259-bc988d571ff4

replace sigs.k8s.io/apiserver-network-proxy/konnectivity-client => sigs.k8s.io/apiserver-network-proxy/konnectivity-client v0.31.2

replace sigs.k8s.io/kustomize/api => sigs.k8s.io/kustomize/api v0.20.1

replace sigs.k8s.io/kustomize/kyaml => sigs.k8s.io/kustomize/kyaml v0.20.1

replace sigs.k8s.io/structured-merge-diff/v6 => sigs.k8s.io/structured-merge-diff/v6 v6.3.0
