// Package apiaudit counts one client's requests to a kube-apiserver from the API server's own audit
// log, by resource, subresource and verb. The controller benchmark gives each add-on manager its own
// user (localhub.Options.Users) and compares their requests and writes.
//
// Why the audit log: the API server's apiserver_request_total has no client label, and a client's
// own rest_client_requests_total has no resource label; only the audit log has both, for any
// client, OCM's binaries included. The policy records only the named users, at Metadata level and
// once per request (stage ResponseComplete), so other clients (simulated agents, the benchmark's
// polling) cost the API server nothing.
package apiaudit

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"sigs.k8s.io/yaml"
)

// APIServerArgs writes an audit policy that records the requests of users into dir and returns the
// kube-apiserver flags that turn it on, and the path of the log. The log is written synchronously
// (mode blocking: no event is dropped under load) and never rotated, so Read sees every request.
func APIServerArgs(dir string, users ...string) (args []string, logPath string, err error) {
	if len(users) == 0 {
		return nil, "", fmt.Errorf("apiaudit: no user to record")
	}
	policy := auditv1.Policy{
		TypeMeta:   metav1.TypeMeta{APIVersion: auditv1.SchemeGroupVersion.String(), Kind: "Policy"},
		OmitStages: []auditv1.Stage{auditv1.StageRequestReceived, auditv1.StageResponseStarted},
		Rules: []auditv1.PolicyRule{
			{Level: auditv1.LevelMetadata, Users: users},
			{Level: auditv1.LevelNone},
		},
	}
	b, err := yaml.Marshal(policy)
	if err != nil {
		return nil, "", fmt.Errorf("apiaudit: encoding the policy: %w", err)
	}
	policyPath := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policyPath, b, 0o600); err != nil {
		return nil, "", fmt.Errorf("apiaudit: %w", err)
	}
	logPath = filepath.Join(dir, "audit.log")
	return []string{
		"--audit-policy-file=" + policyPath,
		"--audit-log-path=" + logPath,
		"--audit-log-format=json",
		"--audit-log-mode=blocking",
		// One file: the default, 0, means the log writer's own limit, 100 MB, which thousands of
		// clusters exceed; rotated files would have to be found and read too.
		"--audit-log-maxsize=1000000",
	}, logPath, nil
}

// Request is one recorded request: the fields of an audit.k8s.io/v1 Event the counts need.
type Request struct {
	User        string
	Verb        string // RBAC verb: get, list, watch, create, update, patch, delete, deletecollection
	Group       string
	Resource    string // "" for a non-resource URL
	Subresource string
	Code        int32 // HTTP status; 0 when the event has none
	Received    time.Time
	// URI is the request's path and query: what tells the requests of non-resource URLs apart
	// (discovery's /api and /apis, /healthz).
	URI string
}

// event is the JSON of an audit.k8s.io/v1 Event, decoded only as far as Request needs (much faster
// than the whole Event at hundreds of thousands of lines).
type event struct {
	Stage string `json:"stage"`
	Verb  string `json:"verb"`
	URI   string `json:"requestURI"`
	User  struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		APIGroup    string `json:"apiGroup"`
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int32 `json:"code"`
	} `json:"responseStatus"`
	RequestReceivedTimestamp time.Time `json:"requestReceivedTimestamp"`
}

// Read calls fn for every request in the log at path, in the log's order.
func Read(path string, fn func(Request)) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("apiaudit: %w", err)
	}
	defer f.Close()
	return read(f, fn)
}

func read(r io.Reader, fn func(Request)) error {
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 0, 1<<20), 16<<20)
	line := 0
	for s.Scan() {
		line++
		var e event
		if err := json.Unmarshal(s.Bytes(), &e); err != nil {
			return fmt.Errorf("apiaudit: line %d: %w", line, err)
		}
		if e.Stage != string(auditv1.StageResponseComplete) && e.Stage != string(auditv1.StagePanic) {
			continue
		}
		req := Request{User: e.User.Username, Verb: e.Verb, Received: e.RequestReceivedTimestamp, URI: e.URI}
		if e.ObjectRef != nil {
			req.Group, req.Resource, req.Subresource = e.ObjectRef.APIGroup, e.ObjectRef.Resource, e.ObjectRef.Subresource
		}
		if e.ResponseStatus != nil {
			req.Code = e.ResponseStatus.Code
		}
		fn(req)
	}
	if err := s.Err(); err != nil {
		return fmt.Errorf("apiaudit: line %d: %w", line+1, err)
	}
	return nil
}

// IsWrite tells a request that changes an object (whether or not the server accepted it).
func (r Request) IsWrite() bool {
	switch r.Verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

// Failed tells a request the server refused or failed (409 Conflict, 404, ...).
func (r Request) Failed() bool { return r.Code >= 400 }

// Key names a resource and verb: "managedclusteraddons/status update".
func (r Request) Key() string {
	res := r.Resource
	if res == "" {
		res = "(non-resource)"
	}
	if r.Subresource != "" {
		res += "/" + r.Subresource
	}
	return res + " " + r.Verb
}

// Counts are requests counted by Key.
type Counts map[string]int

// Add counts r.
func (c Counts) Add(r Request) { c[r.Key()]++ }

// Sum is the number of requests whose Key match accepts.
func (c Counts) Sum(match func(key string) bool) int {
	n := 0
	for k, v := range c {
		if match(k) {
			n += v
		}
	}
	return n
}

// Sorted returns the keys, most requests first.
func (c Counts) Sorted() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if c[keys[i]] != c[keys[j]] {
			return c[keys[i]] > c[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return keys
}
