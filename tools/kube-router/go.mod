// Module kube-router pins kube-router, whose network policy controller (iptables and ipset,
// no NFQUEUE) the node lane of the end-to-end suite runs to enforce the NetworkPolicy the
// function renders. v2.1.0 is the only version the module proxy serves; it is a loopback-only
// test tool and never shipped.
// Every module it shares with tools/kubernetes is replaced by the version tools/kubernetes
// builds with (test/packaging's TestToolsShareKubernetesPins): the same library code as the
// control plane. The Go build cache shares a compiled package only where this module also
// selects that version (its requirement): cmd/go keys a package by its module's selected
// version, not by a replacement's (docs/performance.md, building).
module github.com/example/function-memcached/tools/kube-router

go 1.26.0

tool github.com/cloudnativelabs/kube-router/v2/cmd/kube-router

require (
	github.com/Azure/go-ansiterm v0.0.0-20261006220739-8c912ac31dd4 // indirect
	github.com/Microsoft/go-winio v0.6.1 // indirect
	github.com/aws/aws-sdk-go v1.50.30 // indirect
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cenkalti/backoff/v4 v4.3.0 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/cloudnativelabs/kube-router/v2 v2.1.0 // indirect
	github.com/containerd/errdefs v1.0.0 // indirect
	github.com/containerd/errdefs/pkg v0.3.0 // indirect
	github.com/coreos/go-iptables v0.7.0 // indirect
	github.com/davecgh/go-spew v1.1.2-0.20180830191138-d8f796af33cc // indirect
	github.com/dgryski/go-farm v0.0.0-20200201041132-a6ae2369ad13 // indirect
	github.com/distribution/reference v0.5.0 // indirect
	github.com/docker/docker v25.0.3+incompatible // indirect
	github.com/docker/go-connections v0.5.0 // indirect
	github.com/docker/go-units v0.5.0 // indirect
	github.com/eapache/channels v1.1.0 // indirect
	github.com/eapache/queue v1.1.0 // indirect
	github.com/emicklei/go-restful/v3 v3.12.2 // indirect
	github.com/felixge/httpsnoop v1.0.4 // indirect
	github.com/fsnotify/fsnotify v1.7.0 // indirect
	github.com/fxamacker/cbor/v2 v2.9.0 // indirect
	github.com/go-logr/logr v1.4.4 // indirect
	github.com/go-logr/stdr v1.2.2 // indirect
	github.com/go-openapi/jsonpointer v0.21.0 // indirect
	github.com/go-openapi/jsonreference v0.20.4 // indirect
	github.com/go-openapi/swag v0.23.0 // indirect
	github.com/gogo/protobuf v1.3.2 // indirect
	github.com/google/gnostic-models v0.7.0 // indirect
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/hashicorp/go-version v1.6.0 // indirect
	github.com/hashicorp/hcl v1.0.0 // indirect
	github.com/jmespath/go-jmespath v0.4.0 // indirect
	github.com/josharian/intern v1.0.0 // indirect
	github.com/json-iterator/go v1.1.12 // indirect
	github.com/k-sone/critbitgo v1.4.0 // indirect
	github.com/magiconair/properties v1.8.7 // indirect
	github.com/mailru/easyjson v0.7.7 // indirect
	github.com/mitchellh/mapstructure v1.5.0 // indirect
	github.com/moby/docker-image-spec v1.3.1 // indirect
	github.com/moby/ipvs v1.1.0 // indirect
	github.com/moby/sys/atomicwriter v0.1.0 // indirect
	github.com/modern-go/concurrent v0.0.0-20180306012644-bacd9c7ef1dd // indirect
	github.com/modern-go/reflect2 v1.0.3-0.20250322232337-35a7c28c31ee // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/opencontainers/go-digest v1.0.0 // indirect
	github.com/opencontainers/image-spec v1.1.0 // indirect
	github.com/osrg/gobgp/v3 v3.23.0 // indirect
	github.com/pelletier/go-toml/v2 v2.1.1 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	github.com/pmezard/go-difflib v1.0.1-0.20181226105442-5d4384ee4fb2 // indirect
	github.com/prometheus/client_golang v1.20.4 // indirect
	github.com/prometheus/client_model v0.6.2 // indirect
	github.com/prometheus/common v0.66.1 // indirect
	github.com/prometheus/procfs v0.16.1 // indirect
	github.com/sagikazarmark/locafero v0.4.0 // indirect
	github.com/sagikazarmark/slog-shim v0.1.0 // indirect
	github.com/sirupsen/logrus v1.9.3 // indirect
	github.com/sourcegraph/conc v0.3.0 // indirect
	github.com/spf13/afero v1.11.0 // indirect
	github.com/spf13/cast v1.6.0 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
	github.com/spf13/viper v1.18.2 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
	github.com/subosito/gotenv v1.6.0 // indirect
	github.com/vishvananda/netlink v1.2.1-beta.2 // indirect
	github.com/vishvananda/netns v0.0.5 // indirect
	github.com/x448/float16 v0.8.4 // indirect
	go.opentelemetry.io/auto/sdk v1.2.1 // indirect
	go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp v0.49.0 // indirect
	go.opentelemetry.io/otel v1.47.0 // indirect
	go.opentelemetry.io/otel/exporters/otlp/otlptrace v1.47.0 // indirect
	go.opentelemetry.io/otel/metric v1.47.0 // indirect
	go.opentelemetry.io/otel/sdk v1.47.0 // indirect
	go.opentelemetry.io/otel/trace v1.47.0 // indirect
	go.opentelemetry.io/proto/otlp v1.11.1 // indirect
	go.uber.org/multierr v1.11.0 // indirect
	go.yaml.in/yaml/v2 v2.4.3 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/exp v0.0.0-20240222234643-814bf88cf225 // indirect
	golang.org/x/net v0.59.0 // indirect
	golang.org/x/oauth2 v0.30.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/term v0.37.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	golang.org/x/time v0.9.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260928230214-8a89bd6388cc // indirect
	google.golang.org/grpc v1.84.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
	gopkg.in/evanphx/json-patch.v4 v4.13.0 // indirect
	gopkg.in/inf.v0 v0.9.1 // indirect
	gopkg.in/ini.v1 v1.67.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
	k8s.io/api v0.35.4 // indirect
	k8s.io/apimachinery v0.35.4 // indirect
	k8s.io/client-go v0.29.2 // indirect
	k8s.io/cri-api v0.29.2 // indirect
	k8s.io/klog/v2 v2.130.1 // indirect
	k8s.io/kube-openapi v0.0.0-20250910181357-589584f1c912 // indirect
	k8s.io/utils v0.0.0-20251002143259-bc988d571ff4 // indirect
	sigs.k8s.io/json v0.0.0-20250730193827-2d320260d730 // indirect
	sigs.k8s.io/randfill v1.0.0 // indirect
	sigs.k8s.io/structured-merge-diff/v6 v6.3.0 // indirect
	sigs.k8s.io/yaml v1.6.0 // indirect
)

