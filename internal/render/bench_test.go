package render

import (
	"fmt"
	"runtime"
	"testing"

	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
)

// BenchClusters is the fleet size of the preview benchmark.
const BenchClusters = 1000

// BenchmarkRenderHelloTemplate1000Clusters renders the hello-template of the AddOnTemplate design
// (docs/design/addon-template.md#the-hello-template-example, with its ADC) for
// 1,000 clusters per operation: what a preview of one template across a fleet costs. It reports
// ns/cluster, allocs/cluster and B/cluster besides the per-operation figures. Target: < 1 ms per
// cluster.
func BenchmarkRenderHelloTemplate1000Clusters(b *testing.B) {
	tpl := parseTemplate(b, readFile(b, "testdata/hello/addon-template.yaml"))
	adc := parseADC(b, readFile(b, "testdata/hello/addon-deployment-config.yaml"))
	r, err := Compile(tpl)
	if err != nil {
		b.Fatal(err)
	}
	clusters := make([]Cluster, BenchClusters)
	for i := range clusters {
		clusters[i] = Cluster{Name: fmt.Sprintf("cluster%d", i+1), DeploymentConfigs: []*addonv1alpha1.AddOnDeploymentConfig{adc}}
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for _, c := range clusters {
			res, err := r.Render(c)
			if err != nil {
				b.Fatal(err)
			}
			if len(res.Objects) != 3 {
				b.Fatalf("%d objects", len(res.Objects))
			}
		}
	}
	b.StopTimer()
	runtime.ReadMemStats(&after)
	renders := float64(b.N) * BenchClusters
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/renders, "ns/cluster")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/renders, "allocs/cluster")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/renders, "B/cluster")
}
