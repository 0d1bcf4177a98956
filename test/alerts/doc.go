// Package alerts checks the driver chart's PrometheusRule and Grafana
// dashboard against the driver's real metrics: it runs the manager on a
// real API server, makes applications fresh, stale, missing, unverified and
// failing, scrapes /metrics as Prometheus would, loads the scrapes into a
// Prometheus TSDB and evaluates the rendered alerting rules with
// Prometheus's own rule engine.
//
// It is a module of its own so that the Prometheus server's dependencies
// stay out of the driver's module; `make test` runs it.
package alerts