replace cloud.google.com/go/compute/metadata => cloud.google.com/go/compute/metadata v0.7.0

replace github.com/Microsoft/go-winio => github.com/Microsoft/go-winio v0.6.2

replace github.com/NYTimes/gziphandler => github.com/NYTimes/gziphandler v1.1.1

replace github.com/cespare/xxhash/v2 => github.com/cespare/xxhash/v2 v2.3.0

replace github.com/cncf/xds/go => github.com/cncf/xds/go v0.0.0-20250121191232-2f005788dc42

replace github.com/coreos/go-semver => github.com/coreos/go-semver v0.3.1

replace github.com/davecgh/go-spew => github.com/davecgh/go-spew v1.1.1

replace github.com/distribution/reference => github.com/distribution/reference v0.6.0

replace github.com/docker/docker => github.com/docker/docker v28.2.2+incompatible

replace github.com/emicklei/go-restful/v3 => github.com/emicklei/go-restful/v3 v3.12.2

replace github.com/envoyproxy/go-control-plane => github.com/envoyproxy/go-control-plane v0.13.4

replace github.com/envoyproxy/protoc-gen-validate => github.com/envoyproxy/protoc-gen-validate v1.2.1

replace github.com/fsnotify/fsnotify => github.com/fsnotify/fsnotify v1.9.0

replace github.com/go-logr/logr => github.com/go-logr/logr v1.4.3

replace github.com/go-openapi/jsonpointer => github.com/go-openapi/jsonpointer v0.21.0

replace github.com/go-openapi/jsonreference => github.com/go-openapi/jsonreference v0.20.2

replace github.com/go-openapi/swag => github.com/go-openapi/swag v0.23.0

replace github.com/golang/glog => github.com/golang/glog v1.2.4

replace github.com/golang/protobuf => github.com/golang/protobuf v1.5.4

replace github.com/google/btree => github.com/google/btree v1.1.3

replace github.com/google/gnostic-models => github.com/google/gnostic-models v0.7.0

replace github.com/google/go-cmp => github.com/google/go-cmp v0.7.0

replace github.com/google/gofuzz => github.com/google/gofuzz v1.0.0

replace github.com/google/pprof => github.com/google/pprof v0.0.0-20250403155104-27863c87afa6

