package localhub

import (
	"context"
	"fmt"
)

// StopAPIServer stops kube-apiserver and leaves etcd running, so tests can see how clients behave
// while the hub is unreachable; StartAPIServer brings it back. Stop stops whatever runs then.
func (h *Hub) StopAPIServer() error {
	h.apiMu.Lock()
	defer h.apiMu.Unlock()
	if h.apiserver == nil {
		return fmt.Errorf("localhub: kube-apiserver was never started")
	}
	return h.apiserver.stop(stopGrace)
}

// StartAPIServer starts kube-apiserver again, with the same flags, port, certificates and etcd data
// (so every object is still there), and waits until it is ready. It does nothing if it runs.
func (h *Hub) StartAPIServer(ctx context.Context) error {
	h.apiMu.Lock()
	defer h.apiMu.Unlock()
	if h.apiserver != nil && !h.apiserver.Exited() {
		return nil
	}
	p, err := startAPIServer(ctx, h.apiServerPath, h.Dir, h.apiServerArgs, h.Clients)
	if err != nil {
		return err
	}
	h.apiserver = p
	return nil
}
