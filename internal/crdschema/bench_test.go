package crdschema

import "testing"

// benchADC is an AddOnDeploymentConfig as config-hash meets them by the thousand: variables, a
// node placement and a registry mirror, agentInstallNamespace left to the default.
const benchADC = `apiVersion: addon.open-cluster-management.io/v1alpha1
kind: AddOnDeploymentConfig
metadata:
  name: hello-config-cluster-0042
  namespace: cluster-0042
  labels: {app.kubernetes.io/part-of: hello}
  annotations: {addonops.io/base-name: hello-config}
spec:
  customizedVariables:
  - {name: LOG_LEVEL, value: "4"}
  - {name: IMAGE, value: quay.io/example/hello:v1.2.3}
  - {name: REGION, value: eu-west-1}
  nodePlacement:
    nodeSelector: {node-role.kubernetes.io/infra: ""}
    tolerations: [{key: node-role.kubernetes.io/infra, operator: Exists, effect: NoSchedule}]
  registries:
  - {source: quay.io/example, mirror: mirror.example.com/example}
`

// BenchmarkDefaultValidateADC is what a function pays per ADC: Default, then Validate.
func BenchmarkDefaultValidateADC(b *testing.B) {
	src := decode(b, benchADC)
	k := lookup(b, src)
	objs := make([]map[string]any, b.N)
	for i := range objs {
		objs[i] = deepCopyJSON(src).(map[string]any)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k.Default(objs[i])
		if errs := k.Validate(objs[i]); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}

func BenchmarkDefaultADC(b *testing.B) {
	src := decode(b, benchADC)
	k := lookup(b, src)
	objs := make([]map[string]any, b.N)
	for i := range objs {
		objs[i] = deepCopyJSON(src).(map[string]any)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k.Default(objs[i])
	}
}

// BenchmarkValidateTemplate covers the CEL path (AddOnTemplate has a rule).
func BenchmarkValidateTemplate(b *testing.B) {
	obj := decode(b, template+`    manifestConfigs:
    - resourceIdentifier: {group: apps, resource: deployments, name: hello, namespace: default}
      conditionRules:
      - {type: CEL, condition: Ready, celExpressions: ["true"]}
`)
	k := lookup(b, obj)
	k.Default(obj)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if errs := k.Validate(obj); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}

// BenchmarkOCMLookup is the first use in a process: reading the embedded CRDs and building the
// ADC schema.
func BenchmarkOCMLookup(b *testing.B) {
	for i := 0; i < b.N; i++ {
		s, err := loadEmbedded()
		if err != nil {
			b.Fatal(err)
		}
		if _, ok := s.Lookup("addon.open-cluster-management.io/v1alpha1", "AddOnDeploymentConfig"); !ok {
			b.Fatal("no ADC")
		}
	}
}
