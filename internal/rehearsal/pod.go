package rehearsal

import "github.com/etcd-backup-driver/etcd-backup-driver/internal/rehearse"

// rehearseReport is the rehearsal binary's report.
type rehearseReport = rehearse.Report

// parseReport reads a termination message strictly (rehearse.ParseReport).
func parseReport(s string) (rehearseReport, error) { return rehearse.ParseReport(s) }
