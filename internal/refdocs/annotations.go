package refdocs

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// annotationRE matches the names addonops gives annotations, labels and the like.
var annotationRE = regexp.MustCompile(`^addonops\.io/[a-z0-9][a-z0-9.-]*$`)

// Section of the annotations page.
const (
	sectionDay2     = "Day-2 requests on a ClusterManagementAddOn"
	sectionRollout  = "Rollout settings on a ClusterManagementAddOn"
	sectionConfigs  = "Config versions"
	sectionOwned    = "Written by the controller"
	sectionRBAC     = "Permissions (deployment manifests)"
	sectionFunction = "Build-time functions"
)

var sections = []string{sectionRollout, sectionDay2, sectionConfigs, sectionOwned, sectionRBAC, sectionFunction}

// annotationDoc is what the code does not say about an addonops.io/ name.
type annotationDoc struct {
	Section string
	// What: annotation, label, field or apiVersion, and on which objects.
	What string
	// Writers: who writes it; Trust: what the controller concludes from it, and whom it believes.
	Writers, Trust string
	Meaning        string
	Values         string
	// Example is a YAML fragment embedded in a minimal object of ExampleKind at ExamplePath (the
	// documentation test validates it: readmetest's fragment marker); with no ExampleKind it is a
	// whole object (the object marker); empty: InlineExample, a sentence, stands for it.
	Example, ExampleKind, ExamplePath string
	InlineExample                     string
}

