package render

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
)

func adcs(t testing.TB, specs ...string) []*addonv1alpha1.AddOnDeploymentConfig {
	var out []*addonv1alpha1.AddOnDeploymentConfig
	for _, s := range specs {
		out = append(out, parseADC(t, adcYAML(s)))
	}
	return out
}

func env(pairs ...string) []corev1.EnvVar {
	var out []corev1.EnvVar
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, corev1.EnvVar{Name: pairs[i], Value: pairs[i+1]})
	}
	return out
}

// noNS keeps template namespaces: ADCs here set agentInstallNamespace "" unless a case is about it.
const noNS = `agentInstallNamespace: ""`

func TestEnvDecorator(t *testing.T) {
	withOwnEnv := strings.Replace(deployment, "      - name: main\n", `      - name: main
        env:
        - name: CLUSTER_NAME
          value: mine
        - name: OTHER
          value: x
        - name: HUB_KUBECONFIG
          valueFrom:
            configMapKeyRef: {name: cm, key: k}
`, 1)
	cases := []struct {
		name         string
		registration string
		manifest     string
		adc          string // spec, "" for no ADC
		want         []corev1.EnvVar
	}{
		{
			name: "no registration, no ADC: only CLUSTER_NAME", manifest: deployment,
			want: env("CLUSTER_NAME", "cluster1"),
		},
		{
			name: "registration adds HUB_KUBECONFIG first", registration: kubeClientRegistration, manifest: deployment,
			want: env("HUB_KUBECONFIG", DefaultHubKubeconfig, "CLUSTER_NAME", "cluster1"),
		},
		{
			name: "ADC install namespace adds INSTALL_NAMESPACE", registration: kubeClientRegistration, manifest: deployment,
			adc:  "agentInstallNamespace: ns1",
			want: env("HUB_KUBECONFIG", DefaultHubKubeconfig, "CLUSTER_NAME", "cluster1", "INSTALL_NAMESPACE", "ns1"),
		},
		{
			name: "ADC with defaulted install namespace", registration: kubeClientRegistration, manifest: deployment,
			adc:  "customizedVariables: [{name: X, value: z}]",
			want: env("HUB_KUBECONFIG", DefaultHubKubeconfig, "CLUSTER_NAME", "cluster1", "INSTALL_NAMESPACE", DefaultAgentInstallNamespace),
		},
		{
			name: "customized variables are not injected as env", manifest: deployment,
			adc:  noNS + "\ncustomizedVariables: [{name: X, value: z}]",
			want: env("CLUSTER_NAME", "cluster1"),
		},
		{
			// Difference from OCM: OCM appends a second CLUSTER_NAME and HUB_KUBECONFIG (Kubernetes
			// then uses the last); the container's own entries get OCM's value in place instead.
			name: "variables the container defines are set in place, not duplicated", registration: kubeClientRegistration,
			manifest: withOwnEnv, adc: noNS,
			want: env("CLUSTER_NAME", "cluster1", "OTHER", "x", "HUB_KUBECONFIG", DefaultHubKubeconfig),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tpl := parseTemplate(t, templateYAML(tc.registration, tc.manifest))
			c := Cluster{Name: "cluster1"}
			if tc.adc != "" {
				c.DeploymentConfigs = adcs(t, tc.adc)
			}
			d := typedDeployment(t, mustRender(t, tpl, c).Objects[0])
			if diff := cmp.Diff(tc.want, d.Spec.Template.Spec.Containers[0].Env); diff != "" {
				t.Errorf("env (-want +got):\n%s", diff)
			}
			if len(d.Spec.Template.Spec.InitContainers[0].Env) != 0 {
				t.Errorf("init container got env %v", d.Spec.Template.Spec.InitContainers[0].Env)
			}
		})
	}
}

