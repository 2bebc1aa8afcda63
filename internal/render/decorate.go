package render

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
)

// Pod template decorators, applied to every Deployment and DaemonSet after substitution in OCM's
// order (OCM templateagent's decorators): env, registration volumes, node placement, image mirrors,
// proxy, resource requirements. Only regular containers are touched, never init containers, as in
// OCM.

// Paths and names OCM uses for what it injects.
const (
	hubKubeconfigVolume    = "hub-kubeconfig"
	hubKubeconfigMountPath = "/managed/hub-kubeconfig"
	proxyCAVolume          = "proxy-ca-bundle"
	proxyCAMountPath       = "/managed/proxy-ca"
	proxyCADataKey         = "ca-bundle.crt"
	proxyCAFilePathEnv     = "CA_BUNDLE_FILE_PATH"
)

// HubKubeconfigSecretName is the Secret holding a KubeClient registration's hub kubeconfig.
func HubKubeconfigSecretName(addonName string) string { return addonName + "-hub-kubeconfig" }

// CustomSignedSecretName is the Secret holding a CustomSigner registration's client certificate.
func CustomSignedSecretName(addonName, signerName string) string {
	return addonName + "-" + strings.ReplaceAll(signerName, "/", "-") + "-client-cert"
}

// ProxyCAConfigMapName is the ConfigMap OCM injects to carry the proxy CA bundle.
func ProxyCAConfigMapName(addonName string) string { return addonName + "-proxy-ca" }

func customSignerVolumeName(signerName string) string {
	return "cert-" + strings.ReplaceAll(strings.ReplaceAll(signerName, "/", "-"), ".", "-")
}

func customSignerMountPath(signerName string) string {
	return "/managed/" + strings.ReplaceAll(signerName, "/", "-")
}

// workload is the pod template of one Deployment or DaemonSet being decorated.
type workload struct {
	resource string // "deployments" or "daemonsets": the first part of an ADC containerID
	name     string
	pod      *corev1.PodTemplateSpec
}

// podError is a decorator failure, located relative to the pod template.
type podError struct {
	field string // relative to spec.template
	msg   string
}

func (e *podError) Error() string { return e.msg }

func (r *Renderer) decorate(v *values, w workload) error {
	r.injectEnv(w.pod, v.preset)
	if err := r.injectRegistrationVolumes(w.pod); err != nil {
		return err
	}
	applyNodePlacement(w.pod, v.nodePlacement)
	if v.hasRegistries {
		for i := range w.pod.Spec.Containers {
			c := &w.pod.Spec.Containers[i]
			c.Image = OverrideImage(v.registries, c.Image)
		}
	}
	if err := r.applyProxy(w.pod, v.proxy); err != nil {
		return err
	}
	applyResources(w, v)
	return nil
}

// injectEnv sets each variable in every container. OCM always appends, so a container that already
// defines the variable ends up with two entries and Kubernetes uses the last, OCM's. Here the
// container's own entry is set to OCM's value in place instead: the agent sees the same
// environment, without a duplicate entry (which the API server warns about).
func (r *Renderer) injectEnv(pod *corev1.PodTemplateSpec, vars []envVar) {
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
	vars:
		for _, e := range vars {
			for j := len(c.Env) - 1; j >= 0; j-- {
				if c.Env[j].Name == e.name {
					c.Env[j].Value = e.value
					c.Env[j].ValueFrom = nil
					continue vars
				}
			}
			c.Env = append(c.Env, corev1.EnvVar{Name: e.name, Value: e.value})
		}
	}
}

// addVolume adds a volume to the pod and a mount of it to every container. OCM appends blindly;
// a name or mount path the template already uses would make the API server reject the workload
// when the ManifestWork is applied, so here it is an error at render time.
func addVolumes(pod *corev1.PodTemplateSpec, volumes []corev1.Volume, mounts []corev1.VolumeMount, why string) error {
	for _, vol := range volumes {
		for k, existing := range pod.Spec.Volumes {
			if existing.Name == vol.Name {
				return &podError{field: fmt.Sprintf("spec.volumes[%d].name", k), msg: fmt.Sprintf(
					"the pod already has a volume named %q, which OCM injects for %s; rename the template's volume", vol.Name, why)}
			}
		}
		pod.Spec.Volumes = append(pod.Spec.Volumes, vol)
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		for _, m := range mounts {
			for k, existing := range c.VolumeMounts {
				if existing.MountPath == m.MountPath {
					return &podError{field: fmt.Sprintf("spec.containers[%d].volumeMounts[%d].mountPath", i, k), msg: fmt.Sprintf(
						"container %q already mounts something at %s, where OCM mounts %s for %s; use another path",
						c.Name, m.MountPath, m.Name, why)}
				}
			}
			c.VolumeMounts = append(c.VolumeMounts, m)
		}
	}
	return nil
}

