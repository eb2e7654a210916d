package mutating

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	serializerjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/client-go/kubernetes/scheme"
)

// The documents the dispatch patches: json.Marshal's of a typed object or a custom resource.
func patchedObjects(t testing.TB) map[string]runtime.Object {
	t.Helper()
	return map[string]runtime.Object{
		"pod": &corev1.Pod{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"app": "web", "a/b": "c~d"}},
			Spec: corev1.PodSpec{
				Containers:   []corev1.Container{{Name: "app", Image: "img", Env: []corev1.EnvVar{{Name: "X", Value: "<&>"}}}},
				NodeSelector: map[string]string{},
			},
		},
		// Its data is a RawExtension, which keeps the bytes it decodes.
		"revision": &appsv1.ControllerRevision{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ControllerRevision"},
			ObjectMeta: metav1.ObjectMeta{Name: "r", Labels: map[string]string{"app": "web"}},
			Data:       runtime.RawExtension{Raw: []byte(`{"spec":{"template":{"b":1,"a":2}},"apiVersion":"v1"}`)},
			Revision:   1,
		},
		"widget": &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": "w", "labels": map[string]any{"app": "web"}},
			"spec":     map[string]any{"size": int64(3), "nested": map[string]any{"deep": map[string]any{}}},
		}},
	}
}

// decodeAsTheDispatch decodes a patched document as the dispatch does, into a new object
// of object's kind (a custom resource's: unstructured).
func decodeAsTheDispatch(t testing.TB, object runtime.Object, doc []byte) (runtime.Object, error) {
	t.Helper()
	var into runtime.Object = &unstructured.Unstructured{}
	if _, ok := object.(*unstructured.Unstructured); !ok {
		kinds, _, err := scheme.Scheme.ObjectKinds(object)
		if err != nil {
			t.Fatal(err)
		}
		if into, err = scheme.Scheme.New(kinds[0]); err != nil {
			t.Fatal(err)
		}
	}
	serializer := serializerjson.NewSerializerWithOptions(serializerjson.DefaultMetaFactory, scheme.Scheme, scheme.Scheme, serializerjson.SerializerOptions{})
	decoded, _, err := serializer.Decode(doc, nil, into)
	return decoded, err
}

// checkAsJSONPatchV4 applies patch to object's JSON both ways and fails unless both fail,
// or both give documents that decode, as the dispatch decodes them, to the same object.
func checkAsJSONPatchV4(t testing.TB, object runtime.Object, doc, patchJSON []byte) {
	t.Helper()
	patch, err := jsonpatch.DecodePatch(patchJSON)
	if err != nil {
		return // refused before it is applied, as the dispatch refuses it
	}
	want, wantErr := patch.Apply(doc)
	got, gotErr := applyPatch(doc, patch, object)
	if (wantErr != nil) != (gotErr != nil) {
		t.Fatalf("patch %s: error %v, json-patch's %v", patchJSON, gotErr, wantErr)
	}
	if wantErr != nil {
		return
	}
	wantObject, wantErr := decodeAsTheDispatch(t, object, want)
	gotObject, gotErr := decodeAsTheDispatch(t, object, got)
	switch {
	case (wantErr != nil) != (gotErr != nil):
		t.Fatalf("patch %s: decoding %s: %v; json-patch's %s: %v", patchJSON, got, gotErr, want, wantErr)
	case wantErr == nil && !reflect.DeepEqual(gotObject, wantObject):
		t.Fatalf("patch %s: decodes to\n %#v\nwant (json-patch's)\n %#v\n(documents %s and %s)", patchJSON, gotObject, wantObject, got, want)
	}
}

