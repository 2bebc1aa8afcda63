package hubcache

import (
	"hash/maphash"
	"maps"
	"reflect"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"
)

// Interning the strings of decoded objects.
//
// At fleet scale most of a cached object's strings repeat from object to object: every
// ManagedClusterAddOn of an add-on has the same name, owner reference, labels, condition types,
// reasons and messages, config names and spec hashes, and a cluster's name is the namespace of each
// of its MCAs and ManifestWorks. Decoding gives each object its own copies: at 5,000 clusters they
// were the largest part of the cache. The decode transform makes each object use one shared copy of
// every string instead (values are unchanged: only where the bytes live).

// internLimit bounds the table: when it holds this many strings it starts again empty. Objects
// keep the strings they have; only later objects stop sharing with earlier ones until they are
// replaced. Strings that stopped being used (a deleted cluster's name, an old message) so leave
// the table too.
const internLimit = 1 << 16

// interner is a table of shared strings. Its zero value is ready to use.
type interner struct {
	// off leaves objects as decoded (Options.DisableInterning).
	off     bool
	mu      sync.Mutex
	strings map[string]string
	// maps are the shared maps of strings, by a hash of their content (entries that collide share
	// a bucket and are told apart by comparing contents).
	maps map[uint64][]map[string]string
	// slices are the shared slices of the types in sharedSlices, the same way.
	slices map[uint64][]reflect.Value
}

func (t *interner) str(s string) string {
	if s == "" {
		return s
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if shared, ok := t.strings[s]; ok {
		return shared
	}
	if t.strings == nil || len(t.strings) >= internLimit {
		t.strings = make(map[string]string, 1024)
	}
	t.strings[s] = s
	return s
}

var (
	objectMetaType = reflect.TypeFor[metav1.ObjectMeta]()
	stringType     = reflect.TypeFor[string]()
	stringMapType  = reflect.TypeFor[map[string]string]()
)

// object makes the strings of obj (a pointer to a decoded Go type) shared ones, and its slices
// no larger than their length. The uid and
// resourceVersion are left alone: they are unique to an object version, and interning them would
// only grow the table.
func (t *interner) object(obj any) {
	if t.off {
		return
	}
	t.value(reflect.ValueOf(obj))
}

func (t *interner) value(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			t.value(v.Elem())
		}
	case reflect.String:
		if v.CanSet() {
			v.SetString(t.str(v.String()))
		}
	case reflect.Struct:
		if v.Type() == objectMetaType {
			if !v.CanAddr() {
				return
			}
			t.meta(v.Addr().Interface().(*metav1.ObjectMeta))
			return
		}
		for i := range v.NumField() {
			if f := v.Field(i); f.CanSet() {
				t.value(f)
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return // bytes (a RawExtension's, FieldsV1's): not strings
		}
		// A slice of a shared type becomes the table's equal one, or joins the table once its
		// strings are shared (its hash does not change: contents stay equal).
		var hash uint64
		share := sharedSlices[v.Type()] && v.CanSet() && v.Len() > 0
		if share {
			hash = valueHash(v)
			if shared, ok := t.sharedSlice(hash, v); ok {
				v.Set(shared)
				return
			}
		}
		if v.Cap() > v.Len() && v.CanSet() {
			// The JSON decoder grows slices by doubling: an MCA's five conditions sit in room for
			// eight. A cached object keeps its slices as long as it lives: give them their size.
			exact := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
			reflect.Copy(exact, v)
			v.Set(exact)
		}
		for i := range v.Len() {
			t.value(v.Index(i))
		}
		if share {
			t.keepSlice(hash, v)
		}
	case reflect.Array:
		for i := range v.Len() {
			t.value(v.Index(i))
		}
	case reflect.Map:
		t.mapValue(v)
	}
}

// sharedSlices are the slice types the same on every cluster's object of an add-on at a config
// version: an MCA's configReferences (its desired and last applied configs, with their spec
// hashes), supportedConfigs and relatedObjects, a ManifestWork's manifestConfigs (its feedback
// rules and update strategies). At 5,000 clusters each MCA's were some 500 bytes of its own. A
// slice equal to one seen before becomes that one, as maps of strings do (stringMap), and on the
// same grounds: cached objects are never changed in place. Conditions, which differ from cluster
// to cluster by their times, are not shared: the table would only keep old ones alive.
var sharedSlices = map[reflect.Type]bool{
	reflect.TypeFor[[]addonv1alpha1.ConfigReference]():     true,
	reflect.TypeFor[[]addonv1alpha1.ConfigGroupResource](): true,
	reflect.TypeFor[[]addonv1alpha1.ObjectReference]():     true,
	reflect.TypeFor[[]workv1.ManifestConfigOption]():       true,
}

