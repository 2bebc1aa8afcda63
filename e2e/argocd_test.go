package e2e

import (
	"fmt"
)

// appSnap is what the test follows of the Application: each distinct state, with when the test
// saw it.
type appSnap struct {
	Revision, Sync, Health string // status.sync.revision and status, status.health.status
	CMA                    string // the ClusterManagementAddOn's health in status.resources
	OpPhase, OpRevision    string // status.operationState: the last sync's phase and revision
	OpStarted              string
}

func (a appSnap) String() string {
	return fmt.Sprintf("revision %.7s %s health %s (CMA %s), last sync %s of %.7s", a.Revision, a.Sync, a.Health, orDash(a.CMA), orDash(a.OpPhase), a.OpRevision)
}

// noSnap lets record drive a watch whose snapshots the test keeps elsewhere.
type noSnap struct{}

func (noSnap) Key() string { return "" }