func TestPatchDecodesAsJSONPatchV4(t *testing.T) {
	objects := patchedObjects(t)
	for _, tc := range []struct {
		name, object, patch string
		// inPlace says the patch is applied to the bytes, not by json-patch.
		inPlace bool
	}{
		{"add an annotation, annotations missing", "pod", `[{"op":"add","path":"/metadata/annotations","value":{}},{"op":"add","path":"/metadata/annotations/x","value":"1"}]`, true},
		{"add a label", "pod", `[{"op":"add","path":"/metadata/labels/new","value":"v"}]`, true},
		{"add an escaped label", "pod", `[{"op":"add","path":"/metadata/labels/e~1f~0g","value":"v"}]`, true},
		{"add over an existing label", "pod", `[{"op":"add","path":"/metadata/labels/app","value":"api"}]`, true},
		{"replace the escaped label", "pod", `[{"op":"replace","path":"/metadata/labels/a~1b","value":"z"}]`, true},
		{"replace a missing member adds it", "pod", `[{"op":"replace","path":"/metadata/labels/missing","value":"z"}]`, true},
		{"remove the first label", "pod", `[{"op":"remove","path":"/metadata/labels/a~1b"}]`, true},
		{"remove the last label", "pod", `[{"op":"remove","path":"/metadata/labels/app"}]`, true},
		{"remove both labels", "pod", `[{"op":"remove","path":"/metadata/labels/app"},{"op":"remove","path":"/metadata/labels/a~1b"}]`, true},
		{"remove then add the same", "pod", `[{"op":"remove","path":"/metadata/labels/app"},{"op":"add","path":"/metadata/labels/app","value":"again"}]`, true},
		{"add a null value", "pod", `[{"op":"add","path":"/metadata/labels/n","value":null}]`, true},
		{"replace a spec field", "pod", `[{"op":"replace","path":"/spec/restartPolicy","value":"Never"}]`, true},
		{"add into a value added before", "pod", `[{"op":"add","path":"/metadata/annotations","value":{"a":"1"}},{"op":"add","path":"/metadata/annotations/b","value":"2"}]`, true},
		{"empty key", "pod", `[{"op":"add","path":"/metadata/labels/","value":"e"}]`, true},
		{"a value with spaces and HTML", "pod", `[{"op":"add","path":"/metadata/annotations","value":{ "k" : "<a> & </a>" }},{"op":"add","path":"/metadata/annotations/z","value":"2"}]`, true},
		{"a custom resource's nested map", "widget", `[{"op":"add","path":"/spec/nested/deep/x","value":{"b":1,"a":[1,2.50]}},{"op":"remove","path":"/spec/size"}]`, true},
		{"a revision's labels", "revision", `[{"op":"add","path":"/metadata/labels/x","value":"1"}]`, true},
		{"into a RawExtension, which keeps its bytes: json-patch", "revision", `[{"op":"add","path":"/data/spec/a","value":{"b" : 1,"a":2}}]`, false},
		{"a RawExtension replaced whole", "revision", `[{"op":"replace","path":"/data/spec","value":{"b" : 1,"a":2}}]`, false},
		{"a top-level member, read case-insensitively for the kind: json-patch", "pod", `[{"op":"add","path":"/Kind","value":"Foo"}]`, false},
		{"a custom resource's top-level member: json-patch", "widget", `[{"op":"add","path":"/APIVERSION","value":"a/b/c"}]`, false},
		{"add into an empty map, which json.Marshal omits, fails", "pod", `[{"op":"add","path":"/spec/nodeSelector/zone","value":"a"}]`, false},
		{"remove a missing member fails", "pod", `[{"op":"remove","path":"/metadata/labels/none"}]`, false},
		{"add under a missing parent fails", "pod", `[{"op":"add","path":"/metadata/annotations/x","value":"1"}]`, false},
		{"a field the type does not have: json-patch", "pod", `[{"op":"add","path":"/metadata/unknown/x","value":"1"}]`, false},
		{"into an array: json-patch", "pod", `[{"op":"add","path":"/spec/containers/0/image","value":"other"}]`, false},
		{"labels, then an append to an array: json-patch for all", "pod", `[{"op":"add","path":"/metadata/labels/x","value":"1"},{"op":"add","path":"/spec/containers/-","value":{"name":"side"}}]`, false},
		{"a test: json-patch", "pod", `[{"op":"test","path":"/metadata/name","value":"p"},{"op":"add","path":"/metadata/labels/t","value":"1"}]`, false},
		{"move: json-patch", "pod", `[{"op":"move","from":"/metadata/labels/app","path":"/metadata/labels/moved"}]`, false},
		{"a path without a slash: json-patch", "pod", `[{"op":"add","path":"metadata/labels/x","value":"1"}]`, false},
		{"an add without a value: json-patch", "pod", `[{"op":"add","path":"/metadata/labels/x"}]`, false},
		{"through a string: json-patch", "pod", `[{"op":"add","path":"/metadata/name/x","value":"1"}]`, false},
		{"a name twice in a value: json-patch", "pod", `[{"op":"add","path":"/metadata/annotations","value":{"a":"1","a":"2"}}]`, false},
		{"more operations than are worth it in place: json-patch", "pod", `[` +
			`{"op":"add","path":"/metadata/labels/l1","value":"1"},{"op":"add","path":"/metadata/labels/l2","value":"1"},{"op":"add","path":"/metadata/labels/l3","value":"1"},` +
			`{"op":"add","path":"/metadata/labels/l4","value":"1"},{"op":"add","path":"/metadata/labels/l5","value":"1"},{"op":"add","path":"/metadata/labels/l6","value":"1"},` +
			`{"op":"add","path":"/metadata/labels/l7","value":"1"},{"op":"add","path":"/metadata/labels/l8","value":"1"},{"op":"add","path":"/metadata/labels/l9","value":"1"}]`, false},
		{"an unknown op fails", "pod", `[{"op":"frobnicate","path":"/metadata/labels/x"}]`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			object := objects[tc.object]
			doc, err := json.Marshal(object)
			if err != nil {
				t.Fatal(err)
			}
			checkAsJSONPatchV4(t, object, doc, []byte(tc.patch))
			patch, err := jsonpatch.DecodePatch([]byte(tc.patch))
			if err != nil {
				t.Fatal(err)
			}
			if _, inPlace := applyToMembers(doc, patch, object); inPlace != tc.inPlace {
				t.Errorf("applied to the bytes: %t, want %t", inPlace, tc.inPlace)
			}
		})
	}
}

