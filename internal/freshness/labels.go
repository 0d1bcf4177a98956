package freshness

import (
	"slices"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Label values come from what tenants write (a Backup's or Plan's
// applicationRef, a Plan's name), so they are bounded before they become
// series: a tenant must not be able to create series without end, or
// series with megabyte-long labels.
const (
	// MaxSeriesPerNamespace bounds the applications (and Plans) one
	// namespace gets series for. A Cozystack tenant has one Etcd.
	MaxSeriesPerNamespace = 16
	// OtherApplication is the application label of the Backups whose
	// application name is not a DNS-1123 label (at most 63 characters),
	// or that are past MaxSeriesPerNamespace in their namespace. It is no
	// valid name, so no application is ever mistaken for it.
	OtherApplication = "_other"
)

// applicationLabel is name when it is a valid application name, else
// OtherApplication.
func applicationLabel(name string) string {
	if len(validation.IsDNS1123Label(name)) != 0 {
		return OtherApplication
	}
	return name
}

// foldApplications keeps at most MaxSeriesPerNamespace applications per
// namespace (OtherApplication among them), folding the rest, by name
// order, into OtherApplication.
func foldApplications(apps map[appKey]appStats) {
	names := map[string][]string{}
	for k := range apps {
		names[k.namespace] = append(names[k.namespace], k.application)
	}
	for ns, apps0 := range names {
		if len(apps0) <= MaxSeriesPerNamespace {
			continue
		}
		slices.Sort(apps0)
		other := appKey{ns, OtherApplication}
		kept := 0
		for _, app := range apps0 {
			if app == OtherApplication {
				continue
			}
			if kept < MaxSeriesPerNamespace-1 {
				kept++
				continue
			}
			k := appKey{ns, app}
			apps[other] = merge(apps[other], apps[k])
			delete(apps, k)
		}
	}
}

func merge(a, b appStats) appStats {
	if b.newest.After(a.newest) {
		a.newest, a.size = b.newest, b.size
	}
	a.verified += b.verified
	a.unverified += b.unverified
	a.held += b.held
	return a
}
