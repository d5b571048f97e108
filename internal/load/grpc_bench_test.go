package load

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"

	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/example/function-memcached/fn"
	"github.com/example/function-memcached/internal/noop"
	"github.com/example/function-memcached/internal/server"
)

// BenchmarkGRPC measures a whole call in one process, client and server over loopback
// gRPC, for function-memcached and the no-op floor: what a call costs once protobuf encoding
// and HTTP/2 are counted, which the in-process fn benchmarks leave out.
func BenchmarkGRPC(b *testing.B) {
	for _, fixture := range []string{"steady-state-ready", "steady-state-realistic", "tls-steady"} {
		y, err := os.ReadFile(filepath.Join("..", "..", "fn", "testdata", fixture, "request.yaml"))
		if err != nil {
			b.Fatal(err)
		}
		j, err := yaml.YAMLToJSON(y)
		if err != nil {
			b.Fatal(err)
		}
		req := &fnv1.RunFunctionRequest{}
		if err := protojson.Unmarshal(j, req); err != nil {
			b.Fatal(err)
		}
		for name, f := range map[string]fnv1.FunctionRunnerServiceServer{"noop": noop.Function{}, "memcached": fn.New(logging.NewNopLogger())} {
			b.Run(fixture+"/"+name, func(b *testing.B) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				addrs := make(chan string, 1)
				go func() {
					_ = server.Serve(ctx, f, server.Options{Network: "tcp", Address: "127.0.0.1:0", Insecure: true, MaxRecvMessageSize: 4 << 20, GracePeriod: time.Second,
						Listening: func(a net.Addr) { addrs <- a.String() }})
				}()
				conn, err := grpc.NewClient(<-addrs, grpc.WithTransportCredentials(insecure.NewCredentials()))
				if err != nil {
					b.Fatal(err)
				}
				defer conn.Close() //nolint:errcheck // Test client.
				c := fnv1.NewFunctionRunnerServiceClient(conn)
				b.ReportAllocs()
				for b.Loop() {
					if _, err := c.RunFunction(ctx, req); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
