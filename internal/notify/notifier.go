package notify

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/argoproj/notifications-engine/pkg/api"
	"github.com/argoproj/notifications-engine/pkg/services"
	"github.com/argoproj/notifications-engine/pkg/subscriptions"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/addonops/addonops/internal/addonstatus"
)

const (
	// ConfigMapName is the ConfigMap of services, templates, triggers and default subscriptions
	// (notifications-engine's format), in the controller's namespace.
	ConfigMapName = "addonops-notifications-cm"
	// SecretName is the Secret whose keys the ConfigMap's services reference as $key.
	SecretName = "addonops-notifications-secret"
	// EventReasonNotificationFailed is the Warning event on a CMA whose notification was not
	// delivered: the service failed or timed out, the queue was full, or the configuration does
	// not parse.
	EventReasonNotificationFailed = addonstatus.ReasonNotificationFailed
)

// Results of a send, the metric's result label.
const (
	ResultSent        = "sent"
	ResultFailed      = "failed"
	ResultTimeout     = "timeout"
	ResultDropped     = "dropped"
	ResultConfigError = "config-error"
)

var notifications = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "addonops_notifications_total",
	Help: "Notifications of rollout moments by trigger, service and result: sent, failed (the service returned an error), timeout (no answer within the send timeout), dropped (the send queue was full), config-error (the notifications ConfigMap or Secret does not parse).",
}, []string{"trigger", "service", "result"})

func init() {
	crmetrics.Registry.MustRegister(notifications)
}

// Options configure a Notifier. Zero values get defaults.
type Options struct {
	// Namespace holds the ConfigMap and the Secret: the controller's namespace.
	Namespace string
	// SendTimeout bounds one send to one destination. Default 30s.
	SendTimeout time.Duration
	// QueueSize bounds the moments waiting to be sent; a moment beyond it is dropped (counted,
	// and a Warning event). Default 256.
	QueueSize int
	// Workers send in parallel. Default 2.
	Workers int
	// MaxInFlight bounds the sends under way, those given up on after SendTimeout included: a
	// service that never answers holds a goroutine each (the library's senders take no context).
	// Default 16.
	MaxInFlight int
}

// Notifier sends the moments of the add-ons' rollouts.
type Notifier struct {
	opts     Options
	recorder record.EventRecorder
	cms      cache.SharedIndexInformer
	secrets  cache.SharedIndexInformer
	factory  api.Factory
	queue    chan job
	inFlight chan struct{}

	mu sync.Mutex
	// sent are the keys of the moments queued by this process (Moment.Key): the version history
	// records them too, but its write may fail or lag.
	sent map[string]bool
	// configErr is the configuration error last logged, logged again only when it changes.
	configErr string
}

type job struct {
	cma    *addonv1alpha1.ClusterManagementAddOn
	moment Moment
}

// New returns a Notifier reading its configuration from namespace opts.Namespace through kube,
// recording its failures with recorder. Run starts it.
func New(kube kubernetes.Interface, recorder record.EventRecorder, opts Options) (*Notifier, error) {
	if opts.Namespace == "" {
		return nil, errors.New("notifications: no namespace for the ConfigMap " + ConfigMapName + " and the Secret " + SecretName)
	}
	routeLibraryLogs()
	if opts.SendTimeout <= 0 {
		opts.SendTimeout = 30 * time.Second
	}
	if opts.QueueSize <= 0 {
		opts.QueueSize = 256
	}
	if opts.Workers <= 0 {
		opts.Workers = 2
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = 16
	}
	// One object each, by name: the controller may read these two and no other Secret
	// (config/rbac/notifications_role.yaml grants get, list and watch on their names only, which
	// the API server allows for a list or watch with this field selector).
	byName := func(name string) informers.SharedInformerOption {
		return informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
		})
	}
	cms := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(opts.Namespace), byName(ConfigMapName)).Core().V1().ConfigMaps().Informer()
	secrets := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(opts.Namespace), byName(SecretName)).Core().V1().Secrets().Informer()
	n := &Notifier{opts: opts, recorder: recorder, cms: cms, secrets: secrets,
		queue: make(chan job, opts.QueueSize), inFlight: make(chan struct{}, opts.MaxInFlight), sent: map[string]bool{}}
	n.factory = api.NewFactory(api.Settings{
		ConfigMapName: ConfigMapName,
		SecretName:    SecretName,
		InitGetVars: func(*api.Config, *corev1.ConfigMap, *corev1.Secret) (api.GetVars, error) {
			// The moment's variables are the template's, as built by vars.
			return func(obj map[string]any, _ services.Destination) map[string]any { return obj }, nil
		},
	}, opts.Namespace, secrets, cms)
	return n, nil
}

