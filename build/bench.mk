# Performance: in-process benchmarks and a load run next to the no-op floor.
#
#   make bench   go test -bench for RunFunction (in process) and a whole gRPC call; then
#                fnload at concurrency 1 and 8 with a realistic steady-state request (objects
#                read back from a real API server), with the compact fixture and with the
#                realistic one in an XR another pipeline step composes too, and with a
#                realistic steady-state request serving TLS; then a 200k-call run that samples resident
#                memory at 100k and 200k calls
#
# The servers are built as released (static, stripped), so resident memory compares what
# users run.

BENCH_DURATION ?= 20s
BENCH_CALLS ?= 200000
BENCH_REQUEST ?= fn/testdata/steady-state-realistic/request.yaml
BENCH_COMPACT_REQUEST ?= fn/testdata/steady-state-ready/request.yaml
BENCH_SHARED_REQUEST ?= fn/testdata/steady-state-shared/request.yaml
BENCH_TLS_REQUEST ?= fn/testdata/steady-state-realistic-tls/request.yaml

.PHONY: bench
bench: | $(BIN)
	$(GO) test -trimpath ./fn ./internal/load -run '^$$' -bench . -benchmem -count 5 | tee $(BIN)/bench.txt
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o $(BIN)/release/function-memcached ./cmd/function-memcached
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o $(BIN)/release/function-noop ./cmd/function-noop
	$(GO) build -trimpath -o $(BIN)/fnload ./cmd/fnload
	$(BIN)/fnload --function=$(BIN)/release/function-memcached --floor=$(BIN)/release/function-noop \
		--request=$(BENCH_REQUEST) --concurrency=1,8 --duration=$(BENCH_DURATION) 2>/dev/null | tee -a $(BIN)/bench.txt
	$(BIN)/fnload --function=$(BIN)/release/function-memcached --floor=$(BIN)/release/function-noop \
		--request=$(BENCH_COMPACT_REQUEST) --concurrency=1,8 --duration=$(BENCH_DURATION) 2>/dev/null | tee -a $(BIN)/bench.txt
	$(BIN)/fnload --function=$(BIN)/release/function-memcached --floor=$(BIN)/release/function-noop \
		--request=$(BENCH_SHARED_REQUEST) --concurrency=1,8 --duration=$(BENCH_DURATION) 2>/dev/null | tee -a $(BIN)/bench.txt
	$(BIN)/fnload --function=$(BIN)/release/function-memcached --floor=$(BIN)/release/function-noop \
		--request=$(BENCH_TLS_REQUEST) --concurrency=1,8 --duration=$(BENCH_DURATION) 2>/dev/null | tee -a $(BIN)/bench.txt
	$(BIN)/fnload --function=$(BIN)/release/function-memcached --floor=$(BIN)/release/function-noop \
		--request=$(BENCH_REQUEST) --concurrency=8 --calls=$(BENCH_CALLS) \
		--checkpoints=$$(( $(BENCH_CALLS) / 2 )),$(BENCH_CALLS) 2>/dev/null | tee -a $(BIN)/bench.txt

## fuzz: explore RunFunction, then sequences of calls for credentials, beyond their seeds
## (which run in make test), for FUZZTIME each. Go's fuzzer minimizes every input that finds
## new coverage, reporting 0 execs/sec meanwhile; FUZZMINIMIZETIME bounds each minimization.
FUZZTIME ?= 10m
FUZZMINIMIZETIME ?= 5s
.PHONY: fuzz
fuzz:
	$(GO) test -trimpath ./fn -run '^$$' -fuzz '^FuzzRunFunction$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME)
	$(GO) test -trimpath ./fn -run '^$$' -fuzz '^FuzzCredentialsSequence$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME)
