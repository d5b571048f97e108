// Module coredns pins CoreDNS for the end-to-end suite's production-shaped lane, where it is
// the cluster DNS that resolves the connection Secret's endpoint. main.go picks the plugins.
// Every module it shares with tools/kubernetes is replaced by the version tools/kubernetes
// builds with (test/packaging's TestToolsShareKubernetesPins): the same library code as the
// control plane. The Go build cache shares a compiled package only where this module also
// selects that version (its requirement): cmd/go keys a package by its module's selected
// version, not by a replacement's (docs/performance.md, building).
module github.com/example/function-memcached/tools/coredns

go 1.26

require github.com/coredns/coredns v1.12.4

require (
	github.com/apparentlymart/go-cidr v1.1.0 // indirect
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/coredns/caddy v1.1.2-0.20241029205200-8de985351a98 // indirect
	github.com/davecgh/go-spew v1.1.2-0.20180830191138-d8f796af33cc // indirect
	github.com/emicklei/go-restful/v3 v3.12.2 // indirect
	github.com/flynn/go-shlex v0.0.0-20150515145356-3f9db97f8568 // indirect
	github.com/fxamacker/cbor/v2 v2.9.0 // indirect
	github.com/go-logr/logr v1.4.3 // indirect
	github.com/go-openapi/jsonpointer v0.21.0 // indirect
	github.com/go-openapi/jsonreference v0.20.2 // indirect
	github.com/go-openapi/swag v0.23.0 // indirect
	github.com/golang/protobuf v1.5.4 // indirect
	github.com/google/gnostic-models v0.7.0 // indirect
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/grpc-ecosystem/grpc-opentracing v0.0.0-20180507213350-8e809c8a8645 // indirect
	github.com/josharian/intern v1.0.0 // indirect
	github.com/json-iterator/go v1.1.12 // indirect
	github.com/mailru/easyjson v0.7.7 // indirect
	github.com/matttproud/golang_protobuf_extensions v1.0.4 // indirect
	github.com/miekg/dns v1.1.68 // indirect
	github.com/modern-go/concurrent v0.0.0-20180306012644-bacd9c7ef1dd // indirect
	github.com/modern-go/reflect2 v1.0.3-0.20250322232337-35a7c28c31ee // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/opentracing/opentracing-go v1.2.0 // indirect
	github.com/pmezard/go-difflib v1.0.1-0.20181226105442-5d4384ee4fb2 // indirect
	github.com/prometheus/client_golang v1.23.0 // indirect
	github.com/prometheus/client_model v0.6.2 // indirect
	github.com/prometheus/common v0.66.1 // indirect
	github.com/prometheus/procfs v0.16.1 // indirect
	github.com/quic-go/quic-go v0.54.0 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
	github.com/x448/float16 v0.8.4 // indirect
	go.uber.org/automaxprocs v1.6.0 // indirect
	go.uber.org/mock v0.5.0 // indirect
	go.yaml.in/yaml/v2 v2.4.3 // indirect
	go.yaml.in/yaml/v3 v3.0.4 // indirect
	golang.org/x/crypto v0.44.0 // indirect
	golang.org/x/mod v0.29.0 // indirect
	golang.org/x/net v0.47.0 // indirect
	golang.org/x/oauth2 v0.30.0 // indirect
	golang.org/x/sync v0.18.0 // indirect
	golang.org/x/sys v0.38.0 // indirect
	golang.org/x/term v0.37.0 // indirect
	golang.org/x/text v0.31.0 // indirect
	golang.org/x/time v0.12.0 // indirect
	golang.org/x/tools v0.38.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20250818200422-3122310a409c // indirect
	google.golang.org/grpc v1.75.0 // indirect
	google.golang.org/protobuf v1.36.8 // indirect
	gopkg.in/evanphx/json-patch.v4 v4.13.0 // indirect
	gopkg.in/inf.v0 v0.9.1 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
	k8s.io/api v0.35.4 // indirect
	k8s.io/apimachinery v0.35.4 // indirect
	k8s.io/client-go v0.34.0 // indirect
	k8s.io/klog/v2 v2.130.1 // indirect
	k8s.io/kube-openapi v0.0.0-20250910181357-589584f1c912 // indirect
	k8s.io/utils v0.0.0-20251002143259-bc988d571ff4 // indirect
	sigs.k8s.io/json v0.0.0-20250730193827-2d320260d730 // indirect
	sigs.k8s.io/mcs-api v0.3.0 // indirect
	sigs.k8s.io/randfill v1.0.0 // indirect
	sigs.k8s.io/structured-merge-diff/v6 v6.3.0 // indirect
	sigs.k8s.io/yaml v1.6.0 // indirect
)

replace cloud.google.com/go/compute/metadata => cloud.google.com/go/compute/metadata v0.7.0

replace github.com/GoogleCloudPlatform/opentelemetry-operations-go/detectors/gcp => github.com/GoogleCloudPlatform/opentelemetry-operations-go/detectors/gcp v1.26.0

replace github.com/Masterminds/semver/v3 => github.com/Masterminds/semver/v3 v3.4.0

replace github.com/aws/aws-sdk-go-v2 => github.com/aws/aws-sdk-go-v2 v1.36.3

replace github.com/aws/aws-sdk-go-v2/config => github.com/aws/aws-sdk-go-v2/config v1.29.14

replace github.com/aws/aws-sdk-go-v2/credentials => github.com/aws/aws-sdk-go-v2/credentials v1.17.67

replace github.com/aws/aws-sdk-go-v2/feature/ec2/imds => github.com/aws/aws-sdk-go-v2/feature/ec2/imds v1.16.30

replace github.com/aws/aws-sdk-go-v2/internal/configsources => github.com/aws/aws-sdk-go-v2/internal/configsources v1.3.34

