package templatedeploy

import (
	"sync"

	workv1 "open-cluster-management.io/api/work/v1"
)

// pendingWrites remembers the work writes of this reconciler that the informer cache may not show
// yet, per MCA.
//
// A plan built on a cache that misses a work just written would move manifests between works
// (and a manifest stays where it was first put) or write a work twice. Reading the MCA's works
// from the API server before every write is safe but costs a LIST per cluster and version: 5,000
// LISTs per rollout step at 5,000 clusters. Instead the reconciler records each write and reads
// live only while the cache has not caught up with one of them, which is rare: the next sync of
// an MCA usually comes from the very watch event that shows the write. A cache only moves forward,
// so an entry it has caught up with is dropped and never needed again.
type pendingWrites struct {
	mu    sync.Mutex
	byMCA map[string]map[string]pendingWrite // MCA key → work name
}

// pendingWrite is one write: the resourceVersion it replaced ("" for a create) and whether it was
// a delete.
type pendingWrite struct {
	replaced string
	deleted  bool
}

func newPendingWrites() *pendingWrites {
	return &pendingWrites{byMCA: map[string]map[string]pendingWrite{}}
}

func (p *pendingWrites) record(mcaKey, work string, w pendingWrite) {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := p.byMCA[mcaKey]
	if m == nil {
		m = map[string]pendingWrite{}
		p.byMCA[mcaKey] = m
	}
	m[work] = w
}

// created, updated and deleted record writes the API server accepted; replaced is the
// resourceVersion the write was made against.
func (p *pendingWrites) created(mcaKey string, w *workv1.ManifestWork) {
	p.record(mcaKey, w.Name, pendingWrite{})
}

func (p *pendingWrites) updated(mcaKey string, w *workv1.ManifestWork, replaced string) {
	p.record(mcaKey, w.Name, pendingWrite{replaced: replaced})
}

func (p *pendingWrites) deleted(mcaKey string, w *workv1.ManifestWork) {
	p.record(mcaKey, w.Name, pendingWrite{replaced: w.ResourceVersion, deleted: true})
}

// behind reports whether cached, the MCA's works as the cache holds them, misses one of the
// reconciler's writes; it forgets the writes the cache shows.
func (p *pendingWrites) behind(mcaKey string, cached []*workv1.ManifestWork) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := p.byMCA[mcaKey]
	if len(m) == 0 {
		return false
	}
	byName := make(map[string]*workv1.ManifestWork, len(cached))
	for _, w := range cached {
		byName[w.Name] = w
	}
	for name, pw := range m {
		c, ok := byName[name]
		var caughtUp bool
		switch {
		case pw.deleted:
			caughtUp = !ok || c.ResourceVersion != pw.replaced
		case pw.replaced == "":
			caughtUp = ok
		default:
			caughtUp = ok && c.ResourceVersion != pw.replaced
		}
		if caughtUp {
			delete(m, name)
		}
	}
	if len(m) == 0 {
		delete(p.byMCA, mcaKey)
		return false
	}
	return true
}

// forget drops what is recorded for an MCA (it is gone).
func (p *pendingWrites) forget(mcaKey string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.byMCA, mcaKey)
}