func (r *Renderer) injectRegistrationVolumes(pod *corev1.PodTemplateSpec) error {
	for i, reg := range r.template.Spec.Registration {
		var vol corev1.Volume
		var mount corev1.VolumeMount
		switch reg.Type {
		case addonv1alpha1.RegistrationTypeKubeClient:
			vol = secretVolume(hubKubeconfigVolume, HubKubeconfigSecretName(r.addonName))
			mount = corev1.VolumeMount{Name: hubKubeconfigVolume, MountPath: hubKubeconfigMountPath}
		case addonv1alpha1.RegistrationTypeCustomSigner:
			if reg.CustomSigner == nil {
				return &Error{Manifest: -1, Field: fmt.Sprintf("spec.registration[%d]", i), Message: fmt.Sprintf(
					"spec.registration[%d] has type CustomSigner but no customSigner: set customSigner.signerName and customSigner.signingCA", i)}
			}
			signer := reg.CustomSigner.SignerName
			vol = secretVolume(customSignerVolumeName(signer), CustomSignedSecretName(r.addonName, signer))
			mount = corev1.VolumeMount{Name: vol.Name, MountPath: customSignerMountPath(signer)}
		default:
			continue
		}
		why := fmt.Sprintf("spec.registration[%d] (%s)", i, reg.Type)
		if err := addVolumes(pod, []corev1.Volume{vol}, []corev1.VolumeMount{mount}, why); err != nil {
			return err
		}
	}
	return nil
}

func secretVolume(name, secret string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret}}}
}

// applyNodePlacement replaces the node selector when the ADC sets one, as OCM does. OCM replaces the
// tolerations only when the ADC also sets a node selector (it tests NodeSelector twice), so an ADC
// with tolerations alone is ignored; here tolerations are applied whenever the ADC sets them too.
func applyNodePlacement(pod *corev1.PodTemplateSpec, np *addonv1alpha1.NodePlacement) {
	if np == nil {
		return
	}
	if np.NodeSelector != nil {
		pod.Spec.NodeSelector = np.NodeSelector
	}
	if np.NodeSelector != nil || np.Tolerations != nil {
		pod.Spec.Tolerations = np.Tolerations
	}
}

// applyProxy adds the proxy env variables the ADC sets and, when it also has a CA bundle, the
// CA bundle env, volume and mount (OCM proxyHandler and caBundleDecorator).
func (r *Renderer) applyProxy(pod *corev1.PodTemplateSpec, pc *addonv1alpha1.ProxyConfig) error {
	if pc == nil {
		return nil
	}
	var env []envVar
	if pc.HTTPProxy != "" {
		env = append(env, envVar{"HTTP_PROXY", pc.HTTPProxy}, envVar{"http_proxy", pc.HTTPProxy})
	}
	if pc.HTTPSProxy != "" {
		env = append(env, envVar{"HTTPS_PROXY", pc.HTTPSProxy}, envVar{"https_proxy", pc.HTTPSProxy})
	}
	if pc.NoProxy != "" {
		env = append(env, envVar{"NO_PROXY", pc.NoProxy}, envVar{"no_proxy", pc.NoProxy})
	}
	if len(env) == 0 {
		return nil
	}
	r.injectEnv(pod, env)
	if len(pc.CABundle) == 0 {
		return nil
	}
	r.injectEnv(pod, []envVar{{proxyCAFilePathEnv, proxyCAMountPath + "/" + proxyCADataKey}})
	vol := corev1.Volume{Name: proxyCAVolume, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: ProxyCAConfigMapName(r.addonName)},
	}}}
	return addVolumes(pod, []corev1.Volume{vol}, []corev1.VolumeMount{{Name: proxyCAVolume, MountPath: proxyCAMountPath}},
		"the AddOnDeploymentConfig's proxyConfig.caBundle")
}

// applyResources replaces a container's resources with those of the last ADC resourceRequirements
// entry whose containerID matches "<resource>:<workload>:<container>".
func applyResources(w workload, v *values) {
	if !v.hasResourceRules {
		return
	}
	for i := range w.pod.Spec.Containers {
		c := &w.pod.Spec.Containers[i]
		id := w.resource + ":" + w.name + ":" + c.Name
		for j := len(v.resourceRules) - 1; j >= 0; j-- {
			rule := v.resourceRules[j]
			if rule.re == nil || !rule.re.MatchString(id) {
				continue
			}
			c.Resources = *rule.resources.DeepCopy()
			break
		}
	}
}
