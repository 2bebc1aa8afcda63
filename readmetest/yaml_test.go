package readmetest

// skeletons are the minimal objects a fragment is embedded in, by the KIND its marker names.
var skeletons = map[string]string{
	"ClusterManagementAddOn": `{apiVersion: addon.open-cluster-management.io/v1alpha1, kind: ClusterManagementAddOn, metadata: {name: readme},
		spec: {installStrategy: {type: Placements, placements: [{name: readme, namespace: default}]}}}`,
	"ConfigMap":     `{apiVersion: v1, kind: ConfigMap, metadata: {name: readme, namespace: default}}`,
	"Kustomization": `{}`,
	"Kptfile":       `{apiVersion: kpt.dev/v1, kind: Kptfile, metadata: {name: readme, annotations: {config.kubernetes.io/local-config: "true"}}}`,
	"ConfigHash":    `{apiVersion: addonops.io/v1alpha1, kind: ConfigHash, metadata: {name: readme}}`,
}
