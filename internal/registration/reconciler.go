package registration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/hubcache"
	"github.com/addonops/addonops/internal/rolloutplan"
)

// Options configure registration.
type Options struct {
	// SigningCANamespace is where a CustomSigner signingCA without a namespace is looked for.
	// Default DefaultSigningCANamespace (OCM: the addon-manager's namespace).
	SigningCANamespace string
	// CARecheck is how often a missing or malformed signing CA is looked at again (secrets are not
	// watched). Default 30s.
	CARecheck time.Duration
	// ControllerNamespaces are the controller's own namespaces (its pod's, its lease's, its version
	// histories'): no hubPermission binds an agent there. SigningCANamespace and the templates'
	// signing CA namespaces are protected too.
	ControllerNamespaces []string
}

// Reconciler registers template add-on agents. It has two queues: MCAs ("<namespace>/<name>":
// status, RoleBindings) and CSRs (name: approval and signing).
type Reconciler struct {
	opts Options
	hub  *hubcache.Cache
	// csrQ is the CSR reconciler's queue, set when it starts; MCA and config events look again at
	// an add-on's pending requests through it.
	csrQ     atomic.Pointer[hubcache.Queue]
	events   record.EventBroadcaster
	recorder record.EventRecorder

	// grants are the ClusterRoles labelled GrantsLabel: what hubPermissions may bind (BindableRoles).
	grants        cache.SharedIndexInformer
	grantsFactory kubeinformers.SharedInformerFactory

	mu      sync.Mutex
	refused map[string]string // last refusal reported per CSR name, so an event is raised once
	// refusedMCA is the last registration refusal reported per MCA key, so an event is raised once.
	refusedMCA map[string]string
}

// New builds the reconciler and adds it (2*workers concurrent MCA reconciles, workers/2 for CSRs)
// to the shared cache, which runs it.
func New(hub *hubcache.Cache, opts Options, workers int) (*Reconciler, error) {
	if opts.SigningCANamespace == "" {
		opts.SigningCANamespace = DefaultSigningCANamespace
	}
	if opts.CARecheck <= 0 {
		opts.CARecheck = 30 * time.Second
	}
	r := &Reconciler{opts: opts, hub: hub, refused: map[string]string{}, refusedMCA: map[string]string{}}
	// Only the grants ClusterRoles: a handful, read whole (a bind rule's resourceNames).
	r.grantsFactory = kubeinformers.NewSharedInformerFactoryWithOptions(hub.Clients.Kube, 0,
		kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = GrantsLabel + "=true" }))
	r.grants = r.grantsFactory.Rbac().V1().ClusterRoles().Informer()
	sch := runtime.NewScheme()
	utilruntime.Must(addonv1alpha1.Install(sch))
	utilruntime.Must(scheme.AddToScheme(sch))
	r.events = record.NewBroadcaster()
	r.recorder = r.events.NewRecorder(sch, corev1.EventSource{Component: "addonops-registration"})

	labelled := func(obj any) (cluster, addon string) {
		m, ok := obj.(metav1.Object)
		if !ok {
			return "", ""
		}
		return m.GetLabels()[hubcache.ClusterNameLabel], m.GetLabels()[addonv1alpha1.AddonLabelKey]
	}
	mcaHandlers := []hubcache.Handler{
		{Informer: hub.MCAInformer, Keys: func(obj any) []string {
			if m, ok := obj.(*addonv1alpha1.ManagedClusterAddOn); ok {
				r.enqueueCSRs(m.Namespace, m.Name)
				return []string{m.Namespace + "/" + m.Name}
			}
			return nil
		}, Changed: hub.MCAUpdates(MCAChanged)},
		{Informer: hub.TemplateInformer, Keys: r.configKeys(configref.AddOnTemplates)},
		{Informer: hub.ADCInformer, Keys: r.configKeys(configref.AddOnDeploymentConfigs)},
		// A binding changed or deleted by someone else is put back.
		{Informer: hub.RoleBindingInformer, Keys: func(obj any) []string {
			if c, a := labelled(obj); c != "" && a != "" {
				return []string{c + "/" + a}
			}
			return nil
		}},
		{Informer: hub.CMAInformer, Keys: hub.MCAsOfCMA, Changed: hubcache.CMAChanged},
		// A grant added or taken away: every MCA's bindings are checked again (grants change
		// rarely, and an MCA whose registration did not change writes nothing).
		{Informer: r.grants, Keys: func(any) []string { return hub.MCAInformer.GetIndexer().ListKeys() }},
		// A new managed cluster whose namespace holds another cluster's binding: that binding goes.
		{Informer: hub.ClusterInformer, Keys: r.foreignBindingKeys, Changed: func(_, _ any) bool { return false }},
	}
	csrKeys := func(obj any) []string {
		if c, ok := obj.(*certificatesv1.CertificateSigningRequest); ok {
			return []string{c.Name}
		}
		return nil
	}
	for _, rec := range []hubcache.Reconciler{
		{Name: "csr", Workers: max(1, workers/2), Sync: r.syncCSR, Watch: func(q hubcache.Queue) error {
			r.csrQ.Store(&q)
			return hubcache.Watch(q, hubcache.Handler{Informer: hub.CSRInformer, Keys: csrKeys})
		}},
		// Twice the workers: a new cluster's registration is two writes in a row (its RoleBindings,
		// then the MCA's registrations), where the deployer's is one, and the agent needs them
		// first. With as many workers as the deployer, under load it fell behind the rest of an
		// install at 1,000 clusters.
		{Name: "registration", Workers: 2 * workers, Sync: r.syncMCA, Watch: func(q hubcache.Queue) error {
			return hubcache.Watch(q, mcaHandlers...)
		}},
	} {
		if err := hub.Add(rec); err != nil {
			return nil, err
		}
	}
	if err := hub.AddEvents(r.events); err != nil {
		return nil, err
	}
	// The grants informer runs with the reconcilers, started once the cache synced (syncMCA waits
	// for it).
	if err := hub.AddLoop(func(ctx context.Context) {
		r.grantsFactory.Start(ctx.Done())
		<-ctx.Done()
		r.grantsFactory.Shutdown()
	}); err != nil {
		return nil, err
	}
	return r, nil
}

