# Monitoring: the alerts render.PrometheusRule composes and the dashboard of example/monitoring,
# tested by test/monitoring (its own Go module, whose Prometheus pin bin/promtool is built from,
# so the PromQL parser the tests use and promtool are one version). Included from the
# top-level Makefile; `make test` runs monitoring-test.
#
#   make monitoring-test   promtool test rules on the alerts, every alert and dashboard query
#                          parsed and checked against the real exporter's metrics

# Read from test/monitoring/go.mod when the message needs it: one pin, in one place.
PROMETHEUS_VERSION = $(shell $(GO) -C test/monitoring list -m -f '{{.Version}}' github.com/prometheus/prometheus)

# promtool without Prometheus's service discovery plugins (remove_all_sd), which it does not
# need to test rules: they are most of its build.
$(BIN)/promtool: test/monitoring/go.mod test/monitoring/go.sum | $(BIN)
	@echo "building promtool (Prometheus $(PROMETHEUS_VERSION); first time only; how long: docs/performance.md)"
	$(GO) -C test/monitoring build -trimpath -tags remove_all_sd -ldflags "-s -w" -o $@ \
		github.com/prometheus/prometheus/cmd/promtool

## monitoring-test: the alerts and the dashboard against promtool and the real exporter.
# The tests run with -vet=off after the full vet, as make test's (Makefile).
.PHONY: monitoring-test
monitoring-test: $(BIN)/promtool $(BIN)/memcached_exporter $(BIN)/memcached
	$(GO) -C test/monitoring vet -trimpath ./...
	PROMTOOL=$(BIN)/promtool MEMCACHED_EXPORTER=$(BIN)/memcached_exporter MEMCACHED_BIN=$(MEMCACHED_BIN) $(GO) -C test/monitoring test -trimpath -count=1 -vet=off ./...
