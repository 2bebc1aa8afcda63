package render

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
)

// Names and defaults OCM gives a template add-on (OCM pkg/addon/templateagent).
const (
	// VarClusterName is the managed cluster's name. Built in, cannot be overridden.
	VarClusterName = "CLUSTER_NAME"
	// VarHubKubeconfig is where the agent finds its hub kubeconfig. Defined only when the template
	// has spec.registration; customizedVariables may override it.
	VarHubKubeconfig = "HUB_KUBECONFIG"
	// VarInstallNamespace is the AddOnDeploymentConfig's agentInstallNamespace. Built in, defined
	// only when that field is non-empty.
	VarInstallNamespace = "INSTALL_NAMESPACE"

	// DefaultHubKubeconfig is HUB_KUBECONFIG's default value.
	DefaultHubKubeconfig = "/managed/hub-kubeconfig/kubeconfig"
	// DefaultAgentInstallNamespace is the CRD default of AddOnDeploymentConfig
	// spec.agentInstallNamespace and the namespace OCM gives the injected proxy CA ConfigMap.
	DefaultAgentInstallNamespace = "open-cluster-management-agent-addon"

	// ImageRegistriesAnnotation is the ManagedCluster annotation holding image mirrors.
	ImageRegistriesAnnotation = "open-cluster-management.io/image-registries"
)

// reservedNames are OCM's private value keys: values under these names steer decorators and are
// never template variables, so a customized variable may not use them.
var reservedNames = map[string]bool{
	"__NODE_PLACEMENT":        true,
	"__REGISTRIES":            true,
	"__INSTALL_NAMESPACE":     true,
	"__PROXY":                 true,
	"__RESOURCE_REQUIREMENTS": true,
}

// identifier is the syntax of a variable name: a C identifier, the pattern the
// AddOnDeploymentConfig CRD enforces on customizedVariables names.
var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// IsIdentifier reports whether name is a valid variable name.
func IsIdentifier(name string) bool { return identifier.MatchString(name) }

type envVar struct{ name, value string }

type resourceRule struct {
	pattern   string
	re        *regexp.Regexp // nil when pattern does not compile (OCM skips such rules)
	resources corev1.ResourceRequirements
}

// values is everything one cluster's rendering depends on, derived the way OCM's getValues does.
type values struct {
	// vars are the variables a manifest may use: defaults, then customizedVariables, then built-ins.
	vars map[string]string
	// preset are the variables injected as env into every workload container, in OCM's order:
	// default keys (sorted) then built-in keys (sorted).
	preset []envVar

	// The private values that drive decorators.
	nodePlacement    *addonv1alpha1.NodePlacement
	registries       []addonv1alpha1.ImageMirror
	hasRegistries    bool
	installNamespace string
	proxy            *addonv1alpha1.ProxyConfig
	resourceRules    []resourceRule
	hasResourceRules bool
}

