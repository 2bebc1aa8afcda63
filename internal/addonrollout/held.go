package addonrollout

import (
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/rolloutplan"
)

// Held keeps the interim conditions the progress reconciler computed for an MCA and has not
// written (rolloutplan.Interim): the health it probed (Available, under --deploy-templates) and the
// health soak (HealthSoak). Every decision reads MCAs with them (View.AddonMCAs, WithHeld), so the
// rollout fails an add-on that stays unhealthy, and the next write of the MCA, whoever makes it,
// carries them. They belong to one attempt (rolloutplan.Attempt): once the MCA is under way with
// another, they are dropped, and a restarted controller starts without any (it computes them
// again; a health soak starts again).
type Held struct {
	mu sync.Mutex
	m  map[string]HeldStatus
}

// HeldStatus is what is held for one MCA.
type HeldStatus struct {
	// Attempt is rolloutplan.Attempt of the written MCA they were computed on.
	Attempt string
	// Conditions replace the written ones of the same types.
	Conditions []metav1.Condition
	// Since is when the written status first fell behind (the hold runs from there).
	Since time.Time
}

func NewHeld() *Held { return &Held{m: map[string]HeldStatus{}} }

// Get returns what is held for key for the attempt mca is under way with.
func (h *Held) Get(key string, mca *addonv1alpha1.ManagedClusterAddOn) (HeldStatus, bool) {
	h.mu.Lock()
	s, ok := h.m[key]
	h.mu.Unlock()
	if !ok || s.Attempt != rolloutplan.Attempt(mca) {
		return HeldStatus{}, false
	}
	return s, true
}

// Set records what is held for key.
func (h *Held) Set(key string, s HeldStatus) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.m[key] = s
}

// Forget drops what is held for key (written, or the MCA is gone).
func (h *Held) Forget(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.m, key)
}

// Apply returns mca with the conditions held for it, or mca itself when none are held or they
// belong to another attempt. The copy shares everything but its condition list: readers never
// change what they read.
func (h *Held) Apply(key string, mca *addonv1alpha1.ManagedClusterAddOn) *addonv1alpha1.ManagedClusterAddOn {
	s, ok := h.Get(key, mca)
	if !ok {
		return mca
	}
	out := *mca
	out.Status.Conditions = slices.Clone(mca.Status.Conditions)
	for _, c := range s.Conditions {
		if i := slices.IndexFunc(out.Status.Conditions, func(o metav1.Condition) bool { return o.Type == c.Type }); i >= 0 {
			out.Status.Conditions[i] = c
		} else {
			out.Status.Conditions = append(out.Status.Conditions, c)
		}
	}
	return &out
}
