package templatedeploy

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"
)

func TestPendingWrites(t *testing.T) {
	work := func(name, rv string) *workv1.ManifestWork {
		return &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: name, ResourceVersion: rv}}
	}
	const key = "c1/a"
	p := newPendingWrites()
	if p.behind(key, nil) {
		t.Fatal("nothing written: not behind")
	}

	// A create: behind until the cache shows the work.
	p.created(key, work("w0", "5"))
	if !p.behind(key, nil) {
		t.Fatal("created work not cached yet: behind")
	}
	if p.behind(key, []*workv1.ManifestWork{work("w0", "5")}) {
		t.Fatal("created work cached: not behind")
	}
	if p.behind(key, nil) {
		t.Fatal("a write the cache showed once is forgotten (caches only move forward)")
	}

	// An update: behind while the cache shows the version it replaced.
	p.updated(key, work("w0", "9"), "5")
	if !p.behind(key, []*workv1.ManifestWork{work("w0", "5")}) {
		t.Fatal("cache shows the replaced version: behind")
	}
	if p.behind(key, []*workv1.ManifestWork{work("w0", "12")}) {
		t.Fatal("cache shows a later version: not behind")
	}

	// A delete: behind while the cache shows the deleted version.
	p.deleted(key, work("w1", "7"))
	if !p.behind(key, []*workv1.ManifestWork{work("w0", "12"), work("w1", "7")}) {
		t.Fatal("cache still shows the deleted work: behind")
	}
	if p.behind(key, []*workv1.ManifestWork{work("w0", "12")}) {
		t.Fatal("deleted work gone from the cache: not behind")
	}

	// Per MCA, and forgotten with it.
	p.created("c2/a", work("w0", "1"))
	if p.behind(key, nil) {
		t.Fatal("another MCA's write counted")
	}
	p.forget("c2/a")
	if p.behind("c2/a", nil) {
		t.Fatal("forget kept the MCA's writes")
	}
}
