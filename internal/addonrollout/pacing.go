// A Pacer spaces an add-on's decisions by what they cost. A decision (what to install,
// where to roll) reads every ManagedClusterAddOn of the add-on; while thousands of them change (an
// install creating them, a batch applying, a health soak ending), every change asked for another
// decision at once, and one ran after another. At 5,000 clusters the rollout's decisions were a
// third of the controller's CPU and half of what it allocated, and the install reconciler's were a
// third of what it allocated during an install. With the wait before the next decision scaled to
// the last one's cost, an add-on's decisions take at most about a tenth of the time; at a few
// hundred clusters a decision takes milliseconds and the wait stays the floor given.

package addonrollout

import (
	"sync"
	"time"
)

// Share: one add-on's decisions take at most about 1/Share of the time while its MCAs change,
// since the next decision waits Share-1 times as long as the last one took.
const Share = 10

// MaxSpacing bounds the wait, so a change is decided on within it at any fleet size.
const MaxSpacing = 2 * time.Second

// Spacing is how long an event waits before it triggers an add-on's next decision, given the
// floor (a coalescing delay, or 0) and how long the add-on's last decision took.
func Spacing(floor, lastDecision time.Duration) time.Duration {
	return max(floor, min(lastDecision*(Share-1), MaxSpacing))
}

// Pacer remembers how long each add-on's last decision took, for one reconciler.
type Pacer struct {
	floor time.Duration
	took  sync.Map // add-on (CMA name) → time.Duration
}

// NewPacer returns a pacer whose waits are never below floor.
func NewPacer(floor time.Duration) *Pacer { return &Pacer{floor: floor} }

// Took records how long the add-on's last decision took.
func (p *Pacer) Took(addon string, d time.Duration) { p.took.Store(addon, d) }

// Wait is how long an event of the add-on waits before it triggers its next decision.
func (p *Pacer) Wait(addon string) time.Duration {
	took, _ := p.took.Load(addon)
	d, _ := took.(time.Duration)
	return Spacing(p.floor, d)
}

// Forget drops a deleted add-on.
func (p *Pacer) Forget(addon string) { p.took.Delete(addon) }
