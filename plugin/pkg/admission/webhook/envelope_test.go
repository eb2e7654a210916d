package webhook

import (
	"bytes"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionv1beta1 "k8s.io/api/admission/v1beta1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/admission"
	upstreamwebhook "k8s.io/apiserver/pkg/admission/plugin/webhook"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/generic"
	webhookrequest "k8s.io/apiserver/pkg/admission/plugin/webhook/request"
	"k8s.io/apiserver/pkg/authentication/user"
)

// TestEnvelopeIsTheCodecsBytes: the request body built from the objects' cached JSON is,
// byte for byte, what the webhook client's codec (upstream's ClientManager's: a legacy codec
// over admission v1beta1 and v1) writes for the same review, for each review version, with
// and without each object, with characters encoding/json escapes, and with user extras
// named like the review's own fields.
func TestEnvelopeIsTheCodecsBytes(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{admissionv1beta1.AddToScheme, admissionv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	codec := serializer.NewCodecFactory(scheme).LegacyCodec(admissionv1beta1.SchemeGroupVersion, admissionv1.SchemeGroupVersion)

	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Annotations: map[string]string{"html": "<a href='x'>&amp;</a>", "sep": "\u2028\u2029", "quote": `"object":null,"oldObject":null`}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i", Args: []string{"", "é", "\x01"}}}},
	}
	oldPod := pod.DeepCopy()
	oldPod.Labels = map[string]string{"old": "true"}
	widget := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w"},
		"spec": map[string]any{"n": int64(1) << 60, "f": 0.5, "s": "<>&", "list": []any{nil, true, map[string]any{}}},
	}}
	podKind := corev1.SchemeGroupVersion.WithKind("Pod")
	podResource := corev1.SchemeGroupVersion.WithResource("pods")
	extras := map[string][]string{"object": nil, "oldObject": nil, "scopes": {"a", "<b>"}}
	for _, tc := range []struct {
		name      string
		obj, old  runtime.Object
		operation admission.Operation
		options   runtime.Object
		kind      schema.GroupVersionKind
		resource  schema.GroupVersionResource
		extra     map[string][]string
	}{
		{"create", pod, nil, admission.Create, &metav1.CreateOptions{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "CreateOptions"}}, podKind, podResource, nil},
		{"update", pod, oldPod, admission.Update, &metav1.UpdateOptions{FieldManager: "m"}, podKind, podResource, extras},
		{"delete", nil, oldPod, admission.Delete, &metav1.DeleteOptions{}, podKind, podResource, extras},
		{"connect, no objects", nil, nil, admission.Connect, nil, podKind, podResource, nil},
		{"custom resource", widget, widget.DeepCopy(), admission.Update, nil, schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"},
			schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}, extras},
	} {
		for _, version := range []string{"v1", "v1beta1"} {
			t.Run(tc.name+"/"+version, func(t *testing.T) {
				userInfo := &user.DefaultInfo{Name: "u", UID: "1", Groups: []string{"g"}, Extra: tc.extra}
				record := admission.NewAttributesRecord(tc.obj, tc.old, tc.kind, "ns", "p", tc.resource, "", tc.operation, tc.options, false, userInfo)
				attr := NewVersionedAttributes(record, tc.obj, tc.old, tc.kind)
				hook := upstreamwebhook.NewMutatingWebhookAccessor("uid", "config", &admissionregistrationv1.MutatingWebhook{Name: "w", AdmissionReviewVersions: []string{version}})
				invocation := &generic.WebhookInvocation{Webhook: hook, Resource: tc.resource, Kind: tc.kind}
				_, request, _, err := webhookrequest.CreateAdmissionObjects(attr, invocation)
				if err != nil {
					t.Fatal(err)
				}
				want, err := runtime.Encode(codec, request)
				if err != nil {
					t.Fatal(err)
				}
				// Twice over one cache: the second call takes the objects' cached JSON.
				encoded := &EncodedObjects{}
				for i := range 2 {
					got, err := encodeReview(request, encoded)
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(got, want) {
						t.Fatalf("call %d: body differs from the codec's\n got: %s\nwant: %s", i+1, got, want)
					}
				}
			})
		}
	}
}
