package step

// ReadStaged is readStaged, for the external tests of this package
// (point_test.go, which links the replay).
var ReadStaged = readStaged
