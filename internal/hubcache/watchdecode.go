package hubcache

// Watch events decoded straight into Go types.
//
// The decoded kinds were watched with the dynamic client: each event's JSON became an unstructured
// object (maps of every field, several times the JSON), which the informer's transform encoded to
// JSON again and decoded into the Go type. At 5,000 clusters those three passes were a sixth of
// everything the controller allocated, most of it while thousands of MCAs and ManifestWorks
// change at once, the moments that set its peak heap. A decoded kind's watch now decodes each
// event's object from the API server's JSON into its Go type in one pass, with the same decoder
// as Decode (case-sensitive, integers checked against their Go type's range), and strips it as
// the transform would. An object that does not decode that way takes the transform's own path
// (unstructured, strip, decode, DecodeError and a placeholder), so what the cache holds is the
// same either way; TestWatchDecodeMatchesTransform checks that for every decoded kind and strip.
// Lists keep the dynamic client (decodedList): they are rare, and paged.

import (
	"bytes"
	"context"
	stdjson "encoding/json"
	"fmt"
	"io"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	sigsjson "sigs.k8s.io/json"

	"github.com/addonops/addonops/internal/manifesthead"
)

// stripper removes what the cache does not keep of a decoded kind, in either form: before
// decoding (unstructured) or after (the Go type). The two must leave the same object.
type stripper struct {
	unstructured func(*unstructured.Unstructured)
	typed        func(runtime.Object)
}

var (
	workManifestsStripper = stripper{stripWorkManifests, func(o runtime.Object) {
		w := o.(*workv1.ManifestWork)
		w.Spec = workv1.ManifestWorkSpec{}
		w.Status.ResourceStatus = workv1.ManifestResourceStatus{}
	}}
	workResourceConditionsStripper = stripper{stripWorkResourceConditions, func(o runtime.Object) {
		w := o.(*workv1.ManifestWork)
		for i := range w.Status.ResourceStatus.Manifests {
			w.Status.ResourceStatus.Manifests[i].Conditions = nil
		}
	}}
	workStandInsStripper = stripper{func(u *unstructured.Unstructured) {
		stripWorkResourceConditions(u)
		standInWorkManifests(u)
	}, func(o runtime.Object) {
		workResourceConditionsStripper.typed(o)
		w := o.(*workv1.ManifestWork)
		for i := range w.Spec.Workload.Manifests {
			m := &w.Spec.Workload.Manifests[i]
			if s, ok := manifesthead.StandIn(m.Raw); ok {
				m.Raw, m.Object = s, nil
			}
		}
	}}
	clusterStripper = stripper{stripCluster, func(o runtime.Object) {
		mc := o.(*clusterv1.ManagedCluster)
		stripClusterSpecTyped(mc)
		var kept []metav1.Condition
		for _, c := range mc.Status.Conditions {
			if c.Type == clusterv1.ManagedClusterConditionAvailable {
				kept = append(kept, c)
			}
		}
		mc.Status = clusterv1.ManagedClusterStatus{Conditions: kept}
	}}
	clusterStatusStripper = stripper{stripClusterStatus, func(o runtime.Object) {
		mc := o.(*clusterv1.ManagedCluster)
		stripClusterSpecTyped(mc)
		mc.Status = clusterv1.ManagedClusterStatus{}
	}}
)

func stripClusterSpecTyped(mc *clusterv1.ManagedCluster) {
	mc.Spec.ManagedClusterClientConfigs = nil
	mc.Spec.Taints = nil
}

// watchDecoder decodes a decoded kind's watch event objects: runtime.Decoder for client-go's
// watch decoder (rest/watch), which hands it each event's object as JSON.
type watchDecoder struct {
	c     *Cache
	k     decodedKind
	strip func(runtime.Object)
	// transform is the informer's transform (Cache.decode), the path of an object that does not
	// decode directly.
	transform cache.TransformFunc
}

func (d watchDecoder) Decode(data []byte, _ *schema.GroupVersionKind, _ runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	typed := d.k.newObj()
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, typed); err == nil {
		gvk := typed.GetObjectKind().GroupVersionKind()
		if gvk.Kind == "Status" {
			// A watch error (an expired resourceVersion): the reflector reads it as a Status.
			return d.status(data)
		}
		m := typed.(metav1.Object)
		m.SetManagedFields(keptManagedFields(d.k, m.GetManagedFields()))
		if d.strip != nil {
			d.strip(typed)
		}
		d.c.boundDecoded(d.k, typed)
		d.c.interned.object(typed)
		return typed, &gvk, nil
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		return nil, nil, fmt.Errorf("decoding a %s watch event: %w", d.k.gvk.Kind, err)
	}
	if u.GetKind() == "Status" {
		return d.status(data)
	}
	obj, err := d.transform(u)
	if err != nil {
		return nil, nil, err
	}
	gvk := u.GroupVersionKind()
	return obj.(runtime.Object), &gvk, nil
}

func (d watchDecoder) status(data []byte) (runtime.Object, *schema.GroupVersionKind, error) {
	st := &metav1.Status{}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, st); err != nil {
		return nil, nil, fmt.Errorf("decoding a %s watch error: %w", d.k.gvk.Kind, err)
	}
	gvk := metav1.SchemeGroupVersion.WithKind("Status")
	return st, &gvk, nil
}

func (d watchDecoder) Encode(runtime.Object, io.Writer) error {
	return fmt.Errorf("the %s watch decoder does not encode", d.k.gvk.Kind)
}