func TestVolumeDecorator(t *testing.T) {
	customSigner := "- type: CustomSigner\n  customSigner:\n    signerName: example.com/my.signer\n    signingCA: {name: ca}\n"
	hubVol := corev1.Volume{Name: "hub-kubeconfig", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "addon1-hub-kubeconfig"}}}
	hubMount := corev1.VolumeMount{Name: "hub-kubeconfig", MountPath: "/managed/hub-kubeconfig"}
	csVol := corev1.Volume{Name: "cert-example-com-my-signer", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "addon1-example.com-my.signer-client-cert"}}}
	csMount := corev1.VolumeMount{Name: "cert-example-com-my-signer", MountPath: "/managed/example.com-my.signer"}
	withVolume := strings.Replace(deployment, "      containers:\n", "      volumes:\n      - name: hub-kubeconfig\n        emptyDir: {}\n      containers:\n", 1)
	withMount := strings.Replace(deployment, "        image: quay.io/org/agent:v1\n", "        image: quay.io/org/agent:v1\n        volumeMounts:\n        - {name: x, mountPath: /managed/hub-kubeconfig}\n", 1)
	cases := []struct {
		name         string
		registration string
		manifest     string
		wantVolumes  []corev1.Volume
		wantMounts   []corev1.VolumeMount
		wantErr      string
	}{
		{name: "no registration", manifest: deployment},
		{name: "KubeClient", registration: kubeClientRegistration, manifest: deployment,
			wantVolumes: []corev1.Volume{hubVol}, wantMounts: []corev1.VolumeMount{hubMount}},
		{name: "CustomSigner", registration: customSigner, manifest: deployment,
			wantVolumes: []corev1.Volume{csVol}, wantMounts: []corev1.VolumeMount{csMount}},
		{name: "both, in registration order", registration: customSigner + kubeClientRegistration, manifest: deployment,
			wantVolumes: []corev1.Volume{csVol, hubVol}, wantMounts: []corev1.VolumeMount{csMount, hubMount}},
		{name: "CustomSigner without customSigner", registration: "- type: CustomSigner\n", manifest: deployment,
			wantErr: "spec.registration[0] has type CustomSigner but no customSigner"},
		{name: "volume name already used", registration: kubeClientRegistration, manifest: withVolume,
			wantErr: `field spec.template.spec.volumes[0].name: the pod already has a volume named "hub-kubeconfig"`},
		{name: "mount path already used", registration: kubeClientRegistration, manifest: withMount,
			wantErr: `container "main" already mounts something at /managed/hub-kubeconfig`},
		{name: "two KubeClient registrations", registration: kubeClientRegistration + kubeClientRegistration, manifest: deployment,
			wantErr: `already has a volume named "hub-kubeconfig"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tpl := parseTemplate(t, templateYAML(tc.registration, tc.manifest))
			res, err := Render(tpl, Cluster{Name: "cluster1"})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want it to contain %q", err, tc.wantErr)
				}
				if res != nil {
					t.Errorf("partial result on error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			spec := typedDeployment(t, res.Objects[0]).Spec.Template.Spec
			if diff := cmp.Diff(tc.wantVolumes, spec.Volumes); diff != "" {
				t.Errorf("volumes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantMounts, spec.Containers[0].VolumeMounts); diff != "" {
				t.Errorf("mounts (-want +got):\n%s", diff)
			}
			if len(spec.InitContainers[0].VolumeMounts) != 0 {
				t.Errorf("init container got mounts")
			}
		})
	}
}

func TestNodePlacementDecorator(t *testing.T) {
	tolerating := strings.Replace(deployment, "      containers:\n", "      nodeSelector: {disk: hdd}\n      tolerations: [{key: own, operator: Exists}]\n      containers:\n", 1)
	adcTol := []corev1.Toleration{{Key: "adc", Operator: corev1.TolerationOpExists}}
	ownTol := []corev1.Toleration{{Key: "own", Operator: corev1.TolerationOpExists}}
	cases := []struct {
		name         string
		adc          string
		wantSelector map[string]string
		wantTol      []corev1.Toleration
	}{
		{"no ADC keeps the template's", "", map[string]string{"disk": "hdd"}, ownTol},
		{"ADC without nodePlacement keeps the template's", noNS, map[string]string{"disk": "hdd"}, ownTol},
		{"selector and tolerations replace both", noNS + "\nnodePlacement:\n  nodeSelector: {zone: a}\n  tolerations: [{key: adc, operator: Exists}]",
			map[string]string{"zone": "a"}, adcTol},
		// As in OCM: a node selector alone also replaces (clears) the tolerations.
		{"selector alone clears tolerations", noNS + "\nnodePlacement:\n  nodeSelector: {zone: a}", map[string]string{"zone": "a"}, nil},
		// Difference from OCM, which ignores tolerations unless a node selector is set.
		{"tolerations alone are applied", noNS + "\nnodePlacement:\n  tolerations: [{key: adc, operator: Exists}]",
			map[string]string{"disk": "hdd"}, adcTol},
		{"empty nodePlacement changes nothing", noNS + "\nnodePlacement: {}", map[string]string{"disk": "hdd"}, ownTol},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tpl := parseTemplate(t, templateYAML("", tolerating, daemonSet))
			c := Cluster{Name: "cluster1"}
			if tc.adc != "" {
				c.DeploymentConfigs = adcs(t, tc.adc)
			}
			res := mustRender(t, tpl, c)
			spec := typedDeployment(t, res.Objects[0]).Spec.Template.Spec
			if diff := cmp.Diff(tc.wantSelector, spec.NodeSelector); diff != "" {
				t.Errorf("nodeSelector (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantTol, spec.Tolerations); diff != "" {
				t.Errorf("tolerations (-want +got):\n%s", diff)
			}
			// DaemonSets get the same placement.
			ds := typedDaemonSet(t, res.Objects[1]).Spec.Template.Spec
			if tc.adc != "" && strings.Contains(tc.adc, "tolerations") {
				if diff := cmp.Diff(adcTol, ds.Tolerations); diff != "" {
					t.Errorf("daemonset tolerations (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestImageDecorator(t *testing.T) {
	ann := `{"registries":[{"source":"quay.io/org","mirror":"annotation.example.com/org"}]}`
	cases := []struct {
		name       string
		adc        string
		annotation string
		wantMain   string // the Deployment's container
		wantInit   string
		wantSide   string // the DaemonSet's docker.io sidecar
	}{
		{"nothing", "", "", "quay.io/org/agent:v1", "quay.io/org/init:v1", "docker.io/library/busybox:1"},
		{"cluster annotation", "", ann, "annotation.example.com/org/agent:v1", "quay.io/org/init:v1", "docker.io/library/busybox:1"},
		{"ADC registries", noNS + "\nregistries: [{source: quay.io/org/, mirror: mirror.example.com/o/}]", "",
			"mirror.example.com/o/agent:v1", "quay.io/org/init:v1", "docker.io/library/busybox:1"},
		{"ADC registries replace the annotation's", noNS + "\nregistries: [{source: docker.io, mirror: m.example.com}]", ann,
			"quay.io/org/agent:v1", "quay.io/org/init:v1", "m.example.com/library/busybox:1"},
		{"ADC with an empty registries list disables the annotation", noNS + "\nregistries: []", ann,
			"quay.io/org/agent:v1", "quay.io/org/init:v1", "docker.io/library/busybox:1"},
		{"ADC without registries keeps the annotation's", noNS, ann,
			"annotation.example.com/org/agent:v1", "quay.io/org/init:v1", "docker.io/library/busybox:1"},
		{"empty source replaces the whole registry path", noNS + "\nregistries: [{source: '', mirror: flat.example.com}]", "",
			"flat.example.com/agent:v1", "quay.io/org/init:v1", "flat.example.com/busybox:1"},
		{"last matching registry wins", noNS + "\nregistries: [{source: quay.io, mirror: a.io}, {source: quay.io/org, mirror: b.io/x}]", "",
			"b.io/x/agent:v1", "quay.io/org/init:v1", "docker.io/library/busybox:1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tpl := parseTemplate(t, templateYAML("", deployment, daemonSet))
			c := Cluster{Name: "cluster1", ImageRegistries: tc.annotation}
			if tc.adc != "" {
				c.DeploymentConfigs = adcs(t, tc.adc)
			}
			res := mustRender(t, tpl, c)
			spec := typedDeployment(t, res.Objects[0]).Spec.Template.Spec
			if got := spec.Containers[0].Image; got != tc.wantMain {
				t.Errorf("main image %q, want %q", got, tc.wantMain)
			}
			if got := spec.InitContainers[0].Image; got != tc.wantInit {
				t.Errorf("init image %q, want %q (OCM leaves init containers alone)", got, tc.wantInit)
			}
			if got := typedDaemonSet(t, res.Objects[1]).Spec.Template.Spec.Containers[1].Image; got != tc.wantSide {
				t.Errorf("daemonset sidecar image %q, want %q", got, tc.wantSide)
			}
		})
	}
}

func TestImageRegistriesAnnotationInvalid(t *testing.T) {
	tpl := parseTemplate(t, templateYAML("", deployment))
	_, err := Render(tpl, Cluster{Name: "cluster1", ImageRegistries: `{"registries":`})
	if err == nil || !strings.Contains(err.Error(), "annotation open-cluster-management.io/image-registries of ManagedCluster cluster1 is not valid JSON") {
		t.Fatalf("got %v", err)
	}
}

func TestProxyDecorator(t *testing.T) {
	caEnv := env("CA_BUNDLE_FILE_PATH", "/managed/proxy-ca/ca-bundle.crt")
	caVol := corev1.Volume{Name: "proxy-ca-bundle", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "addon1-proxy-ca"}}}}
	caMount := corev1.VolumeMount{Name: "proxy-ca-bundle", MountPath: "/managed/proxy-ca"}
	cases := []struct {
		name        string
		adc         string
		wantEnv     []corev1.EnvVar
		wantVolumes []corev1.Volume
		wantMounts  []corev1.VolumeMount
		wantCMNS    string // namespace of the injected ConfigMap, "" for none
	}{
		{name: "no proxy", adc: noNS, wantEnv: env("CLUSTER_NAME", "cluster1")},
		{name: "http proxy", adc: noNS + "\nproxyConfig: {httpProxy: 'http://p:3128'}",
			wantEnv: env("CLUSTER_NAME", "cluster1", "HTTP_PROXY", "http://p:3128", "http_proxy", "http://p:3128")},
		{name: "all three and a CA bundle", adc: "agentInstallNamespace: ns1\nproxyConfig: {httpProxy: 'http://p', httpsProxy: 'https://p', noProxy: 'a,b', caBundle: " + b64("PEM") + "}",
			wantEnv: append(env("CLUSTER_NAME", "cluster1", "INSTALL_NAMESPACE", "ns1",
				"HTTP_PROXY", "http://p", "http_proxy", "http://p", "HTTPS_PROXY", "https://p", "https_proxy", "https://p",
				"NO_PROXY", "a,b", "no_proxy", "a,b"), caEnv...),
			wantVolumes: []corev1.Volume{caVol}, wantMounts: []corev1.VolumeMount{caMount}, wantCMNS: "ns1"},
		// As in OCM: a CA bundle without a proxy URL injects the ConfigMap but mounts nothing.
		{name: "CA bundle alone", adc: noNS + "\nproxyConfig: {caBundle: " + b64("PEM") + "}",
			wantEnv: env("CLUSTER_NAME", "cluster1"), wantCMNS: DefaultAgentInstallNamespace},
		{name: "noProxy alone", adc: noNS + "\nproxyConfig: {noProxy: x}",
			wantEnv: env("CLUSTER_NAME", "cluster1", "NO_PROXY", "x", "no_proxy", "x")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tpl := parseTemplate(t, templateYAML("", deployment))
			res := mustRender(t, tpl, Cluster{Name: "cluster1", DeploymentConfigs: adcs(t, tc.adc)})
			spec := typedDeployment(t, res.Objects[0]).Spec.Template.Spec
			if diff := cmp.Diff(tc.wantEnv, spec.Containers[0].Env); diff != "" {
				t.Errorf("env (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantVolumes, spec.Volumes); diff != "" {
				t.Errorf("volumes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantMounts, spec.Containers[0].VolumeMounts); diff != "" {
				t.Errorf("mounts (-want +got):\n%s", diff)
			}
			if tc.wantCMNS == "" {
				if len(res.Objects) != 1 {
					t.Errorf("got %d objects, want no injected ConfigMap", len(res.Objects))
				}
				return
			}
			if len(res.Objects) != 2 {
				t.Fatalf("got %d objects, want the Deployment and the proxy CA ConfigMap", len(res.Objects))
			}
			want := parseObject(t, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: addon1-proxy-ca\n  namespace: "+tc.wantCMNS+"\ndata:\n  ca-bundle.crt: PEM\n")
			if diff := cmp.Diff(want, res.Objects[1].Object); diff != "" {
				t.Errorf("ConfigMap (-want +got):\n%s", diff)
			}
		})
	}
}

func b64(s string) string {
	const enc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	// Tiny encoder for the test's 3-byte inputs, to keep the expectations readable.
	if len(s) != 3 {
		panic("b64 handles 3 bytes")
	}
	n := uint(s[0])<<16 | uint(s[1])<<8 | uint(s[2])
	return string([]byte{enc[n>>18&63], enc[n>>12&63], enc[n>>6&63], enc[n&63]})
}

func TestResourceRequirementsDecorator(t *testing.T) {
	res := func(mem string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(mem)}}
	}
	cases := []struct {
		name       string
		adc        string
		wantDeploy corev1.ResourceRequirements
		wantDSMain corev1.ResourceRequirements
		wantDSSide corev1.ResourceRequirements
		wantWarn   string
	}{
		{name: "none", adc: noNS},
		{name: "wildcard matches everything", adc: noNS + "\nresourceRequirements: [{containerID: '*:*:*', resources: {requests: {memory: 1Gi}}}]",
			wantDeploy: res("1Gi"), wantDSMain: res("1Gi"), wantDSSide: res("1Gi")},
		{name: "later entries win", adc: noNS + "\nresourceRequirements:\n- {containerID: '*:*:*', resources: {requests: {memory: 1Gi}}}\n- {containerID: 'daemonsets:node-agent:sidecar', resources: {requests: {memory: 2Gi}}}",
			wantDeploy: res("1Gi"), wantDSMain: res("1Gi"), wantDSSide: res("2Gi")},
		{name: "resource type must match", adc: noNS + "\nresourceRequirements: [{containerID: 'deployments:*:*', resources: {requests: {memory: 3Gi}}}]",
			wantDeploy: res("3Gi")},
		{name: "invalid pattern is skipped with a warning", adc: noNS + "\nresourceRequirements:\n- {containerID: '*:*:*', resources: {requests: {memory: 1Gi}}}\n- {containerID: 'deployments:a(:main', resources: {requests: {memory: 2Gi}}}",
			wantDeploy: res("1Gi"), wantDSMain: res("1Gi"), wantDSSide: res("1Gi"), wantWarn: "is not a valid pattern"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tpl := parseTemplate(t, templateYAML("", deployment, daemonSet))
			out := mustRender(t, tpl, Cluster{Name: "cluster1", DeploymentConfigs: adcs(t, tc.adc)})
			d := typedDeployment(t, out.Objects[0]).Spec.Template.Spec
			ds := typedDaemonSet(t, out.Objects[1]).Spec.Template.Spec
			for _, c := range []struct {
				what      string
				got, want corev1.ResourceRequirements
			}{{"deployment", d.Containers[0].Resources, tc.wantDeploy}, {"daemonset main", ds.Containers[0].Resources, tc.wantDSMain}, {"daemonset sidecar", ds.Containers[1].Resources, tc.wantDSSide}} {
				if !equality(c.got, c.want) {
					t.Errorf("%s resources %v, want %v", c.what, c.got, c.want)
				}
			}
			if tc.wantWarn != "" && !strings.Contains(strings.Join(out.Warnings, "\n"), tc.wantWarn) {
				t.Errorf("warnings %v, want one containing %q", out.Warnings, tc.wantWarn)
			}
		})
	}
	// A containerID without three parts fails like in OCM, with a message saying so.
	tpl := parseTemplate(t, templateYAML("", deployment))
	_, err := Render(tpl, Cluster{Name: "cluster1", DeploymentConfigs: adcs(t, "resourceRequirements: [{containerID: 'a:b', resources: {}}]")})
	if err == nil || !strings.Contains(err.Error(), "must have the form <resource>:<name>:<container>") {
		t.Errorf("got %v", err)
	}
}

func equality(a, b corev1.ResourceRequirements) bool {
	if len(a.Requests) != len(b.Requests) || len(a.Limits) != len(b.Limits) {
		return false
	}
	for k, v := range a.Requests {
		if w, ok := b.Requests[k]; !ok || v.Cmp(w) != 0 {
			return false
		}
	}
	return true
}

func TestNamespaceDecorator(t *testing.T) {
	objs := []string{
		deployment,
		"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: agent-ns",
		"apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: cr",
		"apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: rb\n  namespace: agent-ns\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: r}\nsubjects:\n- {kind: ServiceAccount, name: sa, namespace: agent-ns}\n- {kind: ServiceAccount, name: sa2, namespace: other}",
		"apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: crb\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cr}\nsubjects:\n- {kind: ServiceAccount, name: sa, namespace: agent-ns}",
	}
	type want struct{ deployNS, namespaceName, crNS, rbNS, rbSubj0, rbSubj1, crbSubj string }
	cases := []struct {
		name string
		adc  string
		want want
	}{
		{"no ADC keeps namespaces", "", want{"agent-ns", "agent-ns", "", "agent-ns", "agent-ns", "other", "agent-ns"}},
		{"explicit empty agentInstallNamespace keeps namespaces", noNS, want{"agent-ns", "agent-ns", "", "agent-ns", "agent-ns", "other", "agent-ns"}},
		{"omitted agentInstallNamespace defaults (CRD)", "customizedVariables: []",
			want{DefaultAgentInstallNamespace, DefaultAgentInstallNamespace, "", DefaultAgentInstallNamespace, DefaultAgentInstallNamespace, DefaultAgentInstallNamespace, DefaultAgentInstallNamespace}},
		{"agentInstallNamespace moves everything namespaced", "agentInstallNamespace: ns1", want{"ns1", "ns1", "", "ns1", "ns1", "ns1", "ns1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tpl := parseTemplate(t, templateYAML("", objs...))
			c := Cluster{Name: "cluster1"}
			if tc.adc != "" {
				c.DeploymentConfigs = adcs(t, tc.adc)
			}
			res := mustRender(t, tpl, c)
			subj := func(i, j int) string {
				return res.Objects[i].Object["subjects"].([]any)[j].(map[string]any)["namespace"].(string)
			}
			got := want{res.Objects[0].GetNamespace(), res.Objects[1].GetName(), res.Objects[2].GetNamespace(),
				res.Objects[3].GetNamespace(), subj(3, 0), subj(3, 1), subj(4, 0)}
			if got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
	tpl := parseTemplate(t, templateYAML("", "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: rb\n  namespace: x\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: r}"))
	_, err := Render(tpl, Cluster{Name: "cluster1", DeploymentConfigs: adcs(t, "agentInstallNamespace: ns1")})
	if err == nil || !strings.Contains(err.Error(), "manifest 0 (RoleBinding x/rb)") || !strings.Contains(err.Error(), "has no subjects") {
		t.Errorf("RoleBinding without subjects: got %v", err)
	}
}

func TestWorkloadThatDoesNotDecodeIsAnError(t *testing.T) {
	// OCM would skip decorating such a Deployment and deploy it without its hub kubeconfig.
	bad := strings.Replace(deployment, "spec:\n  selector:", "spec:\n  replicas: '{{REPLICAS}}'\n  selector:", 1)
	tpl := parseTemplate(t, templateYAML(kubeClientRegistration, bad))
	_, err := Render(tpl, Cluster{Name: "cluster1", DeploymentConfigs: adcs(t, noNS+"\ncustomizedVariables: [{name: REPLICAS, value: '2'}]")})
	if err == nil || !strings.Contains(err.Error(), "manifest 0 (Deployment agent-ns/agent): does not decode as apps/v1 Deployment") {
		t.Fatalf("got %v", err)
	}
}

func TestUnknownWorkloadFieldsWarn(t *testing.T) {
	typo := strings.Replace(deployment, "        image: quay.io/org/agent:v1\n", "        image: quay.io/org/agent:v1\n        imagePullPolcy: Always\n", 1)
	tpl := parseTemplate(t, templateYAML("", typo))
	res := mustRender(t, tpl, Cluster{Name: "cluster1"})
	if got := strings.Join(res.Warnings, "\n"); !strings.Contains(got, `unknown field "spec.template.spec.containers[0].imagePullPolcy"`) {
		t.Errorf("warnings %q", got)
	}
	if _, found := res.Objects[0].Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["imagePullPolcy"]; found {
		t.Errorf("the unknown field survived the typed round trip; OCM drops it")
	}
}

func TestUnknownWorkloadFieldsWarnDespiteTemplatedTypes(t *testing.T) {
	typo := strings.Replace(deployment, "        image: quay.io/org/agent:v1\n", "        image: quay.io/org/agent:v1\n        imagePullPolcy: Always\n", 1)
	typo = strings.Replace(typo, "spec:\n  selector:", "spec:\n  replicas: '{{R}}'\n  selector:", 1)
	r, err := Compile(parseTemplate(t, templateYAML("", typo)))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.Warnings(), "\n"); !strings.Contains(got, `unknown field "spec.template.spec.containers[0].imagePullPolcy"`) || strings.Contains(got, "replicas") {
		t.Errorf("warnings %q", got)
	}
}
