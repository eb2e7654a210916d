package apparmor

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	api "k8s.io/kubernetes/pkg/apis/core"

	"github.com/portcullis-k8s/portcullis/pkg/apis/policy"
)

func str(s string) *string { return &s }

var (
	runtimeDefault = &api.AppArmorProfile{Type: api.AppArmorProfileTypeRuntimeDefault}
	unconfined     = &api.AppArmorProfile{Type: api.AppArmorProfileTypeUnconfined}
)

func localhost(p string) *api.AppArmorProfile {
	return &api.AppArmorProfile{Type: api.AppArmorProfileTypeLocalhost, LocalhostProfile: str(p)}
}

func annotations(allowed, def string) map[string]string {
	m := map[string]string{}
	if allowed != "-" {
		m[policy.AppArmorAllowedProfilesAnnotationKey] = allowed
	}
	if def != "" {
		m[policy.AppArmorDefaultProfileAnnotationKey] = def
	}
	return m
}

// pod has one regular container "c" with the given profile and one ephemeral "e" without.
func pod(podProfile, cProfile *api.AppArmorProfile, ann map[string]string) *api.Pod {
	p := &api.Pod{}
	p.Annotations = ann
	if podProfile != nil {
		p.Spec.SecurityContext = &api.PodSecurityContext{AppArmorProfile: podProfile}
	}
	c := api.Container{Name: "c"}
	if cProfile != nil {
		c.SecurityContext = &api.SecurityContext{AppArmorProfile: cProfile}
	}
	p.Spec.Containers = []api.Container{c}
	return p
}

func TestNewStrategyRejectsBadDefault(t *testing.T) {
	if _, err := NewStrategy(annotations("-", "docker/default")); err == nil {
		t.Fatal("want error")
	}
}