// Run runs the informers and the senders until ctx is done.
func (n *Notifier) Run(ctx context.Context) {
	go n.cms.RunWithContext(ctx)
	go n.secrets.RunWithContext(ctx)
	var wg sync.WaitGroup
	for range n.opts.Workers {
		wg.Go(func() { n.work(ctx) })
	}
	<-ctx.Done()
	wg.Wait()
}

func (n *Notifier) synced() bool { return n.cms.HasSynced() && n.secrets.HasSynced() }

// destinations returns the notification API and the destinations of trigger for cma: the
// ConfigMap's default subscriptions that select it by its labels and the subscription annotations
// on it; an error when the configuration does not parse.
func (n *Notifier) destinations(cma *addonv1alpha1.ClusterManagementAddOn, trigger string) (api.API, services.Destinations, error) {
	a, err := n.factory.GetAPI()
	if err != nil {
		return nil, nil, err
	}
	cfg := a.GetConfig()
	dests := cfg.GetGlobalDestinations(cma.Labels)
	dests.Merge(subscriptions.NewAnnotations(cma.Annotations).GetDestinations(cfg.DefaultTriggers, cfg.ServiceDefaultTriggers))
	return a, services.Destinations{trigger: dests[trigger]}, nil
}

// annotatedServices are the services cma's subscription annotations name for trigger, read
// without the configuration (for the metric when it does not parse).
func annotatedServices(cma *addonv1alpha1.ClusterManagementAddOn, trigger string) []string {
	seen := map[string]bool{}
	var out []string
	for _, d := range subscriptions.NewAnnotations(cma.Annotations).GetDestinations(nil, nil)[trigger] {
		if !seen[d.Service] {
			seen[d.Service] = true
			out = append(out, d.Service)
		}
	}
	sort.Strings(out)
	return out
}

// Claim returns the moments of a decision's events on cma that are to be sent: not sent before
// by this process (MomentsOf left out those the version history records), with a
// subscriber. They count as sent from now on; the caller records them in the version history
// (Mark) and hands them to Send. Before the configuration is read, every new moment is claimed
// and its subscribers looked up when it is sent.
func (n *Notifier) Claim(ctx context.Context, cma *addonv1alpha1.ClusterManagementAddOn, ms []Moment) []Moment {
	if n == nil || len(ms) == 0 {
		return nil
	}
	var out []Moment
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, m := range ms {
		if n.sent[m.Key()] {
			continue
		}
		if n.synced() {
			_, dests, err := n.destinations(cma, m.Trigger)
			if err != nil {
				n.configError(ctx, cma, m, err)
				continue
			}
			if len(dests[m.Trigger]) == 0 {
				continue
			}
		}
		n.sent[m.Key()] = true
		out = append(out, m)
	}
	return out
}

// configError reports a configuration that does not parse: logged when it changes, and per
// moment a subscriber misses, a Warning event and the metric.
func (n *Notifier) configError(ctx context.Context, cma *addonv1alpha1.ClusterManagementAddOn, m Moment, err error) {
	msg := fmt.Sprintf("the notifications configuration (ConfigMap %s/%s, Secret %s/%s) cannot be read: %v; fix it (the format is notifications-engine's)",
		n.opts.Namespace, ConfigMapName, n.opts.Namespace, SecretName, err)
	if msg != n.configErr {
		n.configErr = msg
		klog.FromContext(ctx).Error(err, "Notifications configuration cannot be read", "namespace", n.opts.Namespace, "configMap", ConfigMapName, "secret", SecretName)
	}
	svcs := annotatedServices(cma, m.Trigger)
	if len(svcs) == 0 {
		return
	}
	for _, s := range svcs {
		notifications.WithLabelValues(m.Trigger, s, ResultConfigError).Inc()
	}
	n.recorder.Event(cma, corev1.EventTypeWarning, EventReasonNotificationFailed, fmt.Sprintf("%s for placement %s, version %s not sent: %s", m.Trigger, m.Placement, m.VersionID, msg))
}

// Send queues moments ms of cma, never waiting: a moment the full queue has no room for is
// dropped (counted, and a Warning event).
func (n *Notifier) Send(cma *addonv1alpha1.ClusterManagementAddOn, ms []Moment) {
	if n == nil {
		return
	}
	for _, m := range ms {
		select {
		case n.queue <- job{cma: cma, moment: m}:
		default:
			for _, s := range annotatedServices(cma, m.Trigger) {
				notifications.WithLabelValues(m.Trigger, s, ResultDropped).Inc()
			}
			n.recorder.Event(cma, corev1.EventTypeWarning, EventReasonNotificationFailed, fmt.Sprintf(
				"%s for placement %s, version %s not sent: %d notifications wait for their services already (slow or unreachable services?)",
				m.Trigger, m.Placement, m.VersionID, n.opts.QueueSize))
		}
	}
}

func (n *Notifier) work(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case j := <-n.queue:
			n.deliver(ctx, j)
		}
	}
}

