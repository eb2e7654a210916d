package podsecuritypolicy

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	api "k8s.io/kubernetes/pkg/apis/core"
	corev1conversion "k8s.io/kubernetes/pkg/apis/core/v1"
	"sigs.k8s.io/yaml"

	policyv1beta1 "github.com/portcullis-k8s/api/policy/v1beta1"
	deploypsp "github.com/portcullis-k8s/portcullis/build/deploy/podsecuritypolicy"
	"github.com/portcullis-k8s/portcullis/pkg/apis/policy"
	"github.com/portcullis-k8s/portcullis/pkg/apis/policy/install"
	"github.com/portcullis-k8s/portcullis/pkg/kubecompat"
)

var fuzzScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	install.Install(s)
	return s
}()

// decodePolicy decodes a policy/v1beta1 PodSecurityPolicy as the plugin does: defaulted,
// converted to the internal type.
func decodePolicy(data []byte) (*policy.PodSecurityPolicy, bool) {
	var versioned policyv1beta1.PodSecurityPolicy
	if err := yaml.Unmarshal(data, &versioned); err != nil {
		return nil, false
	}
	fuzzScheme.Default(&versioned)
	internal := &policy.PodSecurityPolicy{}
	if err := fuzzScheme.Convert(&versioned, internal, nil); err != nil {
		return nil, false
	}
	return internal, true
}

// decodePod decodes a v1 pod as the server does before admission: defaulted, converted to
// the internal type. Admission sees pods before validation, so any pod may come.
func decodePod(data []byte) (*api.Pod, bool) {
	var v1 corev1.Pod
	if err := yaml.Unmarshal(data, &v1); err != nil {
		return nil, false
	}
	corev1conversion.SetObjectDefaults_Pod(&v1)
	pod := &api.Pod{}
	if err := corev1conversion.Convert_v1_Pod_To_core_Pod(&v1, pod, nil); err != nil {
		return nil, false
	}
	return pod, true
}

func policyJSON(t testing.TB, p *policy.PodSecurityPolicy) []byte {
	t.Helper()
	var versioned policyv1beta1.PodSecurityPolicy
	if err := fuzzScheme.Convert(p, &versioned, nil); err != nil {
		t.Fatal(err)
	}
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

// FuzzProvider builds a policy's strategies (every strategy's constructor, the seccomp and
// AppArmor annotations parsed) and applies the policy to a pod: MutatePod, then ValidatePod.
// Neither may change the policy, ValidatePod may not change the pod, and a pod the policy
// admits once defaulted is a fixed point of MutatePod — the plugin's validating phase
// requires a policy that admits the admitted pod unchanged. Seeds are the example policies
// (shipped, and the tests' own) and the tests' pods; crashers are kept under testdata/fuzz.
func FuzzProvider(f *testing.F) {
	var policies [][]byte
	for _, name := range []string{"privileged", "baseline", "restricted"} {
		data, err := deploypsp.Policy(name)
		if err != nil {
			f.Fatal(err)
		}
		policies = append(policies, data)
	}
	for _, p := range []*policy.PodSecurityPolicy{permissive(), strictPolicy()} {
		policies = append(policies, policyJSON(f, p))
	}
	hostPath := typicalPod()
	hostPath.Spec.Volumes = append(hostPath.Spec.Volumes, api.Volume{Name: "host", VolumeSource: api.VolumeSource{HostPath: &api.HostPathVolumeSource{Path: "/var/run/docker.sock"}}})
	privileged := typicalPod()
	kubecompat.SetPodHostNamespaces(&privileged.Spec, kubecompat.HostNamespaces{Network: true})
	privileged.Spec.Containers[0].SecurityContext = &api.SecurityContext{Privileged: ptr(true)}
	set := podWithAllKinds()
	set.Spec.SecurityContext = &api.PodSecurityContext{RunAsUser: ptr(int64(1500)), RunAsGroup: ptr(int64(3500)), FSGroup: ptr(int64(7500))}
	set.Spec.RuntimeClassName = ptr("other")
	set.Spec.Containers[0].SecurityContext = &api.SecurityContext{AllowPrivilegeEscalation: ptr(true), ReadOnlyRootFilesystem: ptr(false)}
	pods := [][]byte{podJSON(f, typicalPod()), podJSON(f, restrictedPod()), podJSON(f, podWithAllKinds()), podJSON(f, hostPath), podJSON(f, privileged), podJSON(f, set)}
	for i, p := range policies {
		f.Add(p, pods[i%len(pods)])
	}

	factory := NewSimpleStrategyFactory()
	f.Fuzz(func(t *testing.T, policyData, podData []byte) {
		psp, ok := decodePolicy(policyData)
		if !ok {
			return
		}
		pod, ok := decodePod(podData)
		if !ok {
			return
		}
		pristine := psp.DeepCopy()
		provider, err := NewSimpleProvider(psp, "ns", factory)
		if err != nil {
			return
		}
		before := pod.DeepCopy()
		provider.ValidatePod(pod)
		if !apiequality.Semantic.DeepEqual(before, pod) {
			t.Fatal("ValidatePod changed the pod")
		}
		if err := provider.MutatePod(pod); err != nil {
			return
		}
		errs := provider.ValidatePod(pod)
		if !apiequality.Semantic.DeepEqual(pristine, psp) {
			t.Fatal("applying the policy changed it")
		}
		if len(errs) > 0 {
			return
		}
		again := pod.DeepCopy()
		if err := provider.MutatePod(again); err != nil {
			t.Fatalf("MutatePod fails on a pod it defaulted and the policy admits: %v", err)
		}
		if !apiequality.Semantic.DeepEqual(pod, again) {
			t.Fatalf("MutatePod changes a pod it defaulted and the policy admits:\nonce:  %+v\ntwice: %+v", pod.Spec, again.Spec)
		}
	})
}
