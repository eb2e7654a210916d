package podsecuritypolicy

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	api "k8s.io/kubernetes/pkg/apis/core"
	corev1conversion "k8s.io/kubernetes/pkg/apis/core/v1"
	"sigs.k8s.io/yaml"

	policyv1beta1 "github.com/portcullis-k8s/api/policy/v1beta1"
	deploypsp "github.com/portcullis-k8s/portcullis/build/deploy/podsecuritypolicy"
	"github.com/portcullis-k8s/portcullis/pkg/apis/policy"
	psp "github.com/portcullis-k8s/portcullis/pkg/security/podsecuritypolicy"
)

// fuzzPoliciesMax bounds the policies of one FuzzAdmit input.
const fuzzPoliciesMax = 6

// allowAll lets everyone use every policy.
var allowAll = authorizer.AuthorizerFunc(func(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
	return authorizer.DecisionAllow, "", nil
})

// FuzzAdmit compiles policies as the plugin's informer does (from the unstructured objects
// the API serves) and admits a new pod with both phases, as the server does. A pod the
// mutating phase admits, the validating phase admits too, under the policy the mutating
// phase recorded; securityChanged sees every change a policy makes to a pod. Seeds are the
// shipped example policies, the tests' policies and pods; crashers are kept under
// testdata/fuzz.
func FuzzAdmit(f *testing.F) {
	var examples []json.RawMessage
	for _, name := range []string{"privileged", "baseline", "restricted"} {
		data, err := deploypsp.Policy(name)
		if err != nil {
			f.Fatal(err)
		}
		j, err := yaml.YAMLToJSON(data)
		if err != nil {
			f.Fatal(err)
		}
		examples = append(examples, j)
	}
	everything := defaulting("everything")
	everything.Annotations = map[string]string{
		policy.SeccompAllowedProfilesAnnotationKey:  "runtime/default",
		policy.SeccompDefaultProfileAnnotationKey:   "runtime/default",
		policy.AppArmorAllowedProfilesAnnotationKey: "runtime/default",
		policy.AppArmorDefaultProfileAnnotationKey:  "runtime/default",
	}
	everything.Spec.RunAsGroup = &policy.RunAsGroupStrategyOptions{Rule: policy.RunAsGroupStrategyMustRunAs, Ranges: []policy.IDRange{{Min: 2000, Max: 2000}}}
	everything.Spec.FSGroup = policy.FSGroupStrategyOptions{Rule: policy.FSGroupStrategyMustRunAs, Ranges: []policy.IDRange{{Min: 3000, Max: 3000}}}
	everything.Spec.SELinux = policy.SELinuxStrategyOptions{Rule: policy.SELinuxStrategyMustRunAs, SELinuxOptions: &api.SELinuxOptions{Level: "s0:c1"}}
	everything.Spec.DefaultAddCapabilities = []api.Capability{"NET_ADMIN"}
	everything.Spec.RequiredDropCapabilities = []api.Capability{"ALL"}
	everything.Spec.AllowPrivilegeEscalation = false
	everything.Spec.ReadOnlyRootFilesystem = true
	everything.Spec.RuntimeClass = &policy.RuntimeClassStrategyOptions{AllowedRuntimeClassNames: []string{"gvisor"}, DefaultRuntimeClassName: ptr("gvisor")}
	tests := [][]json.RawMessage{
		examples,
		{policyJSON(f, defaulting("a-defaulting")), policyJSON(f, unprivileged("b-unchanged"))},
		{policyJSON(f, everything)},
		{policyJSON(f, permissive("p")), examples[2]},
	}
	pods := []*api.Pod{
		newPod(nil),
		newPod(func(p *api.Pod) { p.Spec.Containers[0].SecurityContext = &api.SecurityContext{Privileged: ptr(true)} }),
		newPod(func(p *api.Pod) {
			p.Spec.InitContainers = []api.Container{{Name: "init", Image: "busybox"}}
			p.Spec.EphemeralContainers = []api.EphemeralContainer{{EphemeralContainerCommon: api.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}}
		}),
	}
	for i, policies := range tests {
		data, err := json.Marshal(policies)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, podJSON(f, pods[i%len(pods)]))
	}

	f.Fuzz(func(t *testing.T, policiesData, podData []byte) {
		var list []json.RawMessage
		if err := yaml.Unmarshal(policiesData, &list); err != nil || len(list) == 0 || len(list) > fuzzPoliciesMax {
			return
		}
		p := New(psp.NewSimpleStrategyFactory())
		p.authz = allowAll
		p.ready = func() bool { return true }
		var objs []any
		for i, raw := range list {
			obj, ok := unstructuredOf(raw)
			if !ok {
				return
			}
			u := &unstructured.Unstructured{Object: obj}
			u.SetName(fmt.Sprintf("p%d", i))
			compiled, err := p.compileObject(u)
			if err != nil {
				t.Fatal(err)
			}
			objs = append(objs, compiled)
		}
		p.setPolicies(objs)

		var v1 corev1.Pod
		if err := yaml.Unmarshal(podData, &v1); err != nil {
			return
		}
		v1.Namespace = "ns"
		corev1conversion.SetObjectDefaults_Pod(&v1)
		pod := &api.Pod{}
		if err := corev1conversion.Convert_v1_Pod_To_core_Pod(&v1, pod, nil); err != nil {
			return
		}

		for _, obj := range objs {
			c := obj.(*compiledPolicy)
			if c.provider == nil {
				continue
			}
			candidate := pod.DeepCopy()
			applyPolicy(c.provider, candidate)
			whole := !apiequality.Semantic.DeepEqual(as124Saw(pod, candidate), candidate)
			if changed := securityChanged(pod, candidate, false); changed != whole {
				t.Fatalf("policy %s: securityChanged = %v, but the whole pod changed: %v", c.Name, changed, whole)
			}
		}

		attrs := admission.NewAttributesRecord(pod, nil, api.Kind("Pod").WithVersion("v1"), pod.Namespace, pod.Name,
			api.Resource("pods").WithVersion("v1"), "", admission.Create, nil, false, alice)
		ctx := context.Background()
		if err := p.Admit(ctx, attrs, nil); err != nil {
			if !apierrors.IsForbidden(err) {
				t.Fatalf("want 403 Forbidden or admission, got %v", err)
			}
			return
		}
		name := pod.Annotations[ValidatedPSPAnnotation]
		if name == "" {
			t.Fatal("admitted without the kubernetes.io/psp annotation")
		}
		if err := p.Validate(ctx, attrs, nil); err != nil {
			t.Fatalf("the mutating phase admitted the pod under %s, the validating phase refuses it: %v", name, err)
		}
	})
}