// deliver sends one moment to its destinations.
func (n *Notifier) deliver(ctx context.Context, j job) {
	logger := klog.FromContext(ctx).WithValues("addon", j.moment.Addon, "trigger", j.moment.Trigger, "placement", j.moment.Placement, "version", j.moment.VersionID)
	// Moments claimed before the configuration was read wait for it, as long as a send may take.
	syncCtx, cancel := context.WithTimeout(ctx, n.opts.SendTimeout)
	synced := cache.WaitForCacheSync(syncCtx.Done(), n.cms.HasSynced, n.secrets.HasSynced)
	cancel()
	if ctx.Err() != nil {
		return
	}
	var a api.API
	var dests services.Destinations
	err := fmt.Errorf("not read within %s: may the controller get, list and watch them (config/rbac/notifications_role.yaml)? Its log says why", n.opts.SendTimeout)
	if synced {
		a, dests, err = n.destinations(j.cma, j.moment.Trigger)
	}
	if err != nil {
		n.mu.Lock()
		n.configError(ctx, j.cma, j.moment, err)
		n.mu.Unlock()
		return
	}
	if len(dests[j.moment.Trigger]) == 0 {
		return
	}
	vars, err := Vars(j.cma, j.moment)
	if err != nil {
		logger.Error(err, "Notification variables")
		return
	}
	conds, err := a.RunTrigger(j.moment.Trigger, vars)
	if err != nil {
		// A subscription to a trigger the ConfigMap does not define: the subscriber sees nothing.
		for _, d := range dests[j.moment.Trigger] {
			notifications.WithLabelValues(j.moment.Trigger, d.Service, ResultConfigError).Inc()
		}
		n.recorder.Event(j.cma, corev1.EventTypeWarning, EventReasonNotificationFailed, fmt.Sprintf("%s for placement %s, version %s not sent: %v (ConfigMap %s/%s)",
			j.moment.Trigger, j.moment.Placement, j.moment.VersionID, err, n.opts.Namespace, ConfigMapName))
		return
	}
	for _, c := range conds {
		if !c.Triggered {
			continue
		}
		for _, d := range dests[j.moment.Trigger] {
			res, err := n.sendOne(ctx, a, vars, c.Templates, d)
			notifications.WithLabelValues(j.moment.Trigger, d.Service, res).Inc()
			if res == ResultSent {
				logger.V(2).Info("Notification sent", "service", d.Service, "recipient", d.Recipient)
				continue
			}
			logger.Info("Notification not sent", "service", d.Service, "recipient", d.Recipient, "result", res, "err", err)
			n.recorder.Event(j.cma, corev1.EventTypeWarning, EventReasonNotificationFailed, fmt.Sprintf("%s for placement %s, version %s to %s not sent (%s): %v",
				j.moment.Trigger, j.moment.Placement, j.moment.VersionID, d.Service, res, err))
		}
	}
}

// sendOne sends to one destination within the send timeout. The library's send cannot be
// cancelled: one given up on goes on in its goroutine, which holds a slot of MaxInFlight until it
// returns.
func (n *Notifier) sendOne(ctx context.Context, a api.API, vars map[string]any, templates []string, d services.Destination) (string, error) {
	timer := time.NewTimer(n.opts.SendTimeout)
	defer timer.Stop()
	select {
	case n.inFlight <- struct{}{}:
	case <-timer.C:
		return ResultTimeout, fmt.Errorf("%d sends to slow services under way already for %s", n.opts.MaxInFlight, n.opts.SendTimeout)
	case <-ctx.Done():
		return ResultFailed, ctx.Err()
	}
	done := make(chan error, 1)
	go func() {
		defer func() { <-n.inFlight }()
		done <- a.Send(vars, templates, d)
	}()
	select {
	case err := <-done:
		if err != nil {
			return ResultFailed, err
		}
		return ResultSent, nil
	case <-timer.C:
		return ResultTimeout, fmt.Errorf("no answer within %s", n.opts.SendTimeout)
	case <-ctx.Done():
		return ResultFailed, ctx.Err()
	}
}

// Vars are the variables a template of moment m on cma sees: addon, placement, versionID, kind,
// clusters (a list), trigger, reason, message, and the CMA itself (cma, as JSON objects are).
func Vars(cma *addonv1alpha1.ClusterManagementAddOn, m Moment) (map[string]any, error) {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cma)
	if err != nil {
		return nil, fmt.Errorf("converting ClusterManagementAddOn %s: %w", cma.Name, err)
	}
	clusters := make([]any, len(m.Clusters))
	for i, c := range m.Clusters {
		clusters[i] = c
	}
	return map[string]any{
		"addon": m.Addon, "placement": m.Placement, "versionID": m.VersionID, "kind": m.Kind, "clusters": clusters,
		"trigger": m.Trigger, "reason": m.Reason, "message": m.Message, "cma": obj,
	}, nil
}
