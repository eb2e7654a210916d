package podsecuritypolicy

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	api "k8s.io/kubernetes/pkg/apis/core"

	policyv1beta1 "github.com/portcullis-k8s/api/policy/v1beta1"
	"github.com/portcullis-k8s/portcullis/pkg/apis/policy"
)

func listed(t *testing.T, policies ...*policy.PodSecurityPolicy) []unstructured.Unstructured {
	t.Helper()
	var out []unstructured.Unstructured
	for _, p := range policies {
		var versioned policyv1beta1.PodSecurityPolicy
		if err := policyScheme.Convert(p, &versioned, nil); err != nil {
			t.Fatal(err)
		}
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&versioned)
		if err != nil {
			t.Fatal(err)
		}
		u := unstructured.Unstructured{Object: obj}
		u.SetAPIVersion("policy/v1beta1")
		u.SetKind("PodSecurityPolicy")
		out = append(out, u)
	}
	return out
}

func TestEvaluator(t *testing.T) {
	broken := unprivileged("broken")
	broken.Annotations = map[string]string{policy.SeccompDefaultProfileAnnotationKey: "not-a-profile"}
	g := grants{"defaulting": {{"alice", "ns", "policy"}}, "unprivileged": {{defaultSA, "ns", "policy"}}, "broken": {{"alice", "*", "policy"}}}
	e := NewEvaluator(listed(t, defaulting("defaulting"), unprivileged("unprivileged"), broken), authorizer.AuthorizerFunc(g.Authorize))

	if got := e.Unusable(); len(got) != 1 || !strings.Contains(got["broken"], "not-a-profile") {
		t.Errorf("Unusable() = %v, want broken with its reason", got)
	}
	privileged := func(p *api.Pod) { p.Spec.Containers[0].SecurityContext = &api.SecurityContext{Privileged: ptr(true)} }
	rootless := func(p *api.Pod) { p.Spec.ServiceAccountName = "" }
	tests := []struct {
		name   string
		pod    *api.Pod
		create bool
		want   Verdict
	}{
		{"a new pod the service account's policy admits unchanged", newPod(nil), true, Verdict{Policy: "unprivileged"}},
		{"a new pod only the requester's policy admits, with its default", newPod(rootless), true,
			Verdict{Policy: "defaulting", Defaults: []string{`spec.containers[0].securityContext: {"runAsUser":1000}`}}},
		{"a new pod no policy admits", newPod(privileged), true,
			Verdict{Refusal: "PodSecurityPolicy: unable to admit pod: [spec.containers[0].securityContext.privileged: Invalid value: true: Privileged containers are not allowed spec.containers[0].securityContext.privileged: Invalid value: true: Privileged containers are not allowed]"}},
		{"an existing pod that needs a default cannot be updated", newPod(rootless), false,
			Verdict{Refusal: "PodSecurityPolicy: unable to validate pod: []"}},
	}
	alice := alice
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := tc.pod.DeepCopy()
			got := e.Evaluate(context.Background(), pod, alice, tc.create)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
			if !reflect.DeepEqual(pod, tc.pod) {
				t.Errorf("Evaluate changed the pod")
			}
		})
	}
}
