package webhooks

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/addonops/addonops/internal/notify"
)

// Notification is one webhook body the catalog's templates send (config/notifications/catalog.yaml):
// its JSON fields for a service named "webhook", and the body as sent (Text: the template's
// message for any other service).
type Notification struct {
	Trigger   string   `json:"trigger"`
	Addon     string   `json:"addon"`
	Placement string   `json:"placement"`
	VersionID string   `json:"versionID"`
	Kind      string   `json:"kind"`
	Clusters  []string `json:"clusters"`
	Reason    string   `json:"reason"`
	Message   string   `json:"message"`
	// Text is the body as received; At when it arrived.
	Text string    `json:"-"`
	At   time.Time `json:"-"`
}

// NotificationOptions configure a NotificationReceiver.
type NotificationOptions struct {
	// Text: the bodies are the catalog's messages (a service not named "webhook"), kept as Text
	// only. Otherwise each must be the catalog's JSON body.
	Text bool
	// OnNotification is called with each notification recorded, in order, under the receiver's
	// lock: it must not call the receiver.
	OnNotification func(Notification)
	// OnError is called with a body that could not be read or is not the catalog's JSON body
	// (answered 400 and not recorded), so that a test can fail on it.
	OnError func(error)
}

// NotificationReceiver is a notification webhook service's endpoint: it records each body it is
// sent and answers 204.
type NotificationReceiver struct {
	// URL is the receiver's base URL: every path answers.
	URL string

	srv  *httptest.Server
	opts NotificationOptions

	mu  sync.Mutex
	got []Notification
}

// NewNotificationReceiver starts a notification receiver on 127.0.0.1. Close stops it.
func NewNotificationReceiver(o NotificationOptions) *NotificationReceiver {
	n := &NotificationReceiver{opts: o}
	n.srv = httptest.NewServer(n)
	n.URL = n.srv.URL
	return n
}

// Notifications returns what was received so far, in order of arrival.
func (n *NotificationReceiver) Notifications() []Notification {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.got)
}

// Close stops the receiver.
func (n *NotificationReceiver) Close() { n.srv.Close() }

func (n *NotificationReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		n.reject(w, fmt.Errorf("notification receiver: reading the body: %w", err))
		return
	}
	d := Notification{Text: string(b), At: time.Now()}
	if !n.opts.Text {
		if err := json.Unmarshal(b, &d); err != nil {
			n.reject(w, fmt.Errorf("notification receiver: not the catalog's JSON body: %w: %s", err, b))
			return
		}
	}
	n.mu.Lock()
	n.got = append(n.got, d)
	if n.opts.OnNotification != nil {
		n.opts.OnNotification(d)
	}
	n.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (n *NotificationReceiver) reject(w http.ResponseWriter, err error) {
	if n.opts.OnError != nil {
		n.opts.OnError(err)
	}
	http.Error(w, err.Error(), http.StatusBadRequest)
}

// Webhook is one webhook service of a notification configuration.
type Webhook struct {
	// URL is where the service sends; it is kept in the Secret, as a URL with a token would be.
	URL string
	// FastRetry: one retry after 10ms instead of notifications-engine's three, 1s to 5s apart
	// (for services that fail on purpose).
	FastRetry bool
}

// NotificationConfig returns the notification configuration of namespace: the ConfigMap of the
// catalog config/notifications/catalog.yaml under repoRoot, with a service per webhook, and the
// Secret holding their URLs. As kustomize-rollout-examples/notifications writes it, the service
// named "webhook" (which gets the catalog's JSON body) is key service.webhook, sends
// Content-Type: application/json and reads its URL from the Secret's key webhook-url; service NAME
// is key service.webhook.NAME, URL NAME-url.
func NotificationConfig(repoRoot, namespace string, webhooks map[string]Webhook) (*corev1.ConfigMap, *corev1.Secret, error) {
	path := filepath.Join(repoRoot, "config", "notifications", "catalog.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the notification catalog: %w", err)
	}
	var cm corev1.ConfigMap
	if err := yaml.UnmarshalStrict(data, &cm); err != nil {
		return nil, nil, fmt.Errorf("reading the notification catalog %s: %w", path, err)
	}
	if cm.Name != notify.ConfigMapName {
		return nil, nil, fmt.Errorf("the notification catalog %s names ConfigMap %q, the controller reads %q", path, cm.Name, notify.ConfigMapName)
	}
	cm.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}
	cm.Namespace = namespace
	secret := &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: notify.SecretName}, StringData: map[string]string{}}
	for name, wh := range webhooks {
		if wh.URL == "" {
			return nil, nil, fmt.Errorf("notification service %s: no URL", name)
		}
		key, service := "service.webhook."+name, fmt.Sprintf("url: $%s-url\n", name)
		if name == "webhook" {
			key = "service.webhook"
			service += "headers:\n- name: Content-Type\n  value: application/json\n"
		}
		if wh.FastRetry {
			// In nanoseconds: notifications-engine's WebhookOptions holds time.Durations.
			service += "retryMax: 1\nretryWaitMin: 10000000\nretryWaitMax: 10000000\n"
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[key] = service
		secret.StringData[name+"-url"] = wh.URL
	}
	return &cm, secret, nil
}
