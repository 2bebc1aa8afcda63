package verification

import (
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Template is an AnalysisTemplate or ClusterAnalysisTemplate as far as addonops reads it: its
// arguments and its metrics, still with their {{args.NAME}} placeholders (Resolve fills them).
type Template struct {
	Key  TemplateKey
	Args []Arg
	// metrics are spec.metrics as the object holds them; Decode checked that they resolve into
	// Metrics.
	metrics []any
}

// Arg is one of the template's spec.args: a name and, optionally, a default value.
type Arg struct {
	Name  string
	Value *string
}

// Metric is one of the template's metrics with its arguments resolved: the fields of Argo
// Rollouts' Metric addonops supports.
type Metric struct {
	Name string
	// Interval between measurements; 0 takes one measurement (Count must then be 0 or 1).
	Interval time.Duration
	// Count is how many measurements are taken (Argo Rollouts' effective count: 1 without an
	// interval). A metric without a count but with an interval would measure for ever, which a
	// gate cannot: Decode refuses it.
	Count int
	// FailureLimit is how many failed measurements are tolerated (-1: any number); default 0.
	FailureLimit int
	// InconclusiveLimit is how many inconclusive measurements are tolerated; default 0.
	InconclusiveLimit int
	// ConsecutiveErrorLimit is how many measurement errors in a row are tolerated; default 4.
	ConsecutiveErrorLimit int
	// InitialDelay is how long after the run starts the first measurement is taken.
	InitialDelay time.Duration
	// SuccessCondition and FailureCondition are expr expressions over result.
	SuccessCondition string
	FailureCondition string
	// Exactly one provider.
	Prometheus *Prometheus
	Web        *Web
}

// Prometheus is the prometheus provider: an instant query against the Prometheus HTTP API.
type Prometheus struct {
	Address string
	Query   string
	// Timeout of the query; 0: the runner's default.
	Timeout time.Duration
}

// Web is the web provider: an HTTP request whose JSON response (a value at JSONPath) is the result.
type Web struct {
	URL     string
	Method  string
	Headers []Header
	// Body is sent with POST, PUT and PATCH; a POST without a body sends the batch as JSON.
	Body string
	// JSONPath selects the result in the response, in kubectl's JSONPath syntax ("{$.verdict}");
	// "{$}" (the whole response) when empty.
	JSONPath string
	// Timeout of the request; 0: the runner's default.
	Timeout time.Duration
}

// Header is one request header.
type Header struct {
	Key, Value string
}

// DefaultConsecutiveErrorLimit is Argo Rollouts' default consecutiveErrorLimit.
const DefaultConsecutiveErrorLimit = 4

// DefaultErrorRetryInterval is how soon a measurement that ended in an error is taken again when
// the metric has no interval (Argo Rollouts' default).
const DefaultErrorRetryInterval = 10 * time.Second

// Decode reads a template object (as unstructured data: the hub may not serve Argo Rollouts'
// types, and addonops does not link them) into a Template. Every field addonops does not support is
// refused by name: a gate that silently ignored a field (a job provider, a dryRun, valueFrom) would
// pass versions its author meant to stop.
func Decode(obj map[string]any) (Template, error) {
	var t Template
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	if apiVersion != Group+"/"+Version || (kind != KindAnalysisTemplate && kind != KindClusterAnalysisTemplate) {
		return t, fmt.Errorf("want apiVersion %s/%s and kind %s or %s, got %q %q", Group, Version, KindAnalysisTemplate, KindClusterAnalysisTemplate, apiVersion, kind)
	}
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	ns, _ := meta["namespace"].(string)
	t.Key = TemplateKey{Kind: kind, Namespace: ns, Name: name}
	spec, ok := obj["spec"].(map[string]any)
	if !ok {
		return t, fmt.Errorf("%s: spec is missing", t.Key)
	}
	if err := onlyFields("spec", spec, "args", "metrics"); err != nil {
		return t, fmt.Errorf("%s: %w", t.Key, err)
	}
	if raw, ok := spec["args"]; ok {
		list, ok := raw.([]any)
		if !ok {
			return t, fmt.Errorf("%s: spec.args: want a list", t.Key)
		}
		for i, a := range list {
			am, ok := a.(map[string]any)
			if !ok {
				return t, fmt.Errorf("%s: spec.args[%d]: want an object", t.Key, i)
			}
			if err := onlyFields(fmt.Sprintf("spec.args[%d]", i), am, "name", "value"); err != nil {
				return t, fmt.Errorf("%s: %w", t.Key, err)
			}
			n, _ := am["name"].(string)
			if n == "" {
				return t, fmt.Errorf("%s: spec.args[%d]: name is empty", t.Key, i)
			}
			arg := Arg{Name: n}
			if v, ok := am["value"]; ok {
				s, ok := v.(string)
				if !ok {
					return t, fmt.Errorf("%s: spec.args[%d] (%s): value: want a string", t.Key, i, n)
				}
				arg.Value = &s
			}
			t.Args = append(t.Args, arg)
		}
	}
	metrics, ok := spec["metrics"].([]any)
	if !ok || len(metrics) == 0 {
		return t, fmt.Errorf("%s: spec.metrics: want a list of at least one metric", t.Key)
	}
	t.metrics = metrics
	// Every argument a placeholder value, so the structure is checked now (at build time too).
	placeholders := map[string]string{}
	for _, a := range t.Args {
		placeholders[a.Name] = "1"
	}
	for n := range builtinArgNames {
		placeholders[n] = "1"
	}
	if _, err := t.resolve(placeholders); err != nil {
		return t, err
	}
	return t, nil
}

// Resolve fills the template's arguments and returns its metrics. A value is, by precedence, the
// batch's built-in argument (BuiltinArgs), the reference's args, the template's default; an
// argument without one is an error.
func (t Template) Resolve(builtin, refArgs map[string]string) ([]Metric, error) {
	values := map[string]string{}
	for _, a := range t.Args {
		if a.Value != nil {
			values[a.Name] = *a.Value
		}
	}
	maps.Copy(values, refArgs)
	maps.Copy(values, builtin)
	declared := map[string]bool{}
	var missing []string
	for _, a := range t.Args {
		declared[a.Name] = true
		if _, ok := values[a.Name]; !ok {
			missing = append(missing, a.Name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s: spec.args %s have no value: give them one in annotation %s (args) or in the template", t.Key, strings.Join(missing, ", "), Annotation)
	}
	for n := range refArgs {
		if !declared[n] {
			return nil, fmt.Errorf("%s: annotation %s gives args.%s, which the template does not declare in spec.args", t.Key, Annotation, n)
		}
	}
	return t.resolve(values)
}

var argRef = regexp.MustCompile(`\{\{\s*args\.([A-Za-z0-9_.-]+)\s*\}\}`)

func (t Template) resolve(values map[string]string) ([]Metric, error) {
	declared := map[string]bool{}
	for _, a := range t.Args {
		declared[a.Name] = true
	}
	var out []Metric
	names := map[string]bool{}
	for i, raw := range t.metrics {
		var unknown []string
		sub := func(s string) string {
			return argRef.ReplaceAllStringFunc(s, func(m string) string {
				n := argRef.FindStringSubmatch(m)[1]
				v, ok := values[n]
				if !ok || !declared[n] {
					unknown = append(unknown, n)
					return m
				}
				return v
			})
		}
		resolved := substitute(raw, sub)
		if len(unknown) > 0 {
			slices.Sort(unknown)
			return nil, fmt.Errorf("%s: spec.metrics[%d]: {{args.%s}} names no argument of spec.args (declare it there; the built-in ones are %s)",
				t.Key, i, strings.Join(slices.Compact(unknown), "}}, {{args."), strings.Join(slices.Sorted(maps.Keys(builtinArgNames)), ", "))
		}
		m, err := decodeMetric(resolved)
		if err != nil {
			return nil, fmt.Errorf("%s: spec.metrics[%d]: %w", t.Key, i, err)
		}
		if names[m.Name] {
			return nil, fmt.Errorf("%s: spec.metrics[%d]: another metric is named %q", t.Key, i, m.Name)
		}
		names[m.Name] = true
		out = append(out, m)
	}
	return out, nil
}

// substitute returns v with sub applied to every string in it.
func substitute(v any, sub func(string) string) any {
	switch x := v.(type) {
	case string:
		return sub(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = substitute(e, sub)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = substitute(e, sub)
		}
		return out
	}
	return v
}

func decodeMetric(raw any) (Metric, error) {
	var m Metric
	mm, ok := raw.(map[string]any)
	if !ok {
		return m, fmt.Errorf("want an object")
	}
	if err := onlyFields("metric", mm, "name", "interval", "count", "failureLimit", "inconclusiveLimit", "consecutiveErrorLimit",
		"successCondition", "failureCondition", "initialDelay", "provider"); err != nil {
		return m, err
	}
	m.Name, _ = mm["name"].(string)
	if m.Name == "" {
		return m, fmt.Errorf("name is empty")
	}
	var err error
	field := func(f func() error) {
		if err == nil {
			err = f()
		}
	}
	field(func() (e error) { m.Interval, e = durationField(mm, "interval"); return })
	field(func() (e error) { m.InitialDelay, e = durationField(mm, "initialDelay"); return })
	field(func() (e error) { m.Count, e = intField(mm, "count", 0); return })
	field(func() (e error) { m.FailureLimit, e = intField(mm, "failureLimit", 0); return })
	field(func() (e error) { m.InconclusiveLimit, e = intField(mm, "inconclusiveLimit", 0); return })
	field(func() (e error) {
		m.ConsecutiveErrorLimit, e = intField(mm, "consecutiveErrorLimit", DefaultConsecutiveErrorLimit)
		return
	})
	if err != nil {
		return m, fmt.Errorf("metric %s: %w", m.Name, err)
	}
	switch {
	case m.Count < 0:
		return m, fmt.Errorf("metric %s: count %d: want 1 or more", m.Name, m.Count)
	case m.Count > 1 && m.Interval == 0:
		return m, fmt.Errorf("metric %s: count %d without an interval: set interval (the time between measurements)", m.Name, m.Count)
	case m.Count == 0 && m.Interval > 0:
		return m, fmt.Errorf("metric %s: interval without count would measure for ever; a gate must end: set count", m.Name)
	case m.Count == 0:
		m.Count = 1
	}
	if m.FailureLimit < -1 || m.InconclusiveLimit < 0 || m.ConsecutiveErrorLimit < 0 {
		return m, fmt.Errorf("metric %s: failureLimit (-1 for any), inconclusiveLimit and consecutiveErrorLimit must not be negative", m.Name)
	}
	m.SuccessCondition, _ = mm["successCondition"].(string)
	m.FailureCondition, _ = mm["failureCondition"].(string)
	for _, c := range []struct{ field, expr string }{{"successCondition", m.SuccessCondition}, {"failureCondition", m.FailureCondition}} {
		if c.expr == "" {
			continue
		}
		if err := CompileCondition(c.expr); err != nil {
			return m, fmt.Errorf("metric %s: %s: %w", m.Name, c.field, err)
		}
	}
	prov, ok := mm["provider"].(map[string]any)
	if !ok {
		return m, fmt.Errorf("metric %s: provider: want prometheus or web", m.Name)
	}
	if len(prov) != 1 {
		return m, fmt.Errorf("metric %s: provider: want exactly one of prometheus, web; got %s", m.Name, strings.Join(slices.Sorted(maps.Keys(prov)), ", "))
	}
	switch {
	case prov["prometheus"] != nil:
		p, err := decodePrometheus(prov["prometheus"])
		if err != nil {
			return m, fmt.Errorf("metric %s: provider.prometheus: %w", m.Name, err)
		}
		m.Prometheus = p
	case prov["web"] != nil:
		w, err := decodeWeb(prov["web"])
		if err != nil {
			return m, fmt.Errorf("metric %s: provider.web: %w", m.Name, err)
		}
		m.Web = w
	default:
		return m, fmt.Errorf("metric %s: provider %s is not supported by addonops (supported: prometheus, web)", m.Name, strings.Join(slices.Sorted(maps.Keys(prov)), ", "))
	}
	return m, nil
}

func decodePrometheus(raw any) (*Prometheus, error) {
	pm, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("want an object")
	}
	if err := onlyFields("prometheus", pm, "address", "query", "timeout"); err != nil {
		return nil, err
	}
	p := &Prometheus{}
	p.Address, _ = pm["address"].(string)
	p.Query, _ = pm["query"].(string)
	if p.Address == "" {
		return nil, fmt.Errorf("address is empty: the Prometheus server's URL, as http://prometheus.monitoring:9090")
	}
	if _, err := parseHTTPURL(p.Address); err != nil {
		return nil, fmt.Errorf("address: %w", err)
	}
	if strings.TrimSpace(p.Query) == "" {
		return nil, fmt.Errorf("query is empty")
	}
	// Argo Rollouts' timeout is in seconds.
	secs, err := intField(pm, "timeout", 0)
	if err != nil || secs < 0 {
		return nil, fmt.Errorf("timeout: want a number of seconds")
	}
	p.Timeout = time.Duration(secs) * time.Second
	return p, nil
}

func decodeWeb(raw any) (*Web, error) {
	wm, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("want an object")
	}
	if err := onlyFields("web", wm, "url", "method", "headers", "body", "jsonPath", "timeoutSeconds"); err != nil {
		return nil, err
	}
	w := &Web{}
	w.URL, _ = wm["url"].(string)
	if _, err := parseHTTPURL(w.URL); err != nil {
		return nil, fmt.Errorf("url: %w", err)
	}
	w.Method, _ = wm["method"].(string)
	if w.Method == "" {
		w.Method = http.MethodGet
	}
	switch w.Method {
	case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch:
	default:
		return nil, fmt.Errorf("method %q: want GET, POST, PUT or PATCH", w.Method)
	}
	w.Body, _ = wm["body"].(string)
	if w.Body != "" && w.Method == http.MethodGet {
		return nil, fmt.Errorf("body with method GET: use POST, PUT or PATCH")
	}
	w.JSONPath, _ = wm["jsonPath"].(string)
	if w.JSONPath == "" {
		w.JSONPath = "{$}"
	}
	if _, err := newJSONPath(w.JSONPath); err != nil {
		return nil, fmt.Errorf("jsonPath %q: %w", w.JSONPath, err)
	}
	secs, err := intField(wm, "timeoutSeconds", 0)
	if err != nil || secs < 0 {
		return nil, fmt.Errorf("timeoutSeconds: want a number of seconds")
	}
	w.Timeout = time.Duration(secs) * time.Second
	if raw, ok := wm["headers"]; ok {
		list, ok := raw.([]any)
		if !ok {
			return nil, fmt.Errorf("headers: want a list of {key, value}")
		}
		for i, h := range list {
			hm, ok := h.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("headers[%d]: want {key, value}", i)
			}
			if err := onlyFields(fmt.Sprintf("headers[%d]", i), hm, "key", "value"); err != nil {
				return nil, err
			}
			k, _ := hm["key"].(string)
			v, _ := hm["value"].(string)
			if k == "" {
				return nil, fmt.Errorf("headers[%d]: key is empty", i)
			}
			w.Headers = append(w.Headers, Header{Key: k, Value: v})
		}
	}
	return w, nil
}

func parseHTTPURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%q: want an http:// or https:// URL", s)
	}
	return u, nil
}

// onlyFields refuses the fields of m that addonops does not support, naming them.
func onlyFields(where string, m map[string]any, allowed ...string) error {
	var extra []string
	for k := range m {
		if !slices.Contains(allowed, k) {
			extra = append(extra, k)
		}
	}
	if len(extra) == 0 {
		return nil
	}
	slices.Sort(extra)
	return fmt.Errorf("%s: %s not supported by addonops (supported: %s); see docs/guides/verification.md", where, strings.Join(extra, ", "), strings.Join(allowed, ", "))
}

func durationField(m map[string]any, key string) (time.Duration, error) {
	raw, ok := m[key]
	if !ok {
		return 0, nil
	}
	s, ok := raw.(string)
	if !ok {
		return 0, fmt.Errorf("%s: want a duration such as \"30s\"", key)
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%s %q: want a duration such as \"30s\"", key, s)
	}
	return d, nil
}

// intField reads an integer field that may be written as a number or a string (Argo Rollouts'
// IntOrString fields take arguments: count: "{{args.count}}").
func intField(m map[string]any, key string, def int) (int, error) {
	raw, ok := m[key]
	if !ok {
		return def, nil
	}
	switch v := raw.(type) {
	case int64:
		return int(v), nil
	case int:
		return v, nil
	case float64:
		if v != math.Trunc(v) {
			return 0, fmt.Errorf("%s: want an integer, got %v", key, v)
		}
		return int(v), nil
	case string:
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return 0, fmt.Errorf("%s %q: want an integer", key, v)
		}
		return n, nil
	}
	return 0, fmt.Errorf("%s: want an integer", key)
}
