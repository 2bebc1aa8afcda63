package rolloutplan

// sdk-go's Progressive batch, corrected for the clusters in flight past its cut.

import (
	"time"

	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	rollout "open-cluster-management.io/sdk-go/pkg/apis/cluster/v1alpha1"
)

// pastTheCut corrects a Progressive batch of sdk-go's RolloutHandler (res, computed from statuses)
// for the clusters in flight that sdk-go never looked at.
//
// sdk-go's progressivePerCluster walks the clusters in name order and stops as soon as its batch
// holds maxConcurrency clusters. A cluster in flight later in that order (progressing, failed before
// its progressDeadline, succeeded but still within minSuccessTime) is not looked at: it takes no
// slot, its failure does not count toward maxFailures, and its timeout is not seen. Such clusters
// exist whenever clusters earlier in the order join a rollout under way: their MCAs were created
// after the first batch started (the MCAs of a fresh install appear one by one), or the placement
// selected them since. sdk-go then fills the batch with them, and more clusters than
// maxConcurrency are in flight at once (OCM's addon-manager, built on the same code, does the same).
//
// Here each of them takes a slot of the batch, so the last clusters of the batch still to apply
// wait; each failure and timeout counts toward maxFailures, and a breach then moves no new cluster,
// as sdk-go does; a timeout is reported as sdk-go reports one. The clusters are added to the batch,
// so the decision counts them as in progress or failed and fails the unhealthy ones, as it does for
// those in the batch. recheck is when the first of them may time out or end its soak (nil: none).
//
// Mandatory decision groups and the other strategies need nothing: sdk-go's progressivePerGroup and
// All look at every cluster in flight.
func pastTheCut(s clusterv1alpha1.RolloutStrategy, total int, res rollout.RolloutResult, statuses []rollout.ClusterRolloutStatus, soak time.Duration) (rollout.RolloutResult, *time.Duration) {
	if s.Type != clusterv1alpha1.Progressive || s.Progressive == nil {
		return res, nil
	}
	// sdk-go looked at every cluster up to the last one it returned, in name order, and put each
	// one in flight among them in its batch or its timeouts; the clusters after it are past the cut.
	cut := ""
	for _, l := range [][]rollout.ClusterRolloutStatus{res.ClustersToRollout, res.ClustersTimeOut} {
		for _, c := range l {
			cut = max(cut, c.ClusterName)
		}
	}
	now := rollout.RolloutClock.Now()
	timeout, timesOut := parseDeadline(progressDeadline(s))
	var extra, timedOut []rollout.ClusterRolloutStatus
	failures := 0
	var recheck *time.Duration
	noteRecheck := func(at time.Time) {
		if d := at.Sub(now); d > 0 && (recheck == nil || d < *recheck) {
			recheck = &d
		}
	}
	for _, st := range statuses {
		if st.ClusterName <= cut {
			continue
		}
		switch st.Status {
		case rollout.ToApply, rollout.Skip, rollout.TimeOut:
			// Waiting, not this rollout's, or already out of it.
		case rollout.Succeeded:
			// In flight while it soaks, as sdk-go's determineRolloutStatus counts one.
			if soak <= 0 {
				continue
			}
			end := now.Add(soak)
			if st.LastTransitionTime != nil {
				end = st.LastTransitionTime.Add(soak)
			}
			if now.Before(end) {
				extra = append(extra, st)
				noteRecheck(end)
			}
		default: // Progressing, Failed
			if st.Status == rollout.Failed {
				failures++
			}
			if !timesOut || st.LastTransitionTime == nil || now.Before(st.LastTransitionTime.Add(timeout)) {
				extra = append(extra, st)
				if timesOut && st.LastTransitionTime != nil {
					noteRecheck(st.LastTransitionTime.Add(timeout))
				}
				continue
			}
			if st.Status != rollout.Failed {
				failures++
			}
			st.Status = rollout.TimeOut
			timedOut = append(timedOut, st)
		}
	}
	if len(extra) == 0 && len(timedOut) == 0 {
		return res, nil
	}

	if !res.MaxFailureBreach && failures > 0 {
		// sdk-go counted the failed clusters of its batch and its timeouts; add these.
		for _, c := range res.ClustersToRollout {
			if c.Status == rollout.Failed {
				failures++
			}
		}
		failures += len(res.ClustersTimeOut)
		res.MaxFailureBreach = failures > sizeOf(s.Progressive.MaxFailures, total, 0)
	}
	// The batch's clusters still to apply give up their slots from the end of the name order; after
	// a breach all of them do (sdk-go then moves no new cluster either).
	keep := 0 // of the batch's clusters still to apply, in name order
	if !res.MaxFailureBreach {
		for _, c := range res.ClustersToRollout {
			if c.Status == rollout.ToApply {
				keep++
			}
		}
		keep = max(keep-len(extra), 0)
	}
	batch := make([]rollout.ClusterRolloutStatus, 0, len(res.ClustersToRollout)+len(extra))
	for _, c := range res.ClustersToRollout {
		if c.Status == rollout.ToApply {
			if keep == 0 {
				continue
			}
			keep--
		}
		batch = append(batch, c)
	}
	res.ClustersToRollout = append(batch, extra...)
	res.ClustersTimeOut = append(res.ClustersTimeOut, timedOut...)
	return res, recheck
}

// parseDeadline reads a progressDeadline as progressDeadline returns it: "" never times out.
func parseDeadline(d string) (time.Duration, bool) {
	if d == "" {
		return 0, false
	}
	v, err := time.ParseDuration(d)
	return v, err == nil
}
