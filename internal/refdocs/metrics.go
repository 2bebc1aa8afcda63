package refdocs

import (
	"fmt"
	"go/ast"
	"regexp"
	"slices"
	"strings"
)

// Metric is a Prometheus metric the product's code defines.
type Metric struct {
	Name, Type, Help string
	Labels           []string
	Origin           Origin
}

// metricNameRE matches the names of addonops' own metrics.
var metricNameRE = regexp.MustCompile(`^addonops_[a-z0-9_]+$`)

var constructorTypes = map[string]string{
	"NewCounter": "counter", "NewCounterVec": "counter",
	"NewGauge": "gauge", "NewGaugeVec": "gauge",
	"NewHistogram": "histogram", "NewHistogramVec": "histogram",
	"NewSummary": "summary", "NewSummaryVec": "summary",
}

var valueTypes = map[string]string{"GaugeValue": "gauge", "CounterValue": "counter", "UntypedValue": "untyped"}

// Metrics finds the metric definitions of the product's code: prometheus.NewDesc (typed by the
// prometheus.MustNewConstMetric calls that use it) and the prometheus.New{Counter,Gauge,
// Histogram,Summary}[Vec] constructors, each with a literal name, help and label list. It fails
// on a definition it cannot read and on an addonops_ name in the code that no definition it read
// has (a metric defined some other way).
func (s *Source) Metrics() ([]Metric, error) {
	var out []Metric
	var problems []string
	for _, f := range s.Files {
		descVar := map[*ast.CallExpr]string{}
		descType := map[string]string{}
		ast.Inspect(f.AST, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ValueSpec:
				for i, v := range n.Values {
					if c, ok := v.(*ast.CallExpr); ok && i < len(n.Names) {
						descVar[c] = n.Names[i].Name
					}
				}
			case *ast.CallExpr:
				if fn := promCall(n); (fn == "MustNewConstMetric" || fn == "NewConstMetric") && len(n.Args) > 1 {
					id, ok1 := n.Args[0].(*ast.Ident)
					if vt, ok2 := n.Args[1].(*ast.SelectorExpr); ok1 && ok2 {
						descType[id.Name] = valueTypes[vt.Sel.Name]
					}
				}
			}
			return true
		})
		ast.Inspect(f.AST, func(n ast.Node) bool {
			c, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			fn := promCall(c)
			pos := fmt.Sprintf("%s:%d", f.Path, f.Fset.Position(c.Pos()).Line)
			var m Metric
			switch {
			case fn == "NewDesc" && len(c.Args) == 4:
				name, ok1 := stringValue(c.Args[0])
				help, ok2 := stringValue(c.Args[1])
				labels, ok3 := stringList(c.Args[2])
				if !ok1 || !ok2 || !ok3 {
					problems = append(problems, pos+": prometheus.NewDesc without a literal name, help and label list")
					return true
				}
				m = Metric{Name: name, Help: help, Labels: labels, Type: descType[descVar[c]]}
				if m.Type == "" {
					problems = append(problems, fmt.Sprintf("%s: %s: no prometheus.MustNewConstMetric(%s, ...) in the same file says its type", pos, name, descVar[c]))
				}
			case constructorTypes[fn] != "":
				m = Metric{Type: constructorTypes[fn]}
				opts, ok := c.Args[0].(*ast.CompositeLit)
				if !ok {
					problems = append(problems, pos+": prometheus."+fn+" without literal options")
					return true
				}
				for _, el := range opts.Elts {
					kv, ok := el.(*ast.KeyValueExpr)
					if !ok {
						continue
					}
					key, _ := kv.Key.(*ast.Ident)
					switch v, ok := stringValue(kv.Value); {
					case key == nil:
					case key.Name == "Name" && ok:
						m.Name = v
					case key.Name == "Help" && ok:
						m.Help = v
					case key.Name == "Namespace" || key.Name == "Subsystem" || key.Name == "Name" || key.Name == "Help":
						problems = append(problems, fmt.Sprintf("%s: prometheus.%s: %s is not a literal string (refdocs reads the name whole from Name)", pos, fn, key.Name))
					}
				}
				if strings.HasSuffix(fn, "Vec") {
					labels, ok := stringList(c.Args[1])
					if !ok {
						problems = append(problems, pos+": prometheus."+fn+" without a literal label list")
					}
					m.Labels = labels
				}
			default:
				return true
			}
			m.Origin = Origin{Pkg: f.Pkg, Const: descVar[c], Pos: pos}
			out = append(out, m)
			return true
		})
	}
	for name, origins := range s.StringsMatching(metricNameRE) {
		if !slices.ContainsFunc(out, func(m Metric) bool { return m.Name == name }) {
			problems = append(problems, fmt.Sprintf("%s: the metric name %s is in no definition refdocs reads (prometheus.NewDesc or a prometheus.New... constructor with literal options)", origins[0].Pos, name))
		}
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		return nil, fmt.Errorf("reading the metric definitions:\n  %s", strings.Join(problems, "\n  "))
	}
	slices.SortFunc(out, func(a, b Metric) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// promCall is the function name of a call prometheus.F(...), else "".
func promCall(c *ast.CallExpr) string {
	sel, ok := c.Fun.(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "prometheus" {
		return ""
	}
	return sel.Sel.Name
}

// metricNote is what a metric's definition does not say: how its value comes about and a query
// that uses it.
type metricNote struct {
	Source string
	Query  string
}

var metricNotes = map[string]metricNote{
	"addonops_rollout_clusters": {
		Source: "computed from the controller's caches at each scrape: one series per add-on, install placement and state, where the state is the Progressing reason of the cluster's ManagedClusterAddOn (see [conditions.md](conditions.md)), `NotInstalled` for a selected cluster without one yet and `Unknown` for one without a Progressing condition. Only the leader reports it.",
		Query:  `sum by (addon, state) (addonops_rollout_clusters{state=~".*Failed"})`,
	},
	"addonops_rollout_max_concurrency": {
		Source: "computed at each scrape from the placement's rollout strategy (`maxConcurrency` resolved against the clusters it selects), to compare with the clusters in flight.",
		Query:  `sum by (addon, placement) (addonops_rollout_clusters{state=~"Installing|Upgrading|RollingBack"}) / addonops_rollout_max_concurrency`,
	},
	"addonops_rollout_clusters_past_deadline": {
		Source: "computed at each scrape: clusters in flight (Installing, Upgrading, RollingBack) for longer than the placement's `progressDeadline`; 0 without one. The alert `AddonopsRolloutStuckPastDeadline` uses it.",
		Query:  `addonops_rollout_clusters_past_deadline > 0`,
	},
	"addonops_config_kind_forbidden": {
		Source: "computed at each scrape: 1 while the controller may not list or watch a config kind add-ons reference (their rollouts wait with `ConfigurationForbidden`), 0 for the other config kinds it watches. The alert `AddonopsConfigKindForbidden` uses it; grant list and watch with a ClusterRole labelled [`addonops.io/aggregate-to-controller`](annotations.md#addonopsioaggregate-to-controller).",
		Query:  `addonops_config_kind_forbidden == 1`,
	},
	"addonops_rollout_duration_seconds": {
		Source: "observed when the controller writes an install progression that went from a busy reason (Installing, Upgrading, RollingBack) to a final one; `result` is the final reason. Buckets from 10 s to about 11 h.",
		Query:  `histogram_quantile(0.9, sum by (le, addon) (rate(addonops_rollout_duration_seconds_bucket[1d])))`,
	},
	"addonops_rollout_failures_total": {
		Source: "incremented when the controller writes an install progression that ended InstallFailed, UpgradeFailed or RollbackFailed.",
		Query:  `increase(addonops_rollout_failures_total[1h])`,
	},
	"addonops_rollbacks_total": {
		Source: "incremented when the controller writes an install progression that went from RollingBack to RollbackSucceeded or RollbackFailed.",
		Query:  `increase(addonops_rollbacks_total[1d])`,
	},
	"addonops_notifications_total": {
		Source: "incremented by the notifier ([notifications](../guides/notifications.md)) once per rollout moment and destination it tried: `sent`, `failed` (the service returned an error), `timeout` (no answer within the send timeout), `dropped` (the send queue was full), `config-error` (the trigger is not defined, or the ConfigMap or Secret cannot be read).",
		Query:  `sum by (service, result) (increase(addonops_notifications_total{result!="sent"}[1h]))`,
	},
	"addonops_verification_runs_total": {
		Source: "incremented when a verification run of a rollout batch ends (annotation [`addonops.io/verification`](annotations.md#addonopsioverification)); `phase` is Successful, Failed or Inconclusive.",
		Query:  `sum by (addon, placement) (increase(addonops_verification_runs_total{phase!="Successful"}[1d]))`,
	},
	"addonops_verification_run_duration_seconds": {
		Source: "observed when a verification run of a rollout batch ends: from the run's start (the batch finished) to its verdict. Buckets from 1 s to about 4.5 h.",
		Query:  `histogram_quantile(0.9, sum by (le, addon) (rate(addonops_verification_run_duration_seconds_bucket[1d])))`,
	},
	"addonops_config_gc_deletions_total": {
		Source: "incremented by the garbage collection of superseded config versions (`--config-gc`) for each version it deleted, or with `--config-gc-dry-run` would have deleted (`dry_run=\"true\"`).",
		Query:  `sum by (resource) (increase(addonops_config_gc_deletions_total{dry_run="false"}[1d]))`,
	},
}

// MetricsPage generates docs/reference/metrics.md from the metric definitions and metricNotes.
func MetricsPage(src *Source, path string) (Page, error) {
	metrics, err := src.Metrics()
	if err != nil {
		return Page{}, err
	}
	var problems []string
	for _, m := range metrics {
		if _, ok := metricNotes[m.Name]; !ok {
			problems = append(problems, fmt.Sprintf("%s (%s) has no entry in internal/refdocs metricNotes: add how its value comes about and a query", m.Name, m.Origin.Pos))
		}
	}
	for name := range metricNotes {
		if !slices.ContainsFunc(metrics, func(m Metric) bool { return m.Name == name }) {
			problems = append(problems, fmt.Sprintf("internal/refdocs metricNotes describes %s, which the code no longer defines: remove it", name))
		}
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		return Page{}, fmt.Errorf("the metrics reference:\n  %s", strings.Join(problems, "\n  "))
	}
	var b strings.Builder
	b.WriteString(generatedBy("the Prometheus metric definitions (internal/rolloutmetrics, internal/addonrollout, internal/verifyrun) and internal/refdocs"))
	b.WriteString("# Metrics\n\n")
	b.WriteString("The controller serves Prometheus metrics on `--metrics-bind-address` (`:8443`, HTTPS; clients need a bearer token the hub " +
		"authenticates and authorises for the non-resource URL `/metrics`). The controller alone writes them, from its own caches " +
		"and decisions: a managed cluster can move a series only through the status of its own ManagedClusterAddOn, which counts for that cluster alone. " +
		"`config/components/prometheus` scrapes them and holds the alerts and a dashboard.\n\n")
	b.WriteString("The registry is controller-runtime's, so the same endpoint also serves its metrics and client-go's: " +
		"`controller_runtime_reconcile_total`, `controller_runtime_reconcile_errors_total`, `controller_runtime_reconcile_time_seconds`, " +
		"`workqueue_depth` and the other work queue metrics by queue name (`install`, `rollout`, `progress`), `rest_client_requests_total`, " +
		"and `leader_election_master_status` (1 on the leader; absent with `--leader-elect=false`), besides Go's and the process's.\n\n")
	b.WriteString("## Summary\n\n| metric | type | labels |\n|---|---|---|\n")
	for _, m := range metrics {
		fmt.Fprintf(&b, "| [%s](#%s) | %s | %s |\n", code(m.Name), anchor(m.Name), m.Type, labelList(m.Labels))
	}
	b.WriteString("\n## Metrics\n\n")
	for _, m := range metrics {
		n := metricNotes[m.Name]
		fmt.Fprintf(&b, "### %s\n\n", m.Name)
		fmt.Fprintf(&b, "%s, labels %s; defined in `%s`.\n\n", capitalize(m.Type), labelList(m.Labels), m.Origin.String())
		fmt.Fprintf(&b, "%s\n\n", prose(m.Help))
		fmt.Fprintf(&b, "How it comes about: %s\n\n", n.Source)
		fmt.Fprintf(&b, "Example: %s\n\n", code(n.Query))
	}
	return Page{Path: path, Content: []byte(strings.TrimRight(b.String(), "\n") + "\n")}, nil
}

func labelList(labels []string) string {
	if len(labels) == 0 {
		return "none"
	}
	out := make([]string, len(labels))
	for i, l := range labels {
		out[i] = code(l)
	}
	return strings.Join(out, ", ")
}