func (d watchDecoder) Identifier() runtime.Identifier { return "addonops-watch-decoder" }

// watchEnvelopes decodes the watch events' envelopes (type and raw object), as the dynamic
// client's own serializer does; envelopeDecoder takes the common shape first.
var watchEnvelopes = func() runtime.Serializer {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return json.NewSerializerWithOptions(json.DefaultMetaFactory, s, s, json.SerializerOptions{})
}()

// envelopeDecoder decodes a watch event's envelope as the API server writes it,
// {"type":"MODIFIED","object":{...}}, by slicing the object out of the frame. The serializer
// decodes each frame twice (once for its apiVersion and kind, once into metav1.WatchEvent) and
// copies the object: at 1,000 clusters that was a tenth of the controller's CPU. Any other shape
// (keys in another order, spaces, more keys) takes the serializer's path.
//
// The object aliases the frame, which the stream decoder reuses for the next event: client-go's
// watch decoder (rest/watch) decodes the object before it reads the next frame, and
// watchDecoder copies what it keeps (TestTypedWatchOnAPIServer decodes consecutive events).
type envelopeDecoder struct{}

var watchEventGVK = metav1.SchemeGroupVersion.WithKind("WatchEvent")

func (envelopeDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if ev, ok := into.(*metav1.WatchEvent); ok {
		if typ, object, ok := splitEnvelope(data); ok {
			ev.Type, ev.Object = typ, runtime.RawExtension{Raw: object}
			gvk := watchEventGVK
			return ev, &gvk, nil
		}
	}
	return watchEnvelopes.Decode(data, defaults, into)
}

func (envelopeDecoder) Encode(o runtime.Object, w io.Writer) error {
	return watchEnvelopes.Encode(o, w)
}

func (envelopeDecoder) Identifier() runtime.Identifier { return "addonops-watch-envelope" }

// splitEnvelope returns the type and the object of a watch event frame of the shape
// {"type":"TYPE","object":OBJECT}, TYPE in capital letters (ADDED, MODIFIED, DELETED, BOOKMARK,
// ERROR) and OBJECT one JSON object; ok is false for any other frame.
func splitEnvelope(frame []byte) (typ string, object []byte, ok bool) {
	rest, ok := bytes.CutPrefix(frame, []byte(`{"type":"`))
	if !ok {
		return "", nil, false
	}
	end := bytes.IndexByte(rest, '"')
	if end <= 0 {
		return "", nil, false
	}
	for _, b := range rest[:end] {
		if b < 'A' || b > 'Z' {
			return "", nil, false
		}
	}
	typ = string(rest[:end])
	if rest, ok = bytes.CutPrefix(rest[end:], []byte(`","object":`)); !ok {
		return "", nil, false
	}
	rest = bytes.TrimRight(rest, " \t\r\n")
	if len(rest) < 3 || rest[0] != '{' || rest[len(rest)-1] != '}' {
		return "", nil, false
	}
	// The envelope's closing brace off, what is left must be one object (not an object followed
	// by more keys of the envelope): a validity scan is cheap next to a decode.
	object = rest[:len(rest)-1]
	if object[len(object)-1] != '}' || !stdjson.Valid(object) {
		return "", nil, false
	}
	return typ, object, true
}

// watchSerializer is the NegotiatedSerializer of a decoded kind's watch client: JSON only, the
// envelopes by watchEnvelopes, the objects by the kind's watchDecoder.
type watchSerializer struct{ objects watchDecoder }

func (s watchSerializer) SupportedMediaTypes() []runtime.SerializerInfo {
	return []runtime.SerializerInfo{{
		MediaType: runtime.ContentTypeJSON, MediaTypeType: "application", MediaTypeSubType: "json", EncodesAsText: true,
		Serializer:       s.objects,
		StreamSerializer: &runtime.StreamSerializerInfo{EncodesAsText: true, Serializer: envelopeDecoder{}, Framer: json.Framer},
	}}
}

func (watchSerializer) EncoderForVersion(e runtime.Encoder, _ runtime.GroupVersioner) runtime.Encoder {
	return e
}

func (watchSerializer) DecoderToVersion(d runtime.Decoder, _ runtime.GroupVersioner) runtime.Decoder {
	return d
}

// typedWatch returns the watch function of decoded kind k: its events carry k's Go type (or a
// placeholder, with a DecodeError, for an object that does not decode).
func (c *Cache) typedWatch(k decodedKind, strip func(runtime.Object), transform cache.TransformFunc) (func(context.Context, metav1.ListOptions) (watch.Interface, error), error) {
	cfg := rest.CopyConfig(c.restConfig)
	gv := k.gvr.GroupVersion()
	cfg.GroupVersion = &gv
	cfg.APIPath = "/apis"
	cfg.ContentType = runtime.ContentTypeJSON
	cfg.AcceptContentTypes = runtime.ContentTypeJSON
	cfg.NegotiatedSerializer = watchSerializer{watchDecoder{c: c, k: k, strip: strip, transform: transform}}
	client, err := rest.RESTClientForConfigAndClient(cfg, c.httpClient)
	if err != nil {
		return nil, fmt.Errorf("building the watch client of %s: %w", k.gvr, err)
	}
	return func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.Watch = true
		var timeout time.Duration
		if o.TimeoutSeconds != nil {
			timeout = time.Duration(*o.TimeoutSeconds) * time.Second
		}
		return client.Get().Resource(k.gvr.Resource).VersionedParams(&o, metav1.ParameterCodec).Timeout(timeout).Watch(ctx)
	}, nil
}
