// Package monitoring tests what a platform team monitors Memcacheds with: the alerts
// render.PrometheusRule composes, run through Prometheus's own rule unit tests (promtool
// test rules), and the Grafana dashboard of example/monitoring, every query of which, like
// every alert's, is parsed with Prometheus's PromQL parser and must read only metrics the
// real exporter serves.
//
// It is a module of its own because Prometheus's module requires newer Kubernetes modules
// than the product's: in the product's go.mod it would move them. Its pin of Prometheus is
// also the one bin/promtool is built from, so the parser and promtool are one version.
package monitoring
