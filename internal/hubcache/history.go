package hubcache

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeinformers "k8s.io/client-go/informers"

	"github.com/addonops/addonops/internal/history"
)

// watchHistories caches the version history ConfigMaps in namespace: only those labelled as an
// add-on's history (history.AddonLabel), so the controller's namespace may hold anything else.
func (c *Cache) watchHistories(namespace string) {
	c.historyFactory = kubeinformers.NewSharedInformerFactoryWithOptions(c.Clients.Kube, c.opts.Resync,
		kubeinformers.WithNamespace(namespace), kubeinformers.WithTransform(stripManagedFields),
		kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = history.AddonLabel }))
	cms := c.historyFactory.Core().V1().ConfigMaps()
	c.HistoryInformer = cms.Informer()
	c.Histories = cms.Lister().ConfigMaps(namespace)
}
