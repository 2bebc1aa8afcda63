package rolloutplan

// EventSubject is what a placement's event is about: the placement, the version its decision
// rolls out (or rolls back to, or aborted), the kind of move and the placement's clusters.
type EventSubject struct {
	// Placement is the install placement, "namespace/name".
	Placement string
	// VersionID is the version the placement's desired configs make (history.VersionID), as
	// `addonops history` and the day-2 annotations name it.
	VersionID string
	// Kind is Install, Upgrade or Rollback.
	Kind string
	// Clusters are the clusters whose configs the placement decides, sorted.
	Clusters []string
}

// subject sets the subject of the events from index n on: the events placement p's evaluation
// recorded.
func (d *decider) subject(p *placementState, n int) {
	if n >= len(d.events) || len(p.desired) == 0 {
		return
	}
	s := &EventSubject{Placement: p.key.String(), VersionID: versionID(p.desired),
		Kind: kindName(d.placementKind(p, p.desired)), Clusters: p.owned}
	for i := n; i < len(d.events); i++ {
		if d.events[i].Subject == nil {
			d.events[i].Subject = s
		}
	}
}