replace github.com/aws/aws-sdk-go-v2/internal/endpoints/v2 => github.com/aws/aws-sdk-go-v2/internal/endpoints/v2 v2.6.34

replace github.com/aws/aws-sdk-go-v2/service/internal/accept-encoding => github.com/aws/aws-sdk-go-v2/service/internal/accept-encoding v1.12.3

replace github.com/aws/aws-sdk-go-v2/service/internal/presigned-url => github.com/aws/aws-sdk-go-v2/service/internal/presigned-url v1.12.15

replace github.com/aws/aws-sdk-go-v2/service/sso => github.com/aws/aws-sdk-go-v2/service/sso v1.25.3

replace github.com/aws/aws-sdk-go-v2/service/ssooidc => github.com/aws/aws-sdk-go-v2/service/ssooidc v1.30.1

replace github.com/aws/aws-sdk-go-v2/service/sts => github.com/aws/aws-sdk-go-v2/service/sts v1.33.19

replace github.com/aws/smithy-go => github.com/aws/smithy-go v1.22.3

replace github.com/cncf/xds/go => github.com/cncf/xds/go v0.0.0-20250121191232-2f005788dc42

replace github.com/coredns/caddy => github.com/coredns/caddy v1.1.1

replace github.com/creack/pty => github.com/creack/pty v1.1.18

replace github.com/davecgh/go-spew => github.com/davecgh/go-spew v1.1.1

replace github.com/go-jose/go-jose/v4 => github.com/go-jose/go-jose/v4 v4.0.4

replace github.com/golang/glog => github.com/golang/glog v1.2.4

replace github.com/google/gofuzz => github.com/google/gofuzz v1.0.0

replace github.com/google/pprof => github.com/google/pprof v0.0.0-20250403155104-27863c87afa6

replace github.com/matttproud/golang_protobuf_extensions => github.com/matttproud/golang_protobuf_extensions v1.0.1

replace github.com/moby/spdystream => github.com/moby/spdystream v0.5.1

replace github.com/onsi/ginkgo/v2 => github.com/onsi/ginkgo/v2 v2.27.2

replace github.com/onsi/gomega => github.com/onsi/gomega v1.38.2

replace github.com/pmezard/go-difflib => github.com/pmezard/go-difflib v1.0.0

replace github.com/prometheus/client_golang => github.com/prometheus/client_golang v1.23.2

replace github.com/prometheus/common => github.com/prometheus/common v0.66.1

replace github.com/rogpeppe/go-internal => github.com/rogpeppe/go-internal v1.14.1

replace github.com/spf13/pflag => github.com/spf13/pflag v1.0.9

replace github.com/stretchr/testify => github.com/stretchr/testify v1.11.1

replace go.opentelemetry.io/auto/sdk => go.opentelemetry.io/auto/sdk v1.2.1

replace go.opentelemetry.io/contrib/detectors/gcp => go.opentelemetry.io/contrib/detectors/gcp v1.34.0

replace go.opentelemetry.io/otel => go.opentelemetry.io/otel v1.41.0

replace go.opentelemetry.io/otel/metric => go.opentelemetry.io/otel/metric v1.41.0

replace go.opentelemetry.io/otel/sdk => go.opentelemetry.io/otel/sdk v1.36.0

replace go.opentelemetry.io/otel/sdk/metric => go.opentelemetry.io/otel/sdk/metric v1.36.0

replace go.opentelemetry.io/otel/trace => go.opentelemetry.io/otel/trace v1.41.0

replace go.yaml.in/yaml/v2 => go.yaml.in/yaml/v2 v2.4.3

replace golang.org/x/crypto => golang.org/x/crypto v0.45.0

replace golang.org/x/exp => golang.org/x/exp v0.0.0-20240719175910-8a7402abbf56

replace golang.org/x/mod => golang.org/x/mod v0.29.0

replace golang.org/x/net => golang.org/x/net v0.47.0

replace golang.org/x/sync => golang.org/x/sync v0.18.0

replace golang.org/x/sys => golang.org/x/sys v0.38.0

replace golang.org/x/telemetry => golang.org/x/telemetry v0.0.0-20251008203120-078029d740a8

replace golang.org/x/term => golang.org/x/term v0.37.0

replace golang.org/x/text => golang.org/x/text v0.31.0

replace golang.org/x/time => golang.org/x/time v0.9.0

replace golang.org/x/tools => golang.org/x/tools v0.38.0

replace golang.org/x/xerrors => golang.org/x/xerrors v0.0.0-20200804184101-5ec99f83aff1

replace google.golang.org/genproto/googleapis/api => google.golang.org/genproto/googleapis/api v0.0.0-20250303144028-a0af3efb3deb

replace google.golang.org/genproto/googleapis/rpc => google.golang.org/genproto/googleapis/rpc v0.0.0-20250528174236-200df99c418a

replace google.golang.org/grpc => google.golang.org/grpc v1.72.2

replace gopkg.in/evanphx/json-patch.v4 => gopkg.in/evanphx/json-patch.v4 v4.13.0

replace k8s.io/api => k8s.io/api v0.35.4

replace k8s.io/apimachinery => k8s.io/apimachinery v0.35.4

replace k8s.io/client-go => k8s.io/client-go v0.35.4

replace k8s.io/gengo/v2 => k8s.io/gengo/v2 v2.0.0-20250922181213-ec3ebc5fd46b

replace k8s.io/kube-openapi => k8s.io/kube-openapi v0.0.0-20250910181357-589584f1c912

replace k8s.io/utils => k8s.io/utils v0.0.0-20251002143259-bc988d571ff4

replace sigs.k8s.io/json => sigs.k8s.io/json v0.0.0-20250730193827-2d320260d730