// foreignBindingKeys maps a ManagedCluster to the MCAs of other clusters that have a binding in
// its namespace: a SingleNamespace binding made before the cluster existed, now refused.
func (r *Reconciler) foreignBindingKeys(obj any) []string {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil
	}
	objs, err := r.hub.RoleBindingInformer.GetIndexer().ByIndex(cache.NamespaceIndex, m.GetName())
	if err != nil {
		return nil
	}
	var keys []string
	for _, o := range objs {
		rb, ok := o.(*rbacv1.RoleBinding)
		if !ok {
			continue
		}
		if c, a := rb.Labels[hubcache.ClusterNameLabel], rb.Labels[addonv1alpha1.AddonLabelKey]; c != "" && a != "" && c != m.GetName() {
			keys = append(keys, c+"/"+a)
		}
	}
	return keys
}

// bindPolicy is what t's hubPermissions may bind now.
func (r *Reconciler) bindPolicy(t *addonv1alpha1.AddOnTemplate) BindPolicy {
	var grants []*rbacv1.ClusterRole
	for _, o := range r.grants.GetStore().List() {
		if cr, ok := o.(*rbacv1.ClusterRole); ok {
			grants = append(grants, cr)
		}
	}
	return BindPolicy{
		Bindable:  BindableRoles(grants),
		Protected: ProtectedNamespaces(t, r.opts.ControllerNamespaces, r.opts.SigningCANamespace),
		IsCluster: func(ns string) bool {
			_, err := r.hub.Clusters.Get(ns)
			return err == nil
		},
	}
}

