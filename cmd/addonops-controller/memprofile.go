package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strings"
	"time"

	"k8s.io/klog/v2"
)

// Runtime metrics --memprofile follows. The live heap is what the last garbage collection found
// reachable: what the caches and the work in flight hold, without the garbage the resident set also
// counts. Mapped minus released approximates the resident set the runtime is responsible for.
const (
	liveHeapMetric = "/gc/heap/live:bytes"
	totalMetric    = "/memory/classes/total:bytes"
	releasedMetric = "/memory/classes/heap/released:bytes"
)

// watchHeapPeaks writes a heap profile to path each time the live heap reaches a new high (by 5%
// or more, checked every half second), and to path+".memstats" the runtime's memory metrics each
// time the memory it holds from the OS does, until ctx is done. A profile taken at exit would show
// the settled caches, not what was live while the process grew to its peak resident set, which is
// what a memory budget is about.
func watchHeapPeaks(ctx context.Context, path string) error {
	// One sample per 16 KiB allocated instead of the default 512 KiB: a profile at the default rate
	// attributes a few samples of 512 KiB each to most sites, too coarse to tell apart the parts of
	// a live heap of 30 MB. It costs some CPU, which --memprofile runs accept.
	runtime.MemProfileRate = 16 << 10
	// Fail on a path that cannot be written now, not at the first peak.
	if err := writeHeapProfile(path); err != nil {
		return fmt.Errorf("--memprofile: %w", err)
	}
	var samples []metrics.Sample
	index := map[string]int{}
	for _, d := range metrics.All() {
		if d.Kind == metrics.KindUint64 && (strings.HasPrefix(d.Name, "/memory/classes/") || strings.HasPrefix(d.Name, "/gc/heap/")) {
			index[d.Name] = len(samples)
			samples = append(samples, metrics.Sample{Name: d.Name})
		}
	}
	get := func(name string) uint64 { return samples[index[name]].Value.Uint64() }
	go func() {
		var liveWritten, heldWritten uint64
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			metrics.Read(samples)
			if live := get(liveHeapMetric); live >= liveWritten+liveWritten/20 {
				if err := writeHeapProfile(path); err != nil {
					klog.FromContext(ctx).Error(err, "Cannot write the heap profile", "path", path)
					return
				}
				liveWritten = live
			}
			if held := get(totalMetric) - get(releasedMetric); held > heldWritten {
				var b bytes.Buffer
				fmt.Fprintf(&b, "%s\n", time.Now().Format(time.RFC3339))
				for _, s := range samples {
					fmt.Fprintf(&b, "%-60s %8.1f MB\n", s.Name, float64(s.Value.Uint64())/(1<<20))
				}
				if err := replaceFile(path+".memstats", b.Bytes()); err != nil {
					klog.FromContext(ctx).Error(err, "Cannot write the memory metrics", "path", path+".memstats")
					return
				}
				heldWritten = held
			}
		}
	}()
	return nil
}

// writeHeapProfile replaces path with the current heap profile.
func writeHeapProfile(path string) error {
	var b bytes.Buffer
	if err := pprof.Lookup("heap").WriteTo(&b, 0); err != nil {
		return err
	}
	return replaceFile(path, b.Bytes())
}

// replaceFile writes data to path by a rename, so a reader never sees a partial file.
func replaceFile(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
