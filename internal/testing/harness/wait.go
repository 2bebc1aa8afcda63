// Package harness is the test harness the integration tests, the end-to-end suite and the demo
// share: waits on conditions (Eventually, Consistently, Until) instead of sleeps, and a Recorder of
// the add-on objects a watch reports, in the API server's order, with the replays the tests assert
// on (MaxInFlight, FirstWhen).
//
// A check is a func() string: "" when the awaited state holds, otherwise a description of the
// state seen instead, which the failure quotes.
package harness

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// DefaultInterval is how often a wait polls unless Every says otherwise.
const DefaultInterval = 100 * time.Millisecond

// Option tunes a wait.
type Option func(*waitOptions)

type waitOptions struct {
	interval time.Duration
	ctx      context.Context
	dump     func() string
	log      bool
}

// Every polls at interval d.
func Every(d time.Duration) Option { return func(o *waitOptions) { o.interval = d } }

// Within ends the wait, failing, when ctx is done (the test's or the suite's context).
func Within(ctx context.Context) Option { return func(o *waitOptions) { o.ctx = ctx } }

// Dump adds what dump returns to the failure message: the wider state (a recorder's view of every
// MCA, the CMA's progressions) the check itself does not quote.
func Dump(dump func() string) Option { return func(o *waitOptions) { o.dump = dump } }

// Logged logs how long a successful wait took.
func Logged() Option { return func(o *waitOptions) { o.log = true } }

func options(opts []Option) waitOptions {
	o := waitOptions{interval: DefaultInterval, ctx: context.Background()}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// Until polls check until it returns "" and returns how long that took; after timeout, or when
// ctx is done, it returns an error quoting check's last answer. It is the wait of code that has
// no testing.TB (the demo, the benchmarks).
func Until(ctx context.Context, timeout, interval time.Duration, check func() string) (time.Duration, error) {
	return UntilErr(ctx, timeout, interval, func() (string, error) { return check(), nil })
}

// UntilErr is Until for a check that can also fail for good (the process it waits on exited, the
// engine refused the commit): an error from check ends the wait at once and is returned as is.
func UntilErr(ctx context.Context, timeout, interval time.Duration, check func() (string, error)) (time.Duration, error) {
	if interval <= 0 {
		interval = DefaultInterval
	}
	start := time.Now()
	deadline := start.Add(timeout)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		last, err := check()
		switch {
		case err != nil:
			return 0, err
		case last == "":
			return time.Since(start), nil
		case !time.Now().Before(deadline):
			return 0, fmt.Errorf("not within %s: %s", timeout, last)
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("%w while waiting; last seen: %s", ctx.Err(), last)
		case <-tick.C:
		}
	}
}

// Eventually waits until check returns "", polling (every DefaultInterval unless Every says
// otherwise), and returns how long that took. After timeout it fails the test with what was
// awaited, check's last answer and the Dump.
func Eventually(t testing.TB, timeout time.Duration, what string, check func() string, opts ...Option) time.Duration {
	t.Helper()
	o := options(opts)
	d, err := Until(o.ctx, timeout, o.interval, check)
	if err != nil {
		msg := fmt.Sprintf("waiting for %s: %v", what, err)
		if o.dump != nil {
			msg += "\n" + o.dump()
		}
		t.Fatal(msg)
		return 0
	}
	if o.log {
		t.Logf("%s: after %s", what, d.Round(10*time.Millisecond))
	}
	return d
}

// EventuallyTrue is Eventually for a condition without a description of what it saw; give Dump
// so the failure says what was seen.
func EventuallyTrue(t testing.TB, timeout time.Duration, what string, cond func() bool, opts ...Option) time.Duration {
	t.Helper()
	return Eventually(t, timeout, what, func() string {
		if cond() {
			return ""
		}
		return "the condition does not hold"
	}, opts...)
}

// Consistently lets d pass, checking check all along, and fails the test as soon as it returns
// something else than "": the wait of a test proving that something does NOT happen. (A test
// proving a thing happens waits for it with Eventually.)
func Consistently(t testing.TB, d time.Duration, what string, check func() string, opts ...Option) {
	t.Helper()
	o := options(opts)
	end := time.Now().Add(d)
	tick := time.NewTicker(o.interval)
	defer tick.Stop()
	for {
		if got := check(); got != "" {
			msg := fmt.Sprintf("%s: no longer so after %s of %s: %s", what, (d - time.Until(end)).Round(time.Millisecond), d, got)
			if o.dump != nil {
				msg += "\n" + o.dump()
			}
			t.Fatal(msg)
			return
		}
		if !time.Now().Before(end) {
			return
		}
		select {
		case <-o.ctx.Done():
			t.Fatalf("%s: %v after %s of %s", what, o.ctx.Err(), (d - time.Until(end)).Round(time.Millisecond), d)
			return
		case <-tick.C:
		}
	}
}

// Pass lets d pass on purpose: the time a test lets go by so a thing could happen (a retry period,
// a timer) before it checks that it did not, or so that a later time stamp differs. Prefer
// Consistently when the thing can be polled.
func Pass(d time.Duration) { time.Sleep(d) }