var annotationDocs = map[string]annotationDoc{
	"addonops.io/canary-placements": {
		Section: sectionRollout, What: "annotation on a ClusterManagementAddOn",
		Writers: "Git (the `rollout-strategy` function writes and checks it at build time) or a person",
		Trust:   "the add-on's desired state: the controller follows it. No managed cluster can write it.",
		Meaning: "Gates install placements behind canary placements: a gated placement moves its clusters only to the configs every cluster of its canary placement applied successfully and healthy (reason `WaitingForCanary` meanwhile). `addonops promote` passes the gate for one version.",
		Values:  `a JSON object from gated placement to canary placement, both "<namespace>/<name>". A value that does not parse makes the gated placements Degraded (InvalidCanaryPlacements).`,
		Example: "annotations:\n  addonops.io/canary-placements: '{\"default/prod\": \"default/canary\"}'\n", ExampleKind: "ClusterManagementAddOn", ExamplePath: "metadata",
	},
	"addonops.io/health-check": {
		Section: sectionRollout, What: "annotation on a ClusterManagementAddOn",
		Writers: "Git or a person",
		Trust:   "the add-on's desired state: the controller follows it.",
		Meaning: "Turns the health gate off: a cluster is then done once its ManifestWorks are applied, without the ManagedClusterAddOn's `Available=True` and without a health soak. Add-ons whose health prober type is None skip the health part anyway.",
		Values:  `"none"; any other value, or none, keeps the gate.`,
		Example: "annotations:\n  addonops.io/health-check: none\n", ExampleKind: "ClusterManagementAddOn", ExamplePath: "metadata",
	},
	"addonops.io/health-soak": {
		Section: sectionRollout, What: "annotation on a ClusterManagementAddOn",
		Writers: "Git or a person",
		Trust:   "the add-on's desired state: the controller follows it.",
		Meaning: "How long the add-on must stay healthy, after every ManifestWork of a cluster reported the desired configs, before the cluster counts as done (the MCA condition `HealthSoak`). Every batch and the canary take at least this long.",
		Values:  `a Go duration ("30s", "2m"); default 10s; "0s": no soak, but health must still be seen after the works were ready. A value that is not a non-negative duration is ignored (the default applies) and named in the Progressing message of every soaking cluster.`,
		Example: "annotations:\n  addonops.io/health-soak: 2m\n", ExampleKind: "ClusterManagementAddOn", ExamplePath: "metadata",
	},
	"addonops.io/pause": {
		Section: sectionDay2, What: "annotation on a ClusterManagementAddOn",
		Writers: "`addonops pause` and `addonops resume`, or the same annotation committed in Git or set with kubectl",
		Trust:   "a person's request: the controller follows it. Its events name the field manager that set it (not an authenticated identity: the hub's audit log has that).",
		Meaning: "Pauses a placement's rollout: no new cluster starts (`Configured=False`), clusters in flight finish; the placement reports `Paused` (Suspended) until the annotation no longer names it. Applies to forward rollouts and rollbacks alike.",
		Values:  `"*" for every placement, or a comma-separated list of "<namespace>/<name>". A value that does not parse pauses every placement (a person asked to stop; a typo must not keep the rollout going).`,
		Example: "annotations:\n  addonops.io/pause: default/prod\n", ExampleKind: "ClusterManagementAddOn", ExamplePath: "metadata",
	},
	"addonops.io/promote": {
		Section: sectionDay2, What: "annotation on a ClusterManagementAddOn",
		Writers: "`addonops promote`, or the same annotation committed in Git",
		Trust:   "a person's request: the controller follows it for the version it names only.",
		Meaning: "Passes a gated placement's canary gate for one version, without waiting for the canary (event `CanaryPromoted`). It counts only while that version is the placement's desired version and the canary has not passed it.",
		Values:  `a JSON object from placement "<namespace>/<name>" to a version id (as ` + "`addonops history`" + ` shows it in VERSION). A value that does not parse is ignored until it is fixed.`,
		Example: "annotations:\n  addonops.io/promote: '{\"default/prod\": \"c77f2ce289\"}'\n", ExampleKind: "ClusterManagementAddOn", ExamplePath: "metadata",
	},
	"addonops.io/maintenance-windows": {
		Section: sectionRollout, What: "annotation on a ClusterManagementAddOn",
		Writers: "Git (the `rollout-strategy` function checks it at build time) or a person",
		Trust:   "the add-on's desired state: the controller follows it. No managed cluster can write it.",
		Meaning: "Allow and deny windows, as Argo CD's sync windows: an active deny window closes a placement; otherwise, if an allow window applies to it, it is open only while one is active. While closed, no cluster starts a new version, clusters in flight finish, and the placement reports `WaitingForWindow` (Progressing) with the window and when the next one opens; a rollback or abort passes unless the window says `rollbacks: false`. A value that does not parse, or names a placement the add-on does not install, holds every placement (`InvalidMaintenanceWindows`, Degraded): a typo in a freeze lets nothing through.",
		Values:  "a JSON list of windows: `kind` (`allow` or `deny`), `schedule` (five-field cron), `duration` (`2h`), `timeZone` (IANA, default `UTC`), `placements` (`ns/name` list, default every install placement), `rollbacks` (default `true`).",
		Example: "annotations:\n  addonops.io/maintenance-windows: '[{\"kind\": \"deny\", \"schedule\": \"0 18 * * 5\", \"duration\": \"63h\", \"timeZone\": \"Europe/Berlin\"}]'\n", ExampleKind: "ClusterManagementAddOn", ExamplePath: "metadata",
	},
	"addonops.io/verification": {
		Section: sectionRollout, What: "annotation on a ClusterManagementAddOn",
		Writers: "Git or a person",
		Trust:   "the add-on's desired state: the controller follows it. No managed cluster can write it.",
		Meaning: "Verification gates ([guide](../guides/verification.md)): after each batch of a placement's rollout (its clusters done, health soak included), before the next batch starts, the controller runs the named Argo Rollouts `AnalysisTemplate` (or `ClusterAnalysisTemplate`) with the batch's clusters, the add-on, the version id and the placement as arguments; a canary placement's last batch passes it before the placements it gates adopt the version. `Successful` lets the next batch start (`Verifying` meanwhile); `Failed` fails the batch's clusters (they count toward `maxFailures`; `auto-abort` reverts them); `Inconclusive` (an unreachable Prometheus included) holds the placement (`VerificationInconclusive`) until `addonops promote` passes it or `addonops abort` reverts it. Optionally a `continuous` template runs over and over while the placement rolls out a version, over every cluster told it so far, one run at a time: `Failed` fails every cluster told the version, `Inconclusive` holds the placement as a batch's run does. Rollbacks and aborts are never held. Each run is in the version history (`addonops history`) and events. A value that does not parse, or names a placement the add-on does not install, holds every placement (`InvalidVerification`, Degraded).",
		Values:  "a JSON list, at most one entry per placement: `placement` (`ns/name`, or `*` for every placement without its own entry), `template` (the template's name), `kind` (`AnalysisTemplate`, default, or `ClusterAnalysisTemplate`), `namespace` (of an AnalysisTemplate; default the placement's), `args` (values for the template's `spec.args`; `clusters`, `addon`, `version`, `placement` and `batch` are set by the controller), `continuous` (optional: `template`, `kind`, `namespace`, `args` as above, and `interval`, the time from a run's end to the next run's start, default `1m`).",
		Example: "annotations:\n  addonops.io/verification: '[{\"placement\": \"default/canary\", \"template\": \"error-rate\", \"args\": {\"threshold\": \"0.05\"}}]'\n", ExampleKind: "ClusterManagementAddOn", ExamplePath: "metadata",
	},
	"addonops.io/window-override": {
		Section: sectionDay2, What: "annotation on a ClusterManagementAddOn",
		Writers: "`addonops override-window`, or the same annotation committed in Git",
		Trust:   "a person's request: the controller follows it for the version it names only (event `WindowOverridden`, naming who set it).",
		Meaning: "Lets one version of a placement start its batches while the placement's maintenance windows are closed. A newer version waits for the windows again.",
		Values:  `a JSON object from placement "<namespace>/<name>" to a version id (as ` + "`addonops history`" + ` shows it in VERSION). A value that does not parse is ignored until it is fixed.`,
		Example: "annotations:\n  addonops.io/window-override: '{\"default/prod\": \"c77f2ce289\"}'\n", ExampleKind: "ClusterManagementAddOn", ExamplePath: "metadata",
	},
	"addonops.io/retry": {
		Section: sectionDay2, What: "annotation on a ClusterManagementAddOn",
		Writers: "`addonops retry`, or the same annotation committed in Git",
		Trust:   "a person's request: each token acts once (the version history records the tokens it acted on).",
		Meaning: "Restarts a rollout that stopped on `maxFailures`, same version: every cluster that failed or timed out before the request goes again, paced by the strategy, with a new `progressDeadline` (event `RetryStarted`). A placement whose rollout has not stopped ignores it.",
		Values:  `a JSON object from placement "<namespace>/<name>" to a token; a new token is a new request (the CLI writes the time, RFC 3339 with nanoseconds). A value that does not parse is ignored until it is fixed.`,
		Example: "annotations:\n  addonops.io/retry: '{\"default/prod\": \"2026-03-02T09:10:00.123456789Z\"}'\n", ExampleKind: "ClusterManagementAddOn", ExamplePath: "metadata",
	},
	"addonops.io/abort": {
		Section: sectionDay2, What: "annotation on a ClusterManagementAddOn",
		Writers: "`addonops abort`, or the same annotation committed in Git",
		Trust:   "a person's request: the controller follows it for the version it names only.",
		Meaning: "Returns the clusters that moved to the named version to the placement's last known good version, like a rollback paced by `maxConcurrency`; the placement reports `Aborting`, then `Aborted` (Degraded) until its desired configs change. Acts even while the placement is paused.",
		Values:  `a JSON object from placement "<namespace>/<name>" to the version id to abort. A value that does not parse is ignored until it is fixed.`,
		Example: "annotations:\n  addonops.io/abort: '{\"default/prod\": \"c77f2ce289\"}'\n", ExampleKind: "ClusterManagementAddOn", ExamplePath: "metadata",
	},
	"addonops.io/auto-abort": {
		Section: sectionDay2, What: "annotation on a ClusterManagementAddOn",
		Writers: "`addonops abort --auto=true|false`, or the same annotation committed in Git",
		Trust:   "a person's policy: the controller follows it.",
		Meaning: "Aborts a forward rollout by itself when it stops on `maxFailures`, as `addonops.io/abort` would.",
		Values:  `"true" or "false"; any other value leaves automatic abort off until it is fixed.`,
		Example: "annotations:\n  addonops.io/auto-abort: \"true\"\n", ExampleKind: "ClusterManagementAddOn", ExamplePath: "metadata",
	},
	"addonops.io/hash-suffix": {
		Section: sectionConfigs, What: "annotation on a config object in the Git package (the `config-hash` function's input)",
		Writers: "Git",
		Trust:   "read only by `config-hash` at build time; the controller never reads it.",
		Meaning: "Opts one object in or out of content-hash naming, whatever the function config's kinds say.",
		Values:  `"true" or "false".`,
		Example: "apiVersion: addon.open-cluster-management.io/v1alpha1\nkind: AddOnDeploymentConfig\nmetadata:\n  name: hello-config\n  namespace: default\n  annotations:\n    addonops.io/hash-suffix: \"false\"\nspec: {}\n",
	},
	"addonops.io/base-name": {
		Section: sectionConfigs, What: "annotation on a config version (AddOnTemplate, AddOnDeploymentConfig, any config kind `config-hash` renames)",
		Writers: "the `config-hash` function at build time; applied from Git",
		Trust:   "links the versions of one config: the controller's config garbage collection (`--config-gc`) deletes only objects with this and `addonops.io/content-hash` that nothing references and a newer version of which is in use; `addonops status` and `history` show it.",
		Meaning: "The config's name before the content-hash suffix.",
		Values:  "a name.",
		Example: "apiVersion: addon.open-cluster-management.io/v1alpha1\nkind: AddOnDeploymentConfig\nmetadata:\n  name: hello-config-9e8d7c\n  namespace: default\n  annotations:\n    addonops.io/base-name: hello-config\n    addonops.io/content-hash: 9e8d7c2f0b5a4e1d8c3b6a7f0e9d2c1b4a5f6e7d8c9b0a1f2e3d4c5b6a7f8e9d\nspec: {}\n",
	},
	"addonops.io/content-hash": {
		Section: sectionConfigs, What: "annotation on a config version",
		Writers:       "the `config-hash` function at build time; applied from Git",
		Trust:         "with `addonops.io/base-name`, marks an object the config garbage collection may delete once superseded.",
		Meaning:       "The full content hash the name's suffix came from (the spec hash OCM computes for the config).",
		Values:        "a hex SHA-256.",
		InlineExample: "See [`addonops.io/base-name`](#addonopsiobase-name).",
	},
	"addonops.io/created-by": {
		Section: sectionOwned, What: "label on a ManagedClusterAddOn",
		Writers: "the controller, on the MCAs it creates from install placements; a person may add it",
		Trust:   "the controller deletes an MCA whose cluster left the placements only when it carries this label (value `addonops-controller`), so users' and GitOps' MCAs are never deleted.",
		Meaning: "Marks the MCAs this controller created. MCAs OCM's addon-manager created before a move to addonops lack it: label them to let addonops delete them.",
		Values:  "`addonops-controller`.",
		Example: "apiVersion: addon.open-cluster-management.io/v1alpha1\nkind: ManagedClusterAddOn\nmetadata:\n  name: hello\n  namespace: cluster1\n  labels:\n    addonops.io/created-by: addonops-controller\nspec: {}\n",
	},
	"addonops.io/history-of": {
		Section: sectionOwned, What: "label on the version history ConfigMap `addonops-history-<addon>` in the controller's namespace",
		Writers: "the controller only",
		Trust:   "the controller and `addonops history` read only the ConfigMap the ClusterManagementAddOn owns (by UID) in the controller's namespace; the label is for finding it.",
		Meaning: "Whose version history the ConfigMap is: `kubectl get configmaps -A -l addonops.io/history-of=ADDON`.",
		Values:  `the add-on's name, or "h-" and a hash of it when the name is no valid label value.`,
		Example: "metadata:\n  name: addonops-history-hello\n  labels:\n    addonops.io/history-of: hello\n  annotations:\n    addonops.io/addon: hello\n", ExampleKind: "ConfigMap",
	},
	"addonops.io/addon": {
		Section: sectionOwned, What: "annotation on the version history ConfigMap",
		Writers:       "the controller only",
		Trust:         "informational; the owner reference decides whose history it is.",
		Meaning:       "The add-on's full name (a label value is limited to 63 characters).",
		Values:        "the ClusterManagementAddOn's name.",
		InlineExample: "See [`addonops.io/history-of`](#addonopsiohistory-of).",
	},
	"addonops.io/manifest-sha256": {
		Section: sectionOwned, What: "top-level field of a manifest stand-in in the controller's memory",
		Writers:       "the controller's hub cache (`--deploy-templates`)",
		Trust:         "never written to the API server: the cache keeps a stand-in (the manifest's head and this digest) instead of each manifest of a ManifestWork.",
		Meaning:       "The SHA-256 of a manifest's content, to tell whether a work carries the desired manifests without keeping their bytes.",
		Values:        "a hex SHA-256.",
		InlineExample: "Not visible on the hub.",
	},
	"addonops.io/aggregate-to-controller": {
		Section: sectionRBAC, What: "label on a ClusterRole",
		Writers: "the hub's administrator (the deployment manifests in `config/`)",
		Trust:   "grants the controller the ClusterRole's rules: Kubernetes aggregates them into the controller's ClusterRole.",
		Meaning: "Lets the controller read custom config kinds add-ons reference (list and watch; delete for the config garbage collection). Without it their rollouts wait with `ConfigurationForbidden`.",
		Values:  `"true".`,
		Example: "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: addonops-read-example-configs\n  labels:\n    addonops.io/aggregate-to-controller: \"true\"\nrules:\n- apiGroups: [example.io]\n  resources: [exampleconfigs]\n  verbs: [list, watch]\n",
	},
	"addonops.io/aggregate-to-deploy-templates": {
		Section: sectionRBAC, What: "label on a ClusterRole",
		Writers: "the hub's administrator",
		Trust:   "with `--deploy-templates`, what template add-ons may name: the controller binds only roles it was granted `bind` on by name, and approves and signs only for signers it was granted.",
		Meaning: "Aggregates the ClusterRole's rules (bind on named roles, approve and sign on named signers) into the controller's `addonops-controller-deploy-templates-grants`.",
		Values:  `"true".`,
		Example: "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: addonops-grants-example\n  labels:\n    addonops.io/aggregate-to-deploy-templates: \"true\"\nrules:\n- apiGroups: [rbac.authorization.k8s.io]\n  resources: [clusterroles]\n  verbs: [bind]\n  resourceNames: [example-agent]\n",
	},
	"addonops.io/template-manifest": {
		Section: sectionFunction, What: "annotation on a manifest in the `addon-template` function's input",
		Writers: "Git",
		Trust:   "read only by `addon-template generate` at build time, which removes it from the manifests it puts into the AddOnTemplate.",
		Meaning: "Overrides the function's selection for one object: \"true\" puts it into the AddOnTemplate even when it looks hub-side (and silences the Secret warning), \"false\" leaves it out.",
		Values:  `"true" or "false".`,
		Example: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: agent-settings\n  namespace: default\n  annotations:\n    addonops.io/template-manifest: \"true\"\ndata:\n  level: info\n",
	},
	"addonops.io/preview-cluster": {
		Section: sectionFunction, What: "annotation on the objects `addon-template` previews",
		Writers:       "the `addon-template` function",
		Trust:         "output of a preview, never applied to a hub.",
		Meaning:       "The cluster a previewed object was rendered for; a new preview replaces the objects of an earlier one.",
		Values:        "a ManagedCluster's name.",
		InlineExample: "Set on every object a preview emits, with `addonops.io/preview-template`.",
	},
	"addonops.io/preview-template": {
		Section: sectionFunction, What: "annotation on the objects `addon-template` previews",
		Writers:       "the `addon-template` function",
		Trust:         "output of a preview, never applied to a hub.",
		Meaning:       "The AddOnTemplate a previewed object was rendered from.",
		Values:        "an AddOnTemplate's name.",
		InlineExample: "Set on every object a preview emits, with `addonops.io/preview-cluster`.",
	},
	"addonops.io/v1alpha1": {
		Section: sectionFunction, What: "apiVersion of the functions' configs (ConfigHash, AddOnTemplateFunction, RolloutStrategyFunction) and of the HubSnapshot file of `addonops snapshot`",
		Writers:       "Git; `addonops snapshot`",
		Trust:         "read only by the functions at build time and by `addonops plan --snapshot`, which refuses a snapshot of another version.",
		Meaning:       "The API version of the KRM functions' function configs (see the functions' READMEs) and of the hub snapshot `addonops plan` reads (docs/guides/plan.md).",
		Values:        "`addonops.io/v1alpha1`.",
		InlineExample: "Each function's README shows its config: [config-hash](../../functions/config-hash/README.md), [addon-template](../../functions/addon-template/README.md), [rollout-strategy](../../functions/rollout-strategy/README.md).",
	},
}