// sharedSlice returns the slice in the table equal to v (hash being valueHash(v)), if there is one.
func (t *interner) sharedSlice(hash uint64, v reflect.Value) (reflect.Value, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, shared := range t.slices[hash] {
		if shared.Type() == v.Type() && reflect.DeepEqual(shared.Interface(), v.Interface()) {
			return shared, true
		}
	}
	return v, false
}

// keepSlice puts v, its strings shared and its capacity its length, in the table.
func (t *interner) keepSlice(hash uint64, v reflect.Value) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.slices == nil || len(t.slices) >= sliceLimit {
		t.slices = make(map[uint64][]reflect.Value, 64)
	}
	// The slice itself, not v: v is the object's field, and would keep the whole object alive.
	t.slices[hash] = append(t.slices[hash], reflect.ValueOf(v.Interface()))
}

// sliceLimit bounds the shared slices' table as internLimit does the strings': an add-on has a
// handful of distinct values at a time (one per config version pair), so a table this size that
// starts again empty keeps at most a few hundred kilobytes of values nothing uses any more.
const sliceLimit = 1024

// valueHash hashes what v holds: strings, numbers and booleans by value, pointers by what they
// point at, structs, slices and arrays element by element. Values reflect.DeepEqual calls equal
// hash alike.
func valueHash(v reflect.Value) uint64 {
	var d maphash.Hash
	d.SetSeed(mapSeed)
	hashInto(&d, v)
	return d.Sum64()
}

func hashInto(d *maphash.Hash, v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		d.WriteString(v.String())
		d.WriteByte(0)
	case reflect.Bool:
		if v.Bool() {
			d.WriteByte(1)
		} else {
			d.WriteByte(0)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		maphash.WriteComparable(d, v.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		maphash.WriteComparable(d, v.Uint())
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			d.WriteByte(0)
			return
		}
		d.WriteByte(1)
		hashInto(d, v.Elem())
	case reflect.Struct:
		for i := range v.NumField() {
			hashInto(d, v.Field(i))
		}
	case reflect.Slice, reflect.Array:
		maphash.WriteComparable(d, v.Len())
		for i := range v.Len() {
			hashInto(d, v.Index(i))
		}
	case reflect.Map:
		maphash.WriteComparable(d, v.Len()) // map contents: told apart by DeepEqual
	}
	// Other kinds (floats, which DeepEqual does not call equal to themselves when NaN): told
	// apart by DeepEqual.
}

// mapValue makes a map of strings (labels, annotations, a placement's label selectors) a shared
// one. Other maps' values cannot be set in place; the decoded kinds' cached fields hold none worth
// it.
func (t *interner) mapValue(v reflect.Value) {
	if v.IsNil() || v.Type().Key() != stringType || v.Type().Elem() != stringType || !v.CanSet() {
		return
	}
	shared := t.stringMap(v.Convert(stringMapType).Interface().(map[string]string)) // named map types too
	v.Set(reflect.ValueOf(shared).Convert(v.Type()))
}

// stringMap returns a map equal to m that every object with the same entries shares, its keys and
// values shared strings. A map is its own allocation of a few hundred bytes even with one entry: at
// 5,000 clusters the labels and annotations of the cached MCAs and ManifestWorks, the same on
// every cluster, were a sixth of the cache. Cached objects are never changed in place (whoever
// changes one changes a DeepCopy, which copies its maps), so sharing is safe as sharing strings is.
func (t *interner) stringMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	h := mapHash(m)
	t.mu.Lock()
	for _, shared := range t.maps[h] {
		if maps.Equal(shared, m) {
			t.mu.Unlock()
			return shared
		}
	}
	t.mu.Unlock()
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[t.str(k)] = t.str(v)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.maps == nil || len(t.maps) >= internLimit {
		t.maps = make(map[uint64][]map[string]string, 64)
	}
	t.maps[h] = append(t.maps[h], out)
	return out
}

// mapHash hashes m's entries independently of their order.
func mapHash(m map[string]string) uint64 {
	var sum uint64
	for k, v := range m {
		var d maphash.Hash
		d.SetSeed(mapSeed)
		d.WriteString(k)
		d.WriteByte(0)
		d.WriteString(v)
		sum += d.Sum64()
	}
	return sum
}

var mapSeed = maphash.MakeSeed()

func (t *interner) meta(m *metav1.ObjectMeta) {
	m.Name = t.str(m.Name)
	m.GenerateName = t.str(m.GenerateName)
	m.Namespace = t.str(m.Namespace)
	m.Labels = t.stringMap(m.Labels)
	m.Annotations = t.stringMap(m.Annotations)
	for i := range m.OwnerReferences {
		r := &m.OwnerReferences[i]
		r.APIVersion, r.Kind, r.Name = t.str(r.APIVersion), t.str(r.Kind), t.str(r.Name)
		r.UID = types.UID(t.str(string(r.UID))) // an owner's uid is shared by all it owns
	}
	for i := range m.Finalizers {
		m.Finalizers[i] = t.str(m.Finalizers[i])
	}
}
