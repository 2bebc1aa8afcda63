// Config garbage collection (Decide, Collector) decides which superseded config versions to delete. config-hash gives every
// config version an immutable content-hash name and marks it Prune=false (and, for Argo CD,
// IgnoreExtraneous), so clusters that have not rolled out yet keep the version they run; nothing
// else ever deletes those versions. Decide is the rule that does, as a pure function of the
// hub's state; the controller's garbage collector reads that state and deletes.
//
// A config object is deleted only when all of these hold:
//   - it carries config-hash's annotations addonops.io/base-name and addonops.io/content-hash
//     (objects without them are never touched);
//   - no ClusterManagementAddOn or ManagedClusterAddOn references it, in spec or status
//     (defaults, placement configs, MCA configs, and every desired, last applied and last known
//     good config of every install progression and MCA);
//   - no add-on that references a version of its base name is rolling out (a progression or an MCA
//     under way, or waiting for a canary): a rollout may still move a cluster back to it;
//   - a newer version (created later) of the same base name (same group/resource and namespace) is
//     referenced: the version was superseded, not just unused yet;
//   - it is older than the minimum age, and it is not one of the Keep newest unused versions of its
//     base name, which stay for a quick revert.

package addonrollout

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/addonops/addonops/internal/configref"
)

// Object is one config object on the hub.
type Object struct {
	configref.Ref
	// BaseName and ContentHash are config-hash's annotations; an object without both is never
	// deleted.
	BaseName, ContentHash string
	Created               time.Time
}

// Base names one family of versions: group/resource, namespace and base name.
type Base struct {
	configref.GroupResource
	Namespace, Name string
}

func (b Base) String() string {
	if b.Namespace == "" {
		return b.GroupResource.String() + " " + b.Name
	}
	return b.GroupResource.String() + " " + b.Namespace + "/" + b.Name
}

// BaseOf is the family of o.
func BaseOf(o Object) Base {
	return Base{GroupResource: o.GroupResource, Namespace: o.Namespace, Name: o.BaseName}
}

// Input is the hub state a collection is decided on.
type Input struct {
	Now     time.Time
	Objects []Object
	// Referenced are the configs some CMA or MCA references, in spec or status.
	Referenced map[configref.Ref]bool
	// Rolling are the configs referenced by add-ons that are rolling out: every version of their
	// base names is kept.
	Rolling map[configref.Ref]bool
	// Keep is how many unused versions per base name are kept (the newest ones).
	Keep int
	// MinAge is how old a version must be to be deleted.
	MinAge time.Duration
}

// Deletion is one config version to delete, with the reason a person reads in the event.
type Deletion struct {
	Object
	Reason string
}

// Decide returns the versions to delete, sorted by group/resource, namespace and name.
func Decide(in Input) []Deletion {
	byBase := map[Base][]Object{}
	for _, o := range in.Objects {
		if o.BaseName == "" || o.ContentHash == "" {
			continue
		}
		byBase[BaseOf(o)] = append(byBase[BaseOf(o)], o)
	}
	var out []Deletion
	for base, versions := range byBase {
		// Newest first; the name breaks ties so the decision is stable.
		slices.SortFunc(versions, func(a, b Object) int {
			return cmp.Or(b.Created.Compare(a.Created), cmp.Compare(a.Name, b.Name))
		})
		var newestReferenced *Object
		rolling := false
		for i := range versions {
			v := &versions[i]
			if in.Referenced[v.Ref] && newestReferenced == nil {
				newestReferenced = v
			}
			rolling = rolling || in.Rolling[v.Ref]
		}
		if newestReferenced == nil || rolling {
			continue
		}
		kept := 0
		for _, v := range versions {
			switch {
			case in.Referenced[v.Ref]:
				continue
			case !v.Created.Before(newestReferenced.Created):
				continue // newer than what is in use: not superseded (maybe not rolled out yet)
			case kept < in.Keep:
				kept++
				continue
			case in.Now.Sub(v.Created) < in.MinAge:
				continue
			}
			out = append(out, Deletion{Object: v, Reason: fmt.Sprintf("superseded by %s, which is in use; no ClusterManagementAddOn or ManagedClusterAddOn references it and no rollout of %s is under way",
				newestReferenced.Name, base)})
		}
	}
	slices.SortFunc(out, func(a, b Deletion) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Resource, b.Resource), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out
}
