// Package ocmwebhook serves the v1beta1 add-on API (addon.open-cluster-management.io/v1beta1) on a
// test hub (internal/testing/localhub) the way an OCM v1.3 hub serves it, with OCM's own conversion code.
//
// What an OCM v1.3 hub does (open-cluster-management.io/ocm v1.3.x, which pins
// open-cluster-management.io/api v1.3.0, the version addonops' go.mod pins):
//
//   - Its cluster-manager installs the ClusterManagementAddOn and ManagedClusterAddOn CRDs serving
//     v1alpha1 (the storage version) and v1beta1, patched (hack/*.crd.yaml.yaml-patch) to convert
//     through a webhook: strategy Webhook, service cluster-manager-addon-webhook, path /convert,
//     conversionReviewVersions v1 and v1beta1. AddOnDeploymentConfig serves both versions too, with
//     no conversion (same schema); AddOnTemplate is v1alpha1 only.
//   - The webhook is the `addon webhook-server` command (manifests/cluster-manager/management/
//     addon-manager/webhook-deployment.yaml), controller-runtime's conversion webhook around OCM's
//     pkg/addon/webhook: v1alpha1 is the hub version, and v1beta1 objects are converted by the api
//     module's Convert_* functions (addon/v1beta1/conversion.go) plus OCM's own handling of
//     spec.installNamespace (kept in the annotation addon.open-cluster-management.io/v1alpha1-
//     install-namespace) and of the deprecated status.configReferences[].ConfigReferent.
//
// Here the same CRD files come from the api module go.mod pins (localhub.APIModuleDir), the
// conversion is patched in the same way but with a URL (the test API server has no service
// network), and the webhook is OCM's binary built by `make ocm-binaries` (bin/ocm-addon, ocm
// v1.2.1, tools/ocm). Its conversion is v1.3's: between v1.2.1 and v1.3.1 pkg/addon/webhook changed
// only in how it registers with controller-runtime, and the api module's addon types, CRDs and
// conversions between v1.2.0 (what v1.2.1 builds with) and v1.3.0 differ only in
// Convert_v1beta1_RegistrationConfig_To_v1alpha1_RegistrationConfig, which v1.2.0 fails on a
// kubeClient or customSigner registration whose details are missing; registrations are status the
// add-on manager writes, never Git.
//
// v1.2.1's webhook-server binds two ports it takes no flag for (v1.3 added --health-probe-port and
// --metrics-port): its health probes on :8000 and controller-runtime's metrics on :8080, on every
// interface. So only one runs on a machine at a time: Start takes a machine-wide lock (a file in
// os.TempDir) and holds it until Stop, and names the port when another program holds one.
package ocmwebhook
