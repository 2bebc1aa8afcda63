package argocd

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Application is the part of an Argo CD Application's status the tests read (Argo CD's own Go
// types would bring its whole module into ours).
type Application struct {
	Metadata struct {
		Name            string            `json:"name"`
		ResourceVersion string            `json:"resourceVersion"`
		Annotations     map[string]string `json:"annotations"`
	} `json:"metadata"`
	Status struct {
		Sync struct {
			Status   string `json:"status"`
			Revision string `json:"revision"`
		} `json:"sync"`
		Health       Health            `json:"health"`
		Resources    []ResourceStatus  `json:"resources"`
		SourceType   string            `json:"sourceType"`
		Conditions   []AppCondition    `json:"conditions"`
		History      []RevisionHistory `json:"history"`
		Operation    *OperationState   `json:"operationState"`
		ReconciledAt *metav1.Time      `json:"reconciledAt"`
	} `json:"status"`
}

// Health is Argo CD's health of an application or a resource.
type Health struct {
	Status  string `json:"status"`
	Message string `json:"message,omitempty"`
}

// ResourceStatus is an entry of status.resources: a resource the Application manages (from Git).
type ResourceStatus struct {
	Group           string  `json:"group"`
	Version         string  `json:"version"`
	Kind            string  `json:"kind"`
	Namespace       string  `json:"namespace"`
	Name            string  `json:"name"`
	Status          string  `json:"status"` // Synced, OutOfSync
	Health          *Health `json:"health"`
	RequiresPruning bool    `json:"requiresPruning"`
}

// AppCondition is an entry of status.conditions (errors and warnings).
type AppCondition struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// RevisionHistory is an entry of status.history: one completed sync.
type RevisionHistory struct {
	ID          int64       `json:"id"`
	Revision    string      `json:"revision"`
	DeployedAt  metav1.Time `json:"deployedAt"`
	InitiatedBy struct {
		Username  string `json:"username"`
		Automated bool   `json:"automated"`
	} `json:"initiatedBy"`
}

// OperationState is status.operationState: the last (or current) sync.
type OperationState struct {
	Phase      string       `json:"phase"`
	Message    string       `json:"message"`
	StartedAt  metav1.Time  `json:"startedAt"`
	FinishedAt *metav1.Time `json:"finishedAt"`
	SyncResult *struct {
		Revision  string `json:"revision"`
		Resources []struct {
			Group     string `json:"group"`
			Kind      string `json:"kind"`
			Namespace string `json:"namespace"`
			Name      string `json:"name"`
			Status    string `json:"status"`
			Message   string `json:"message"`
			SyncPhase string `json:"syncPhase"`
		} `json:"resources"`
	} `json:"syncResult"`
}

// Resource returns the status.resources entry of kind/namespace/name, or nil.
func (a *Application) Resource(kind, namespace, name string) *ResourceStatus {
	for i, r := range a.Status.Resources {
		if r.Kind == kind && r.Namespace == namespace && r.Name == name {
			return &a.Status.Resources[i]
		}
	}
	return nil
}

// ResourceNode is a node of an Application's resource tree: a managed resource or an object
// Argo CD found under one (through owner references), with the health Argo CD computed for it.
type ResourceNode struct {
	Group           string         `json:"group"`
	Version         string         `json:"version"`
	Kind            string         `json:"kind"`
	Namespace       string         `json:"namespace"`
	Name            string         `json:"name"`
	ParentRefs      []ResourceNode `json:"parentRefs"`
	Health          *Health        `json:"health"`
	ResourceVersion string         `json:"resourceVersion"`
}

// Tree is an Application's resource tree.
type Tree struct {
	Nodes       []ResourceNode `json:"nodes"`
	ShardsCount int64          `json:"shardsCount"`
}

// Node returns the node of kind/namespace/name, or nil.
func (t *Tree) Node(kind, namespace, name string) *ResourceNode {
	for i, n := range t.Nodes {
		if n.Kind == kind && n.Namespace == namespace && n.Name == name {
			return &t.Nodes[i]
		}
	}
	return nil
}

// cacheVersion is the suffix Argo CD v3.2's cache gives every key (common.CacheVersion): keys
// are "<key>|<version>", and ".gz" for the gzip compression the install uses by default.
const cacheVersion = "1.8.3"

// ResourceTree reads app's resource tree from redis, where the application controller writes it
// after every refresh and where Argo CD's API server reads it for the UI and `argocd app
// resources`: the key "app|resources-tree|<app>|<cache version>.gz" (and "|<shard>" for the
// shards after the first), gzip-compressed JSON (util/cache/appstate, util/cache/redis.go).
func (a *ArgoCD) ResourceTree(ctx context.Context, app string) (*Tree, error) {
	get := func(key string) (*Tree, error) {
		full := key + "|" + cacheVersion + ".gz"
		raw, err := redisCommand(ctx, a.RedisAddr, "GET", full)
		if err != nil {
			return nil, fmt.Errorf("argocd: reading %s from redis: %w", full, err)
		}
		if raw == nil {
			return nil, fmt.Errorf("argocd: no resource tree of %s in redis yet (key %s)", app, full)
		}
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("argocd: %s: %w", full, err)
		}
		var t Tree
		if err := json.NewDecoder(zr).Decode(&t); err != nil {
			return nil, fmt.Errorf("argocd: decoding %s: %w", full, err)
		}
		return &t, nil
	}
	key := "app|resources-tree|" + app
	tree, err := get(key)
	if err != nil {
		return nil, err
	}
	for i := int64(1); i < tree.ShardsCount; i++ {
		shard, err := get(key + "|" + strconv.FormatInt(i, 10))
		if err != nil {
			return nil, err
		}
		tree.Nodes = append(tree.Nodes, shard.Nodes...)
	}
	return tree, nil
}

// redisCommand sends one command to redis and returns its reply: a simple or bulk string (nil for
// a missing key), or an error reply as an error. Enough RESP for PING and GET; the main module
// needs no redis client for it.
func redisCommand(ctx context.Context, addr string, args ...string) ([]byte, error) {
	d := net.Dialer{Timeout: 2 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	deadline := time.Now().Add(5 * time.Second)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	if err := conn.SetDeadline(deadline); err != nil {
		return nil, err
	}
	var req strings.Builder
	fmt.Fprintf(&req, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&req, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(conn, req.String()); err != nil {
		return nil, err
	}
	r := bufio.NewReader(conn)
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return nil, errors.New("empty reply")
	}
	switch line[0] {
	case '+':
		return []byte(line[1:]), nil
	case '-':
		return nil, fmt.Errorf("redis: %s", line[1:])
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return nil, fmt.Errorf("redis: bad bulk length %q", line)
		}
		if n < 0 {
			return nil, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		return buf[:n], nil
	}
	return nil, fmt.Errorf("redis: unexpected reply %q", line)
}
