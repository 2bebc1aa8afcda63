package verifyrun

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/addonops/addonops/internal/verification"
)

// measurer takes the measurements of one batch's metrics.
type measurer struct {
	client  *http.Client
	timeout time.Duration
	batch   verification.Batch
	now     func() time.Time
}

func (m measurer) measure(ctx context.Context, metric verification.Metric) (any, string, error) {
	switch {
	case metric.Prometheus != nil:
		return m.prometheus(ctx, metric.Prometheus)
	case metric.Web != nil:
		return m.web(ctx, metric.Web)
	}
	return nil, "", fmt.Errorf("metric %s has no provider", metric.Name)
}

func (m measurer) timeoutOf(d time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return m.timeout
}

// prometheus runs an instant query through the Prometheus HTTP API. As Argo Rollouts' prometheus
// provider: a vector is a list of its sample values (result[0]), a scalar a number; any other type
// is an error.
func (m measurer) prometheus(ctx context.Context, p *verification.Prometheus) (any, string, error) {
	client, err := api.NewClient(api.Config{Address: p.Address, Client: m.client})
	if err != nil {
		return nil, "", fmt.Errorf("prometheus %s: %w", p.Address, err)
	}
	ctx, cancel := context.WithTimeout(ctx, m.timeoutOf(p.Timeout))
	defer cancel()
	value, _, err := promv1.NewAPI(client).Query(ctx, p.Query, m.now())
	if err != nil {
		return nil, "", fmt.Errorf("prometheus %s: query %q: %w", p.Address, p.Query, err)
	}
	switch v := value.(type) {
	case model.Vector:
		values := make([]float64, 0, len(v))
		texts := make([]string, 0, len(v))
		for _, s := range v {
			if s == nil {
				continue
			}
			values = append(values, float64(s.Value))
			texts = append(texts, s.Value.String())
		}
		return values, "[" + strings.Join(texts, ",") + "]", nil
	case *model.Scalar:
		return float64(v.Value), v.Value.String(), nil
	}
	return nil, "", fmt.Errorf("prometheus %s: query %q returned a %s; want a vector or a scalar", p.Address, p.Query, value.Type())
}

// maxBody bounds how much of a web response is read.
const maxBody = 1 << 20

// web sends the web provider's request: a POST without a body sends the batch as JSON. A response
// outside 2xx is an error (as in Argo Rollouts); a 2xx response's JSON, at the metric's jsonPath, is
// the result.
func (m measurer) web(ctx context.Context, w *verification.Web) (any, string, error) {
	ctx, cancel := context.WithTimeout(ctx, m.timeoutOf(w.Timeout))
	defer cancel()
	var body io.Reader
	payload := w.Body
	if payload == "" && w.Method == http.MethodPost {
		b, err := json.Marshal(m.batch)
		if err != nil {
			return nil, "", err
		}
		payload = string(b)
	}
	if payload != "" {
		body = strings.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, w.Method, w.URL, body)
	if err != nil {
		return nil, "", fmt.Errorf("web %s: %w", w.URL, err)
	}
	if payload != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, h := range w.Headers {
		req.Header.Set(h.Key, h.Value)
	}
	resp, err := m.client.Do(req)
	if err != nil {
		return nil, "", fmt.Errorf("web %s %s: %w", w.Method, w.URL, err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, "", fmt.Errorf("web %s %s: reading the response: %w", w.Method, w.URL, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, "", fmt.Errorf("web %s %s: HTTP %d: %s", w.Method, w.URL, resp.StatusCode, snippet(data))
	}
	var doc any // numbers decode as float64, the type conditions compare them as
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, "", fmt.Errorf("web %s %s: the response is not JSON (%v): %s", w.Method, w.URL, err, snippet(data))
	}
	v, err := verification.JSONPathValue(doc, w.JSONPath)
	if err != nil {
		return nil, "", fmt.Errorf("web %s %s: %w: %s", w.Method, w.URL, err, snippet(data))
	}
	text, _ := json.Marshal(v)
	return v, string(text), nil
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + " ..."
	}
	return s
}
