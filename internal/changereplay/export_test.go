package changereplay

// The fixtures of this package's own tests, for its external tests
// (capture_fixtures_test.go says why those are external).
var (
	StartEtcd         = startEtcd
	TakeBase          = takeBase
	RestoreAsOperator = restoreAsOperator
	RevisionOf        = revisionOf
)
