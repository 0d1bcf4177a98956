// Package pointreplay is the Job side of a restore to a point in time:
// the point a step is given (the chain's prefix, the base it follows and
// the target, as flags the driver writes from facts it signed), and the
// one way a step turns a verified base snapshot into the snapshot at that
// point (run.Replay): read the chain's index, fetch only the segments the target needs
// (changelog.Store.Fetch), replay them onto the base (changereplay.Replay).
//
// Every way the chain can be wrong (a segment corrupted, swapped, missing
// or of another chain, no index, a point outside the window, a replay that
// diverges) is a refusal with a reason naming it (Refusal): retrying
// cannot change what is in S3, and a restore must end before anything is
// destroyed. A failure of the Pod's own disk (OnDisk) may be retried.
// The staging step and the rehearsal step both use it.
//
// This package holds what the driver needs too (the point's flags, the
// refusals' reasons) and links no etcd server; the replay itself, which
// does, is in ./run, imported only by etcd-stage (and its tests).
// TestTheDriverLinksNoEtcdServer keeps it so.
package pointreplay