// FuzzPatchDecodesAsJSONPatchV4: for any patch, and any document as the dispatch holds it
// (json.Marshal's of a custom resource, or of a ControllerRevision: a typed object with a
// RawExtension), applyPatch fails where json-patch v4 fails, and otherwise gives a document
// that decodes, as the dispatch decodes it, to json-patch's object.
func FuzzPatchDecodesAsJSONPatchV4(f *testing.F) {
	for _, object := range patchedObjects(f) {
		doc, err := json.Marshal(object)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(doc, []byte(`[{"op":"add","path":"/metadata/labels/new","value":"v"}]`))
		f.Add(doc, []byte(`[{"op":"remove","path":"/metadata/labels/app"},{"op":"replace","path":"/data/spec","value":{"b":[1]}}]`))
	}
	f.Add([]byte(`{"kind":"Widget","apiVersion":"example.com/v1","a":{"b":{}},"c":"d"}`), []byte(`[{"op":"add","path":"/a/b/x","value":null},{"op":"remove","path":"/a/b"}]`))
	f.Add([]byte(`{"kind":"Widget","apiVersion":"example.com/v1","a":{"a":1,"b":2}}`), []byte(`[{"op":"remove","path":"/a/b"},{"op":"add","path":"/a/~0","value":{"x" : "<"}}]`))
	gvk := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	f.Fuzz(func(t *testing.T, input, patch []byte) {
		// A custom resource: any object, as json.Marshal writes it.
		var v map[string]any
		if json.Unmarshal(input, &v) == nil {
			u := &unstructured.Unstructured{Object: v}
			if u.GetObjectKind().GroupVersionKind().Empty() {
				u.SetGroupVersionKind(gvk)
			}
			if doc, err := json.Marshal(u); err == nil {
				checkAsJSONPatchV4(t, u, doc, patch)
			}
		}
		// A ControllerRevision decoded from the input, as json.Marshal writes it.
		var revision appsv1.ControllerRevision
		if json.Unmarshal(input, &revision) == nil {
			revision.APIVersion, revision.Kind = "apps/v1", "ControllerRevision"
			if doc, err := json.Marshal(&revision); err == nil && bytes.HasPrefix(doc, []byte("{")) {
				checkAsJSONPatchV4(t, &revision, doc, patch)
			}
		}
	})
}