// unstructuredOf decodes JSON or YAML as the API server decodes a body.
func unstructuredOf(data []byte) (map[string]any, bool) {
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, false
	}
	var obj map[string]any
	if err := utiljson.Unmarshal(j, &obj); err != nil || obj == nil {
		return nil, false
	}
	return obj, true
}

func policyJSON(t testing.TB, p *policy.PodSecurityPolicy) json.RawMessage {
	t.Helper()
	var versioned policyv1beta1.PodSecurityPolicy
	if err := policyScheme.Convert(p, &versioned, nil); err != nil {
		t.Fatal(err)
	}
	versioned.APIVersion, versioned.Kind = policyv1beta1.SchemeGroupVersion.String(), "PodSecurityPolicy"
	data, err := json.Marshal(&versioned)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func podJSON(t testing.TB, p *api.Pod) []byte {
	t.Helper()
	var v1 corev1.Pod
	if err := corev1conversion.Convert_core_Pod_To_v1_Pod(p, &v1, nil); err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(&v1)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// as124Saw is pod as 1.24 would compare it with candidate: a pod with the legacy seccomp pod
// annotation keeps it, so the field a policy copies from it is no change.
func as124Saw(pod, candidate *api.Pod) *api.Pod {
	if pod.Annotations[api.SeccompPodAnnotationKey] == "" || candidate.Spec.SecurityContext == nil {
		return pod
	}
	out := pod.DeepCopy()
	if out.Spec.SecurityContext == nil {
		out.Spec.SecurityContext = &api.PodSecurityContext{}
	}
	out.Spec.SecurityContext.SeccompProfile = candidate.Spec.SecurityContext.SeccompProfile
	return out
}
