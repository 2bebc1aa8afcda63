package render

import (
	"encoding/json"
	"errors"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	sigsjson "sigs.k8s.io/json"
)

// DecodeAddOnTemplate decodes an AddOnTemplate from JSON, rejecting unknown and duplicate fields
// with their paths, so a typo fails loudly instead of being dropped.
func DecodeAddOnTemplate(data []byte) (*addonv1alpha1.AddOnTemplate, error) {
	t := &addonv1alpha1.AddOnTemplate{}
	if err := decodeStrict(data, t); err != nil {
		return nil, err
	}
	return t, nil
}

// DecodeAddOnDeploymentConfig decodes an AddOnDeploymentConfig from JSON, rejecting unknown and
// duplicate fields, and applies the CRD's defaults as the API server would: an omitted
// spec.agentInstallNamespace becomes open-cluster-management-agent-addon, while an explicit ""
// stays "" (which keeps the template's own namespaces, ocm#1209). The typed Go struct cannot tell
// the two apart, so objects read from files must go through this function before rendering.
func DecodeAddOnDeploymentConfig(data []byte) (*addonv1alpha1.AddOnDeploymentConfig, error) {
	adc := &addonv1alpha1.AddOnDeploymentConfig{}
	if err := decodeStrict(data, adc); err != nil {
		return nil, err
	}
	var raw struct {
		Spec map[string]json.RawMessage `json:"spec"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, err
	}
	if _, set := raw.Spec["agentInstallNamespace"]; !set {
		adc.Spec.AgentInstallNamespace = DefaultAgentInstallNamespace
	}
	return adc, nil
}

func decodeStrict(data []byte, into any) error {
	strict, err := sigsjson.UnmarshalStrict(data, into)
	if err != nil {
		return err
	}
	if len(strict) > 0 {
		msgs := make([]string, len(strict))
		for i, e := range strict {
			msgs[i] = e.Error()
		}
		return errors.New(strings.Join(msgs, "; "))
	}
	return nil
}

// AgentInstallNamespace is the namespace OCM's registration controller records in the
// ManagedClusterAddOn status for a template add-on (templateagent
// TemplateAgentRegistrationNamespaceFunc): the namespace of the first Deployment in the template,
// else that of the first DaemonSet, else open-cluster-management-agent-addon; a non-empty ADC
// agentInstallNamespace overrides it. As in OCM the manifests are read before substitution.
func AgentInstallNamespace(t *addonv1alpha1.AddOnTemplate, adc *addonv1alpha1.AddOnDeploymentConfig) string {
	return InstallNamespaceWith(TemplateInstallNamespace(t), adc)
}

// TemplateInstallNamespace is AgentInstallNamespace without a deployment config: the template's
// part, which decodes its manifests (callers that ask often keep it per template version).
func TemplateInstallNamespace(t *addonv1alpha1.AddOnTemplate) string {
	ns := DefaultAgentInstallNamespace
	var deploymentNS, daemonSetNS string
	for _, m := range t.Spec.AgentSpec.Workload.Manifests {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(m.Raw); err != nil {
			continue
		}
		gvk := u.GroupVersionKind()
		if gvk.Group != appsv1.GroupName {
			continue
		}
		if gvk.Kind == "Deployment" && decodes(u, &appsv1.Deployment{}) {
			deploymentNS = u.GetNamespace()
			break
		}
		if gvk.Kind == "DaemonSet" && daemonSetNS == "" && decodes(u, &appsv1.DaemonSet{}) {
			daemonSetNS = u.GetNamespace()
		}
	}
	switch {
	case deploymentNS != "":
		ns = deploymentNS
	case daemonSetNS != "":
		ns = daemonSetNS
	}
	return ns
}

// InstallNamespaceWith is AgentInstallNamespace from the template's part (TemplateInstallNamespace).
func InstallNamespaceWith(templateNamespace string, adc *addonv1alpha1.AddOnDeploymentConfig) string {
	if adc != nil && adc.Spec.AgentInstallNamespace != "" {
		return adc.Spec.AgentInstallNamespace
	}
	return templateNamespace
}

func decodes(u *unstructured.Unstructured, into any) bool {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into) == nil
}