replace github.com/gorilla/websocket => github.com/gorilla/websocket v1.5.4-0.20250319132907-e064f32e3674

replace github.com/gregjones/httpcache => github.com/gregjones/httpcache v0.0.0-20190611155906-901d90724c79

replace github.com/klauspost/compress => github.com/klauspost/compress v1.18.0

replace github.com/matttproud/golang_protobuf_extensions => github.com/matttproud/golang_protobuf_extensions v1.0.1

replace github.com/moby/spdystream => github.com/moby/spdystream v0.5.1

replace github.com/moby/term => github.com/moby/term v0.5.0

replace github.com/modern-go/reflect2 => github.com/modern-go/reflect2 v1.0.3-0.20250322232337-35a7c28c31ee

replace github.com/onsi/ginkgo/v2 => github.com/onsi/ginkgo/v2 v2.27.2

replace github.com/onsi/gomega => github.com/onsi/gomega v1.38.2

replace github.com/opencontainers/image-spec => github.com/opencontainers/image-spec v1.1.1

replace github.com/pmezard/go-difflib => github.com/pmezard/go-difflib v1.0.0

replace github.com/prometheus/client_golang => github.com/prometheus/client_golang v1.23.2

replace github.com/prometheus/client_model => github.com/prometheus/client_model v0.6.2

replace github.com/prometheus/common => github.com/prometheus/common v0.66.1

replace github.com/prometheus/procfs => github.com/prometheus/procfs v0.16.1

replace github.com/rogpeppe/go-internal => github.com/rogpeppe/go-internal v1.14.1

replace github.com/spf13/cobra => github.com/spf13/cobra v1.10.0

replace github.com/spf13/pflag => github.com/spf13/pflag v1.0.9

replace github.com/stretchr/objx => github.com/stretchr/objx v0.5.2

replace github.com/stretchr/testify => github.com/stretchr/testify v1.11.1

replace github.com/vishvananda/netlink => github.com/vishvananda/netlink v1.3.1

replace github.com/vishvananda/netns => github.com/vishvananda/netns v0.0.5

replace go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp => go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp v0.61.0

replace go.opentelemetry.io/otel => go.opentelemetry.io/otel v1.41.0

replace go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp => go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp v1.27.0

replace go.opentelemetry.io/otel/metric => go.opentelemetry.io/otel/metric v1.41.0

replace go.opentelemetry.io/otel/sdk => go.opentelemetry.io/otel/sdk v1.36.0

replace go.opentelemetry.io/otel/trace => go.opentelemetry.io/otel/trace v1.41.0

replace go.uber.org/zap => go.uber.org/zap v1.27.0

replace golang.org/x/crypto => golang.org/x/crypto v0.45.0

replace golang.org/x/exp => golang.org/x/exp v0.0.0-20240719175910-8a7402abbf56

replace golang.org/x/mod => golang.org/x/mod v0.29.0

replace golang.org/x/net => golang.org/x/net v0.47.0

replace golang.org/x/oauth2 => golang.org/x/oauth2 v0.30.0

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

replace google.golang.org/protobuf => google.golang.org/protobuf v1.36.8

replace gotest.tools/v3 => gotest.tools/v3 v3.0.2

replace k8s.io/api => k8s.io/api v0.35.4

replace k8s.io/apimachinery => k8s.io/apimachinery v0.35.4

replace k8s.io/client-go => k8s.io/client-go v0.35.4

replace k8s.io/cri-api => k8s.io/cri-api v0.35.4

replace k8s.io/gengo/v2 => k8s.io/gengo/v2 v2.0.0-20250922181213-ec3ebc5fd46b

replace k8s.io/klog/v2 => k8s.io/klog/v2 v2.130.1

replace k8s.io/kube-openapi => k8s.io/kube-openapi v0.0.0-20250910181357-589584f1c912

replace k8s.io/utils => k8s.io/utils v0.0.0-20251002143259-bc988d571ff4

replace sigs.k8s.io/json => sigs.k8s.io/json v0.0.0-20250730193827-2d320260d730

replace sigs.k8s.io/yaml => sigs.k8s.io/yaml v1.6.0

replace github.com/Azure/go-ansiterm => github.com/Azure/go-ansiterm v0.0.0-20230124172434-306776ec8161

replace go.opentelemetry.io/otel/exporters/otlp/otlptrace => go.opentelemetry.io/otel/exporters/otlp/otlptrace v1.34.0

replace go.opentelemetry.io/proto/otlp => go.opentelemetry.io/proto/otlp v1.5.0

replace go.yaml.in/yaml/v3 => go.yaml.in/yaml/v3 v3.0.4