func TestGenerate(t *testing.T) {
	withEphemeral := pod(nil, runtimeDefault, nil)
	withEphemeral.Spec.EphemeralContainers = []api.EphemeralContainer{{EphemeralContainerCommon: api.EphemeralContainerCommon{Name: "e"}}}
	windows := pod(nil, nil, nil)
	windows.Spec.OS = &api.PodOS{Name: api.Windows}
	tests := []struct {
		name string
		def  string
		pod  *api.Pod
		want *api.AppArmorProfile
	}{
		{"no default", "", pod(nil, nil, nil), nil},
		{"default on the pod", "runtime/default", pod(nil, nil, nil), runtimeDefault},
		{"localhost default", "localhost/k8s-nginx", pod(nil, nil, nil), localhost("k8s-nginx")},
		{"pod profile kept", "runtime/default", pod(unconfined, nil, nil), nil},
		{"every container has its own", "runtime/default", pod(nil, unconfined, nil), nil},
		{"a container annotation counts as its own", "runtime/default",
			pod(nil, nil, map[string]string{api.DeprecatedAppArmorAnnotationKeyPrefix + "c": "unconfined"}), nil},
		{"an ephemeral container without one needs the default", "runtime/default", withEphemeral, runtimeDefault},
		{"windows pods get none", "runtime/default", windows, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewStrategy(annotations("-", tc.def))
			if err != nil {
				t.Fatal(err)
			}
			got, _ := s.Generate(tc.pod)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		allowed string
		pod     *api.Pod
		want    []string
	}{
		{"unrestricted", "-", pod(unconfined, unconfined, nil), nil},
		{"pod profile allowed, inherited", "runtime/default", pod(runtimeDefault, nil, nil), nil},
		{"pod profile not allowed", "runtime/default", pod(unconfined, nil, nil),
			[]string{`spec.securityContext.appArmorProfile: Forbidden: unconfined is not an allowed profile. Allowed values: "runtime/default"`}},
		{"container profile not allowed", "runtime/default,localhost/a", pod(nil, localhost("b"), nil),
			[]string{`spec.containers[0].securityContext.appArmorProfile: Forbidden: localhost/b is not an allowed profile. Allowed values: "runtime/default,localhost/a"`}},
		{"container localhost allowed", "runtime/default,localhost/a", pod(nil, localhost("a"), nil), nil},
		{"no profile at all", "runtime/default", pod(nil, nil, nil),
			[]string{`spec.containers[0].securityContext.appArmorProfile: Forbidden: AppArmor profile must be set`}},
		{"legacy annotation judged", "runtime/default", pod(runtimeDefault, nil, map[string]string{api.DeprecatedAppArmorAnnotationKeyPrefix + "c": "unconfined"}),
			[]string{`metadata.annotations[container.apparmor.security.beta.kubernetes.io/c]: Forbidden: unconfined is not an allowed profile. Allowed values: "runtime/default"`}},
		{"field and annotation disagree", "runtime/default,unconfined", pod(nil, runtimeDefault, map[string]string{api.DeprecatedAppArmorAnnotationKeyPrefix + "c": "unconfined"}),
			[]string{`spec.containers[0].securityContext.appArmorProfile: Forbidden: AppArmor profile runtime/default in the field does not match "unconfined" in the legacy annotation`}},
		{"empty allowed list forbids any", "", pod(runtimeDefault, nil, nil),
			[]string{`spec.securityContext.appArmorProfile: Forbidden: runtime/default is not an allowed profile. Allowed values: ""`}},
		// 1.24: the annotation, even empty, means a profile must be set; an empty list
		// admits no container.
		{"empty allowed list refuses a container without a profile", "", pod(nil, nil, nil),
			[]string{`spec.containers[0].securityContext.appArmorProfile: Forbidden: AppArmor profile must be set`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := NewStrategy(annotations(tc.allowed, ""))
			var got []string
			for _, e := range s.ValidatePod(tc.pod) {
				got = append(got, e.Error())
			}
			scPath := field.NewPath("spec", "containers").Index(0).Child("securityContext")
			for _, e := range s.ValidateContainer(tc.pod, &tc.pod.Spec.Containers[0], scPath) {
				got = append(got, e.Error())
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// The cases of 1.24's strategy_test.go (TestGenerate, TestValidate), whose pods carry the
// legacy per-container annotation: every policy × pod combination, with 1.24's verdict. 1.24
// wrote a default into the container's annotation; this strategy sets the pod-level field,
// so "defaulted" is a pod-level RuntimeDefault here.
func TestStrategy124(t *testing.T) {
	const name = "test-c"
	key := api.DeprecatedAppArmorAnnotationKeyPrefix + name
	pods := map[string]map[string]string{
		"without AppArmor": {"foo": "bar"},
		"runtime/default":  {"foo": "bar", key: "runtime/default"},
		"localhost/foo":    {"foo": "bar", key: "localhost/foo"},
		"localhost/bad":    {"foo": "bar", key: "localhost/bad"},
	}
	policies := map[string]map[string]string{
		"no AppArmor":                {"foo": "bar"},
		"unconstrained with default": {policy.AppArmorDefaultProfileAnnotationKey: "runtime/default"},
		"constrained":                {policy.AppArmorAllowedProfilesAnnotationKey: "runtime/default,localhost/foo"},
		"constrained with default": {policy.AppArmorDefaultProfileAnnotationKey: "runtime/default",
			policy.AppArmorAllowedProfilesAnnotationKey: "runtime/default,localhost/foo"},
	}
	tests := []struct {
		policy, pod string
		defaulted   bool
		refused     bool
	}{
		{"no AppArmor", "without AppArmor", false, false},
		{"unconstrained with default", "without AppArmor", true, false},
		{"constrained", "without AppArmor", false, true},
		{"constrained with default", "without AppArmor", true, true}, // refused as it is; the default makes it pass
		{"no AppArmor", "localhost/bad", false, false},
		{"unconstrained with default", "localhost/bad", false, false},
		{"constrained", "localhost/bad", false, true},
		{"constrained with default", "localhost/bad", false, true},
	}
	// A pod naming an allowed profile is left alone and admitted by every policy.
	for _, p := range []string{"runtime/default", "localhost/foo"} {
		for policyName := range policies {
			tests = append(tests, struct {
				policy, pod string
				defaulted   bool
				refused     bool
			}{policyName, p, false, false})
		}
	}
	for _, tc := range tests {
		t.Run(tc.policy+"/"+tc.pod, func(t *testing.T) {
			s, err := NewStrategy(policies[tc.policy])
			if err != nil {
				t.Fatal(err)
			}
			pod := &api.Pod{}
			pod.Annotations = pods[tc.pod]
			pod.Spec.Containers = []api.Container{{Name: name, Image: "busybox"}}
			generated, err := s.Generate(pod)
			if err != nil {
				t.Fatal(err)
			}
			if got := generated != nil; got != tc.defaulted {
				t.Errorf("defaulted: %v (%+v), want %v", got, generated, tc.defaulted)
			}
			path := field.NewPath("spec", "containers").Index(0).Child("securityContext")
			errs := append(s.ValidatePod(pod), s.ValidateContainer(pod, &pod.Spec.Containers[0], path)...)
			if got := len(errs) > 0; got != tc.refused {
				t.Errorf("refused: %v (%v), want %v", got, errs, tc.refused)
			}
			if tc.refused && len(errs) != 1 {
				t.Errorf("%d errors, want 1 as in 1.24: %v", len(errs), errs)
			}
			if generated != nil {
				// Once defaulted, the pod passes: the pod-level profile is inherited.
				pod.Spec.SecurityContext = &api.PodSecurityContext{AppArmorProfile: generated}
				if errs := append(s.ValidatePod(pod), s.ValidateContainer(pod, &pod.Spec.Containers[0], path)...); len(errs) != 0 {
					t.Errorf("refused once defaulted: %v", errs)
				}
			}
		})
	}
}
