package rolloutsim

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	"github.com/addonops/addonops/internal/controller"
)

// stopGrace is how long Controller.Stop waits for the controller to return.
const stopGrace = 30 * time.Second

// ErrNotStopped is Controller.Stop's error when the controller did not return within its grace.
var ErrNotStopped = fmt.Errorf("the controller did not stop within %s", stopGrace)

// Controller is addonops' controller running in this process, as a Scenario and the demo run it.
type Controller struct {
	cancel context.CancelFunc
	done   chan error

	once sync.Once
	err  error
}

// StartController builds the controller of cfg and opts and runs it until ctx ends or Stop.
func StartController(ctx context.Context, cfg *rest.Config, opts controller.Options) (*Controller, error) {
	ctrl, err := controller.New(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("building the controller: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	c := &Controller{cancel: cancel, done: make(chan error, 1)}
	go func() { c.done <- ctrl.Run(ctx) }()
	return c, nil
}

// Stop cancels the controller and waits for it to return: its error (nil after a clean stop), or
// ErrNotStopped. Later calls return the first call's result.
func (c *Controller) Stop() error {
	c.once.Do(func() {
		c.cancel()
		select {
		case c.err = <-c.done:
		case <-time.After(stopGrace):
			c.err = ErrNotStopped
		}
	})
	return c.err
}

// stopped reports whether Stop's error is the controller's own (not ErrNotStopped).
func stopped(err error) bool { return !errors.Is(err, ErrNotStopped) }