// waitForGrants waits until the grants informer has synced (it starts with the reconcilers).
func (r *Reconciler) waitForGrants(ctx context.Context) error {
	for !r.grants.HasSynced() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// reportRefusal raises a Warning event on the MCA when its registration is refused, once per
// distinct refusal; msg "" (nothing refused) forgets the last one.
func (r *Reconciler) reportRefusal(mca *addonv1alpha1.ManagedClusterAddOn, msg string) {
	key := mca.Namespace + "/" + mca.Name
	r.mu.Lock()
	same := r.refusedMCA[key] == msg
	if msg == "" {
		delete(r.refusedMCA, key)
	} else {
		r.refusedMCA[key] = msg
	}
	r.mu.Unlock()
	if same || msg == "" {
		return
	}
	r.recorder.Eventf(mca, corev1.EventTypeWarning, "RegistrationRefused", "%s", msg)
}

// configKeys maps a config event to the MCAs told to run it, and looks again at their pending
// CSRs (a template change can change the expected identity).
func (r *Reconciler) configKeys(gr configref.GroupResource) func(any) []string {
	mcas := r.hub.MCAsOfConfig(gr)
	return func(obj any) []string {
		keys := mcas(obj)
		for _, k := range keys {
			if ns, name, err := cache.SplitMetaNamespaceKey(k); err == nil {
				r.enqueueCSRs(ns, name)
			}
		}
		return keys
	}
}

// enqueueCSRs looks again at the requests of an MCA that are not decided yet. Before the CSR
// reconciler started there is nothing to do: it sees every request when it starts.
func (r *Reconciler) enqueueCSRs(cluster, addon string) {
	q := r.csrQ.Load()
	if q == nil {
		return
	}
	for _, obj := range r.hub.AddonCSRs(cluster, addon) {
		if csr, ok := obj.(*certificatesv1.CertificateSigningRequest); ok {
			if _, denied, issued := Decided(csr); !denied && !issued {
				(*q).Add(csr.Name)
			}
		}
	}
}

// deferOwner names registration's changes deferred to an MCA's next write (statuswrite.Writer.Defer).
const deferOwner = "registration"

// syncMCA writes an MCA's registration status and its RoleBindings.
func (r *Reconciler) syncMCA(ctx context.Context, key string) (time.Duration, error) {
	cluster, addon, err := cache.SplitMetaNamespaceKey(key)
	if err != nil || addon == "" || !r.hub.Managed(addon) {
		return 0, nil
	}
	ours := r.ourBindings(cluster, addon)
	mca, err := r.hub.MCAs.ManagedClusterAddOns(cluster).Get(addon)
	if apierrors.IsNotFound(err) {
		// The MCA is gone: so are its permissions (OCM leaves SingleNamespace bindings behind).
		r.mu.Lock()
		delete(r.refusedMCA, key)
		r.mu.Unlock()
		return 0, r.applyBindings(ctx, DiffBindings(nil, ours, r.lookupBinding))
	}
	if err != nil {
		return 0, err
	}
	// status.supportedConfigs first, for every MCA of a template add-on, whatever its rollout
	// turn: addon-framework's registration controller writes it before anything else.
	cma, err := r.hub.CMAs.Get(addon)
	if err != nil && !apierrors.IsNotFound(err) {
		return 0, fmt.Errorf("reading ClusterManagementAddOn %s: %w", addon, err)
	}
	// The same first write declares the add-on's health as this process probes it (health mode
	// Customized, Available Unknown until its works tell: rolloutplan.Set), which the progress
	// reconciler would otherwise write on its own a moment later: a status write per cluster.
	var first func(*addonv1alpha1.ManagedClusterAddOn) // nil: nothing to declare
	if supported, ok := SupportedConfigs(cma); ok {
		declared := mca.Status.HealthCheck.Mode == addonv1alpha1.HealthCheckModeCustomized &&
			meta.FindStatusCondition(mca.Status.Conditions, rolloutplan.ConditionAvailable) != nil
		if !declared || !equality.Semantic.DeepEqual(mca.Status.SupportedConfigs, supported) {
			first = func(m *addonv1alpha1.ManagedClusterAddOn) {
				m.Status.SupportedConfigs = slices.Clone(supported)
				rolloutplan.Set(&m.Status, nil, rolloutplan.Now(time.Now()))
			}
		}
	}
	writeFirst := func() error {
		if first == nil {
			return nil
		}
		_, err := r.hub.MCAWriter.Status(ctx, mca, first)
		return err
	}
	desired := r.hub.DesiredOf(mca)
	// Desired configs the controller never decided for this MCA (a cluster's agent named them) bind
	// nothing: the deployer's ManifestApplied condition and one Warning event say why.
	if refused, wait, err := r.hub.Refuse(ctx, key, mca, desired, func(msg string) {
		r.recorder.Event(mca, corev1.EventTypeWarning, hubcache.EventReasonConfigsRefused, msg)
	}); refused {
		if wait > 0 || err != nil {
			return wait, err
		}
		return 0, writeFirst()
	}
	if desired.Template == nil || !desired.Current() {
		// Not a template add-on, or its configs changed and its rollout turn has not come: the
		// registration of the version it runs stays. A new MCA's declaration waits for its next
		// write, the rollout's desired configs, which usually come within seconds (it is the
		// install order: this declaration, the desired configs, then the registrations), and is
		// written alone once it has waited the writer's hold.
		if first == nil {
			r.hub.MCAWriter.Drop(key, deferOwner)
			return 0, nil
		}
		if len(mca.Status.ConfigReferences) == 0 {
			if wait := r.hub.MCAWriter.Defer(key, deferOwner, first); wait > 0 {
				return wait, nil
			}
			_, err := r.hub.MCAWriter.Flush(ctx, mca)
			return 0, err
		}
		return 0, writeFirst()
	}
	t, adcs, err := desired.Typed()
	if err != nil {
		return 0, errors.Join(err, writeFirst())
	}
	if err := r.waitForGrants(ctx); err != nil {
		return 0, err
	}
	regs := Registrations(t, mca)
	bindings, pending, bindErr := RoleBindings(t, mca, regs, r.bindPolicy(t))
	// What is refused is not bound, and its binding from before goes (DiffBindings deletes ours
	// not desired); a malformed template leaves the bindings as they are.
	var refused *RefusedError
	var applyErr error
	if errors.As(bindErr, &refused) || bindErr == nil && !pending {
		applyErr = r.applyBindings(ctx, DiffBindings(bindings, ours, r.lookupBinding))
		bindErr = errors.Join(bindErr, applyErr)
	}
	signerProblems := ReservedSigners(t)
	var refusal []string
	if refused != nil {
		refusal = append(refusal, refused.Reasons...)
	}
	r.reportRefusal(mca, strings.Join(append(refusal, signerProblems...), "; "))
	var caProblems []string
	for signer, ref := range SigningCAs(t, r.opts.SigningCANamespace) {
		if _, err := r.loadCA(ctx, ref); err != nil {
			caProblems = append(caProblems, fmt.Sprintf("signing CA of signer %s: %v", signer, err))
		}
	}
	slices.Sort(caProblems) // map order must not make the condition flap
	// The install namespace from the template's part found once per template version.
	namespace, err := desired.InstallNamespace()
	if err != nil {
		namespace = InstallNamespace(t, adcs)
	}
	st := Status{Registrations: regs, Namespace: namespace, Condition: Condition(regs, pending, Problems{Bind: bindErr, Signers: signerProblems, CAs: caProblems})}
	// The rollout got to the MCA first (under load it does): the declaration goes with the
	// registrations, one status write instead of two.
	if _, err := r.hub.MCAWriter.Status(ctx, mca, func(m *addonv1alpha1.ManagedClusterAddOn) {
		if first != nil {
			first(m)
		}
		st.Apply(&m.Status, func(c *[]metav1.Condition, cond metav1.Condition) { meta.SetStatusCondition(c, cond) })
	}); err != nil {
		return 0, errors.Join(bindErr, err)
	}
	// A refusal is no error to retry: the template, the grants, the clusters or the agent's status
	// must change, and each of them enqueues the MCA again.
	if applyErr != nil || bindErr != nil && refused == nil {
		return 0, bindErr
	}
	if len(caProblems) > 0 {
		return r.opts.CARecheck, nil
	}
	return 0, nil
}

func (r *Reconciler) ourBindings(cluster, addon string) []*rbacv1.RoleBinding {
	var out []*rbacv1.RoleBinding
	for _, obj := range r.hub.AddonBindings(cluster, addon) {
		if rb, ok := obj.(*rbacv1.RoleBinding); ok {
			out = append(out, rb)
		}
	}
	return out
}

func (r *Reconciler) lookupBinding(namespace, name string) *rbacv1.RoleBinding {
	obj, ok, err := r.hub.RoleBindingInformer.GetIndexer().GetByKey(namespace + "/" + name)
	if err != nil || !ok {
		return nil
	}
	return obj.(*rbacv1.RoleBinding)
}

// applyBindings writes binding changes. A binding that exists unlabelled (not cached) is taken
// over, as OCM's applier would.
func (r *Reconciler) applyBindings(ctx context.Context, ch BindingChanges) error {
	logger := klog.FromContext(ctx)
	api := r.hub.Clients.Kube.RbacV1()
	var errs []error
	create := func(rb *rbacv1.RoleBinding) {
		_, err := api.RoleBindings(rb.Namespace).Create(ctx, rb, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			cur, getErr := api.RoleBindings(rb.Namespace).Get(ctx, rb.Name, metav1.GetOptions{})
			if getErr != nil {
				errs = append(errs, fmt.Errorf("reading RoleBinding %s/%s: %w", rb.Namespace, rb.Name, getErr))
				return
			}
			sub := DiffBindings([]*rbacv1.RoleBinding{rb}, nil, func(string, string) *rbacv1.RoleBinding { return cur })
			if len(sub.Replace) > 0 {
				errs = append(errs, fmt.Errorf("RoleBinding %s/%s exists with roleRef %s %s; it will be replaced", rb.Namespace, rb.Name, cur.RoleRef.Kind, cur.RoleRef.Name))
				_ = api.RoleBindings(rb.Namespace).Delete(ctx, rb.Name, metav1.DeleteOptions{})
				return
			}
			for _, u := range sub.Update {
				if _, err := api.RoleBindings(u.Namespace).Update(ctx, u, metav1.UpdateOptions{}); err != nil {
					errs = append(errs, fmt.Errorf("updating RoleBinding %s/%s: %w", u.Namespace, u.Name, err))
				}
			}
			return
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("creating RoleBinding %s/%s: %w", rb.Namespace, rb.Name, err))
			return
		}
		logger.V(2).Info("Created RoleBinding", "binding", rb.Namespace+"/"+rb.Name)
	}
	for _, rb := range ch.Create {
		create(rb)
	}
	for _, rb := range ch.Update {
		if _, err := api.RoleBindings(rb.Namespace).Update(ctx, rb, metav1.UpdateOptions{}); err != nil {
			errs = append(errs, fmt.Errorf("updating RoleBinding %s/%s: %w", rb.Namespace, rb.Name, err))
		}
	}
	for _, rb := range ch.Replace {
		if err := api.RoleBindings(rb.Namespace).Delete(ctx, rb.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting RoleBinding %s/%s to change its roleRef: %w", rb.Namespace, rb.Name, err))
			continue
		}
		create(rb)
	}
	for _, rb := range ch.Delete {
		uid := rb.UID
		err := api.RoleBindings(rb.Namespace).Delete(ctx, rb.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("deleting RoleBinding %s/%s: %w", rb.Namespace, rb.Name, err))
			continue
		}
		logger.V(2).Info("Deleted RoleBinding", "binding", rb.Namespace+"/"+rb.Name)
	}
	return errors.Join(errs...)
}