// computeValues reproduces OCM's value layers (templateagent values.go): default values, then each
// getValuesFunc (cluster image-registries annotation, then the first AddOnDeploymentConfig),
// then built-ins, later layers winning.
func computeValues(t *addonv1alpha1.AddOnTemplate, c Cluster) (*values, []string, error) {
	var warnings []string
	v := &values{vars: map[string]string{}}

	// Default values, overridable.
	hasHubKubeconfig := t.Spec.Registration != nil
	if hasHubKubeconfig {
		v.vars[VarHubKubeconfig] = DefaultHubKubeconfig
	}

	// getValuesFunc 1: the cluster's image-registries annotation.
	if c.ImageRegistries != "" {
		var ann struct {
			Registries []addonv1alpha1.ImageMirror `json:"registries"`
		}
		if err := json.Unmarshal([]byte(c.ImageRegistries), &ann); err != nil {
			return nil, nil, &Error{Manifest: -1, Message: fmt.Sprintf(
				"annotation %s of ManagedCluster %s is not valid JSON of the form "+
					`{"registries":[{"mirror":"...","source":"..."}]}: %v`, ImageRegistriesAnnotation, c.Name, err)}
		}
		if len(ann.Registries) > 0 {
			v.registries, v.hasRegistries = ann.Registries, true
		}
	}

	// getValuesFunc 2: the AddOnDeploymentConfig. OCM's add-on framework renders a template add-on
	// with the first AddOnDeploymentConfig of the ManagedClusterAddOn's status only.
	if len(c.DeploymentConfigs) > 1 {
		var ignored []string
		for _, adc := range c.DeploymentConfigs[1:] {
			ignored = append(ignored, describeADC(adc))
		}
		warnings = append(warnings, fmt.Sprintf("cluster %s: only the first AddOnDeploymentConfig (%s) is used, as in OCM; ignored: %s",
			c.Name, describeADC(c.DeploymentConfigs[0]), strings.Join(ignored, ", ")))
	}
	if len(c.DeploymentConfigs) > 0 && c.DeploymentConfigs[0] != nil {
		adc := c.DeploymentConfigs[0]
		spec := &adc.Spec
		for i, cv := range spec.CustomizedVariables {
			if reservedNames[cv.Name] {
				return nil, nil, &Error{Manifest: -1, Message: fmt.Sprintf(
					"%s: spec.customizedVariables[%d].name %q is reserved by OCM for internal values; rename the variable",
					describeADC(adc), i, cv.Name)}
			}
			v.vars[cv.Name] = cv.Value
		}
		if spec.NodePlacement != nil {
			v.nodePlacement = spec.NodePlacement
		}
		if spec.Registries != nil {
			// Replaces the annotation's registries entirely, even when empty, as in OCM.
			v.registries, v.hasRegistries = spec.Registries, true
		}
		if spec.AgentInstallNamespace != "" {
			v.installNamespace = spec.AgentInstallNamespace
		}
		pc := spec.ProxyConfig
		if pc.HTTPProxy != "" || pc.HTTPSProxy != "" || pc.NoProxy != "" || len(pc.CABundle) > 0 {
			v.proxy = &pc
		}
		if spec.ResourceRequirements != nil {
			v.hasResourceRules = true
			for i, rr := range spec.ResourceRequirements {
				parts := strings.Split(rr.ContainerID, ":")
				if len(parts) != 3 {
					return nil, nil, &Error{Manifest: -1, Message: fmt.Sprintf(
						"%s: spec.resourceRequirements[%d].containerID %q must have the form <resource>:<name>:<container>",
						describeADC(adc), i, rr.ContainerID)}
				}
				for j, p := range parts {
					if p == "*" {
						parts[j] = ".+"
					}
				}
				// As in OCM the parts are used as regular expression text; "*" means ".+".
				pattern := fmt.Sprintf("^%s:%s:%s$", parts[0], parts[1], parts[2])
				re, err := regexp.Compile(pattern)
				if err != nil {
					warnings = append(warnings, fmt.Sprintf("%s: spec.resourceRequirements[%d].containerID %q is not a valid pattern and is ignored, as OCM ignores it: %v",
						describeADC(adc), i, rr.ContainerID, err))
				}
				v.resourceRules = append(v.resourceRules, resourceRule{pattern: pattern, re: re, resources: rr.Resources})
			}
		}
	}

	// Built-in values, not overridable.
	v.vars[VarClusterName] = c.Name
	if v.installNamespace != "" {
		v.vars[VarInstallNamespace] = v.installNamespace
	}

	if hasHubKubeconfig {
		v.preset = append(v.preset, envVar{VarHubKubeconfig, v.vars[VarHubKubeconfig]})
	}
	v.preset = append(v.preset, envVar{VarClusterName, c.Name})
	if v.installNamespace != "" {
		v.preset = append(v.preset, envVar{VarInstallNamespace, v.installNamespace})
	}
	return v, warnings, nil
}

// checkUTF8 rejects values that cannot be carried by JSON unchanged: Kubernetes objects are JSON,
// and encoding/json would replace invalid bytes with U+FFFD, so the value would not round-trip.
func checkUTF8(name, value string) error {
	if !utf8.ValidString(value) {
		return &Error{Manifest: -1, Message: fmt.Sprintf("the value of variable %s is not valid UTF-8 and cannot be put in a Kubernetes object", name)}
	}
	return nil
}

func describeADC(adc *addonv1alpha1.AddOnDeploymentConfig) string {
	if adc == nil {
		return "AddOnDeploymentConfig <nil>"
	}
	if adc.Namespace == "" {
		return "AddOnDeploymentConfig " + adc.Name
	}
	return "AddOnDeploymentConfig " + adc.Namespace + "/" + adc.Name
}

// OverrideImage applies image mirrors to an image reference exactly as OCM's add-on framework does
// (addonfactory.OverrideImage): every registry is tried in order and the last one that changes the
// image wins. A registry without source replaces everything up to the last "/" with the mirror.
func OverrideImage(registries []addonv1alpha1.ImageMirror, image string) string {
	out := image
	for _, r := range registries {
		if name := overrideImageDirectly(r.Source, r.Mirror, image); name != image {
			out = name
		}
	}
	return out
}

func overrideImageDirectly(source, mirror, image string) string {
	source = strings.TrimSuffix(source, "/")
	mirror = strings.TrimSuffix(mirror, "/")
	last := image[strings.LastIndex(image, "/")+1:]
	if source == "" {
		if mirror == "" {
			return last
		}
		return mirror + "/" + last
	}
	if !strings.HasPrefix(image, source) {
		return image
	}
	return mirror + strings.TrimPrefix(image, source)
}