// AnnotationsPage generates docs/reference/annotations.md: every addonops.io/ name of the product's
// code, described by annotationDocs. It fails when the code has a name annotationDocs does not
// describe, or annotationDocs one the code no longer has.
func AnnotationsPage(src *Source, path string) (Page, error) {
	names := src.StringsMatching(annotationRE)
	var problems []string
	for name, origins := range names {
		if _, ok := annotationDocs[name]; !ok {
			problems = append(problems, fmt.Sprintf("%s (%s) has no entry in internal/refdocs annotationDocs: say what it is, who writes it and what the controller believes of it", name, origins[0]))
		}
	}
	for name, d := range annotationDocs {
		if _, ok := names[name]; !ok {
			problems = append(problems, fmt.Sprintf("internal/refdocs annotationDocs describes %s, which the code no longer has: remove it", name))
		}
		if !slices.Contains(sections, d.Section) {
			problems = append(problems, fmt.Sprintf("internal/refdocs annotationDocs: %s has no known section", name))
		}
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		return Page{}, fmt.Errorf("the annotations reference:\n  %s", strings.Join(problems, "\n  "))
	}
	var b strings.Builder
	b.WriteString(generatedBy("the addonops.io/ names in the code and internal/refdocs"))
	b.WriteString("# Annotations and labels\n\n")
	b.WriteString("Every `addonops.io/` name the product uses: annotations and labels, and the few other names in that domain. " +
		"For each: what it is on, who writes it, what the controller believes of it, its values and an example. " +
		"The rule behind the trust column: a managed cluster is believed only about itself, and none of these is " +
		"writable by a managed cluster's agents (see [the trust model](../trust-model.md)).\n\n")
	b.WriteString("| name | on | written by |\n|---|---|---|\n")
	byName := slices.Sorted(func(yield func(string) bool) {
		for n := range annotationDocs {
			if !yield(n) {
				return
			}
		}
	})
	for _, sec := range sections {
		for _, n := range byName {
			if d := annotationDocs[n]; d.Section == sec {
				fmt.Fprintf(&b, "| [%s](#%s) | %s | %s |\n", code(n), anchor(n), md(d.What, true), md(d.Writers, true))
			}
		}
	}
	b.WriteString("\n")
	for _, sec := range sections {
		fmt.Fprintf(&b, "## %s\n\n", sec)
		for _, n := range byName {
			d := annotationDocs[n]
			if d.Section != sec {
				continue
			}
			var where []string
			for _, o := range names[n] {
				if s := o.String(); !slices.Contains(where, s) && o.Const != "" {
					where = append(where, s)
				}
			}
			if len(where) == 0 {
				where = append(where, names[n][0].Pos)
			}
			fmt.Fprintf(&b, "### %s\n\n", n)
			fmt.Fprintf(&b, "%s. %s\n\n", capitalize(md(d.What, false)), md(d.Meaning, false))
			fmt.Fprintf(&b, "- **Values**: %s\n", md(d.Values, false))
			fmt.Fprintf(&b, "- **Written by**: %s.\n", md(d.Writers, false))
			fmt.Fprintf(&b, "- **What the controller believes**: %s\n", md(d.Trust, false))
			fmt.Fprintf(&b, "- **In the code**: %s.\n\n", strings.Join(codeAll(where), ", "))
			switch {
			case d.Example != "" && d.ExampleKind != "":
				marker := "fragment " + d.ExampleKind
				if d.ExamplePath != "" {
					marker += " " + d.ExamplePath
				}
				fmt.Fprintf(&b, "<!-- readme-test: %s -->\n```yaml\n%s```\n\n", marker, d.Example)
			case d.Example != "":
				fmt.Fprintf(&b, "<!-- readme-test: object -->\n```yaml\n%s```\n\n", d.Example)
			default:
				fmt.Fprintf(&b, "%s\n\n", d.InlineExample)
			}
		}
	}
	return Page{Path: path, Content: []byte(strings.TrimRight(b.String(), "\n") + "\n")}, nil
}

func codeAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = code(s)
	}
	return out
}