func (r *Reconciler) loadCA(ctx context.Context, ref addonv1alpha1.SigningCARef) (*CA, error) {
	s, err := r.hub.Clients.Kube.CoreV1().Secrets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("secret %s/%s not found", ref.Namespace, ref.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("reading secret %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	return ParseCA(s, time.Now())
}

// syncCSR approves (and, for CustomSigner, signs) one certificate signing request.
func (r *Reconciler) syncCSR(ctx context.Context, name string) (time.Duration, error) {
	logger := klog.FromContext(ctx)
	obj, ok, err := r.hub.CSRInformer.GetIndexer().GetByKey(name)
	if err != nil {
		return 0, err
	}
	if !ok {
		r.mu.Lock()
		delete(r.refused, name)
		r.mu.Unlock()
		return 0, nil
	}
	csr := obj.(*certificatesv1.CertificateSigningRequest)
	cluster, addon := csr.Labels[hubcache.ClusterNameLabel], csr.Labels[addonv1alpha1.AddonLabelKey]
	if cluster == "" || addon == "" || !r.hub.Managed(addon) {
		return 0, nil
	}
	approved, denied, issued := Decided(csr)
	if denied || issued || approved && csr.Spec.SignerName == certificatesv1.KubeAPIServerClientSignerName {
		return 0, nil // decided; kube-apiserver-client certificates are issued by kube-controller-manager
	}
	mca, err := r.hub.MCAs.ManagedClusterAddOns(cluster).Get(addon)
	if apierrors.IsNotFound(err) {
		r.refuse(csr, fmt.Sprintf("no ManagedClusterAddOn %s/%s", cluster, addon))
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	desired := r.hub.DesiredOf(mca)
	// A template the controller never decided for this MCA (its agent named it) signs nothing.
	if refused, wait, err := r.hub.Refuse(ctx, cluster+"/"+addon, mca, desired, func(msg string) {
		r.recorder.Event(mca, corev1.EventTypeWarning, hubcache.EventReasonConfigsRefused, msg)
	}); refused {
		return wait, err
	}
	if desired.Template == nil || !desired.Template.Current() {
		return 0, nil // looked at again when the MCA or its template changes
	}
	t, _, err := desired.Typed()
	if err != nil {
		return 0, err
	}
	v := Review(csr, cluster, addon, t, r.opts.SigningCANamespace)
	if !v.Approve {
		r.refuse(csr, v.Reason)
		return 0, nil
	}
	var ca *CA
	if v.Sign {
		if ca, err = r.loadCA(ctx, v.SigningCA); err != nil {
			// The MCA's RegistrationApplied condition says so; the request waits.
			logger.Info("Not approving: signing CA unusable", "csr", name, "err", err.Error())
			return r.opts.CARecheck, nil
		}
	}
	api := r.hub.Clients.Kube.CertificatesV1().CertificateSigningRequests()
	if !approved {
		next := csr.DeepCopy()
		next.Status.Conditions = append(next.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue,
			Reason: "AutoApprovedByAddonops", Message: fmt.Sprintf("add-on %s agent of cluster %s, identity checked against AddOnTemplate %s", addon, cluster, t.Name),
		})
		res, err := api.UpdateApproval(ctx, name, next, metav1.UpdateOptions{})
		if err != nil {
			return 0, fmt.Errorf("approving CertificateSigningRequest %s: %w", name, err)
		}
		logger.Info("Approved", "csr", name, "signer", csr.Spec.SignerName, "cluster", cluster, "addon", addon)
		csr = res
	}
	if ca == nil {
		return 0, nil
	}
	pemCert, err := Sign(csr, v.Subject, ca, time.Now(), Validity(csr, CertValidity))
	if err != nil {
		return 0, fmt.Errorf("signing CertificateSigningRequest %s: %w", name, err)
	}
	next := csr.DeepCopy()
	next.Status.Certificate = pemCert
	if _, err := api.UpdateStatus(ctx, next, metav1.UpdateOptions{}); err != nil {
		return 0, fmt.Errorf("writing the certificate of CertificateSigningRequest %s: %w", name, err)
	}
	logger.Info("Signed", "csr", name, "signer", csr.Spec.SignerName)
	return 0, nil
}

// refuse reports a refused request once per reason: a Warning event on the request.
func (r *Reconciler) refuse(csr *certificatesv1.CertificateSigningRequest, reason string) {
	r.mu.Lock()
	same := r.refused[csr.Name] == reason
	r.refused[csr.Name] = reason
	r.mu.Unlock()
	if same {
		return
	}
	r.recorder.Eventf(csr, corev1.EventTypeWarning, "CertificateNotApproved", "not approved: %s", reason)
}
