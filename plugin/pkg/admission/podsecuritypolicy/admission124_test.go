package podsecuritypolicy

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	admissiontesting "k8s.io/apiserver/pkg/admission/testing"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	api "k8s.io/kubernetes/pkg/apis/core"
	corev1conversion "k8s.io/kubernetes/pkg/apis/core/v1"

	policyv1beta1 "github.com/portcullis-k8s/api/policy/v1beta1"
	"github.com/portcullis-k8s/portcullis/pkg/apis/policy"
	"github.com/portcullis-k8s/portcullis/pkg/kubecompat"
	psp "github.com/portcullis-k8s/portcullis/pkg/security/podsecuritypolicy"
	psputil "github.com/portcullis-k8s/portcullis/pkg/security/podsecuritypolicy/util"
)

// The cases of 1.24's plugin admission_test.go, as table data against this plugin: the same
// policies, pods, users and grants, and the same verdicts, chosen policies, defaults and
// audit annotations. 1.24's seccomp profile names "foo" and "bar" are written
// "localhost/foo" and "localhost/bar" (1.37 pod validation refuses any other spelling).

// allowed124 is 1.24's TestAuthorizer: user → namespace ("" for cluster-wide) → policy → may
// use; nil allows everything. group, when set, is the only API group grants count in.
type allowed124 struct {
	grants map[string]map[string]map[string]bool
	group  string
}

func (a allowed124) Authorize(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.grants == nil {
		return authorizer.DecisionAllow, "", nil
	}
	byNamespace := a.grants[attrs.GetUser().GetName()]
	if (a.group == "" || attrs.GetAPIGroup() == a.group) && (byNamespace[attrs.GetNamespace()][attrs.GetName()] || byNamespace[""][attrs.GetName()]) {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// restrictive124 is 1.24's restrictivePSP: everything MustRunAs 999, no escalation.
func restrictive124(name string) *policy.PodSecurityPolicy {
	only999 := []policy.IDRange{{Min: 999, Max: 999}}
	p := &policy.PodSecurityPolicy{Spec: policy.PodSecurityPolicySpec{
		RunAsUser:          policy.RunAsUserStrategyOptions{Rule: policy.RunAsUserStrategyMustRunAs, Ranges: only999},
		RunAsGroup:         &policy.RunAsGroupStrategyOptions{Rule: policy.RunAsGroupStrategyMustRunAs, Ranges: only999},
		SELinux:            policy.SELinuxStrategyOptions{Rule: policy.SELinuxStrategyMustRunAs, SELinuxOptions: &api.SELinuxOptions{Level: "s9:z0,z1"}},
		FSGroup:            policy.FSGroupStrategyOptions{Rule: policy.FSGroupStrategyMustRunAs, Ranges: only999},
		SupplementalGroups: policy.SupplementalGroupsStrategyOptions{Rule: policy.SupplementalGroupsStrategyMustRunAs, Ranges: only999},
	}}
	p.Name, p.Annotations = name, map[string]string{}
	return p
}

// permissive124 is 1.24's permissivePSP (its host port range ends at 65536, as 1.24's did).
func permissive124(name string) *policy.PodSecurityPolicy {
	p := &policy.PodSecurityPolicy{Spec: policy.PodSecurityPolicySpec{
		AllowPrivilegeEscalation: true,
		HostIPC:                  true, HostNetwork: true, HostPID: true,
		HostPorts:           []policy.HostPortRange{{Min: 0, Max: 65536}},
		Volumes:             []policy.FSType{policy.All},
		AllowedCapabilities: []api.Capability{policy.AllowAllCapabilities},
		RunAsUser:           policy.RunAsUserStrategyOptions{Rule: policy.RunAsUserStrategyRunAsAny},
		RunAsGroup:          &policy.RunAsGroupStrategyOptions{Rule: policy.RunAsGroupStrategyRunAsAny},
		SELinux:             policy.SELinuxStrategyOptions{Rule: policy.SELinuxStrategyRunAsAny},
		FSGroup:             policy.FSGroupStrategyOptions{Rule: policy.FSGroupStrategyRunAsAny},
		SupplementalGroups:  policy.SupplementalGroupsStrategyOptions{Rule: policy.SupplementalGroupsStrategyRunAsAny},
	}}
	p.Name, p.Annotations = name, map[string]string{}
	return p
}

// goodPod124 is 1.24's goodPod: empty security contexts, the default service account.
func goodPod124() *api.Pod {
	p := &api.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod", Namespace: "namespace", Annotations: map[string]string{}}}
	p.Spec.ServiceAccountName = "default"
	p.Spec.SecurityContext = &api.PodSecurityContext{}
	p.Spec.Containers = []api.Container{{Name: "container", SecurityContext: &api.SecurityContext{}}}
	return p
}

// recordingAttributes keeps the audit annotations the plugin adds.
type recordingAttributes struct {
	admission.Attributes
	annotations map[string]string
}

func (r recordingAttributes) AddAnnotation(k, v string) error {
	r.annotations[k] = v
	return r.Attributes.AddAnnotation(k, v)
}

// newPlugin124 is 1.24's NewTestAdmission: the plugin with these policies and grants, ready.
func newPlugin124(t *testing.T, authz allowed124, policies []*policy.PodSecurityPolicy) *Plugin {
	t.Helper()
	return pluginWith(t, authz.Authorize, policies...)
}

// case124 is one run of 1.24's testPSPAdmitAdvanced.
type case124 struct {
	op                      admission.Operation
	policies                []*policy.PodSecurityPolicy
	authz                   allowed124 // the zero value: every policy may be used
	user                    user.Info
	pod, oldPod             *api.Pod
	passAdmit, passValidate bool
	canMutate               bool
	wantPolicy              string
}

// run does what 1.24's testPSPAdmitAdvanced did: Admit (reinvoked, as the chain may), then
// Validate, checking verdicts, the chosen policy, that nothing changed when nothing may, and
// the audit annotations.
func (c case124) run(t *testing.T) {
	t.Helper()
	p := newPlugin124(t, c.authz, c.policies)

	original := c.pod.DeepCopy()
	var old runtime.Object
	if c.oldPod != nil {
		old = c.oldPod
	}
	annotations := map[string]string{}
	attrs := recordingAttributes{admission.NewAttributesRecord(c.pod, old, api.Kind("Pod").WithVersion("version"), c.pod.Namespace, "",
		api.Resource("pods").WithVersion("version"), "", c.op, nil, false, c.user), annotations}
	err := admissiontesting.WithReinvocationTesting(t, p).Admit(context.Background(), attrs, nil)
	switch {
	case c.passAdmit && err != nil:
		t.Errorf("Admit: %v", err)
	case !c.passAdmit && err == nil:
		t.Error("Admit admitted, want refused")
	case c.passAdmit:
		if got := c.pod.Annotations[ValidatedPSPAnnotation]; got != c.wantPolicy {
			t.Errorf("admitted under %q, want %q", got, c.wantPolicy)
		}
		if !c.canMutate && !apiequality.Semantic.DeepEqual(original.Spec, c.pod.Spec) {
			t.Errorf("Admit changed the pod: %+v", c.pod.Spec)
		}
	}
	err = p.Validate(context.Background(), attrs, nil)
	wantAdmitPolicy := ""
	if c.passAdmit && c.op == admission.Create {
		wantAdmitPolicy = c.wantPolicy
	}
	if got := annotations[auditKeyPrefix+"/admit-policy"]; got != wantAdmitPolicy {
		t.Errorf("audit annotation admit-policy %q, want %q", got, wantAdmitPolicy)
	}
	wantValidatePolicy := ""
	switch {
	case c.passValidate && err != nil:
		t.Errorf("Validate: %v", err)
	case !c.passValidate && err == nil:
		t.Error("Validate admitted, want refused")
	case c.passValidate:
		wantValidatePolicy = c.wantPolicy
	}
	if got := annotations[auditKeyPrefix+"/validate-policy"]; got != wantValidatePolicy {
		t.Errorf("audit annotation validate-policy %q, want %q", got, wantValidatePolicy)
	}
}

// createUnder124 creates pod under one policy, admitted under it or refused in both phases.
func createUnder124(t *testing.T, psp *policy.PodSecurityPolicy, pod *api.Pod, pass bool) {
	t.Helper()
	wantPolicy := ""
	if pass {
		wantPolicy = psp.Name
	}
	case124{op: admission.Create, policies: []*policy.PodSecurityPolicy{psp}, user: &user.DefaultInfo{}, pod: pod,
		passAdmit: pass, passValidate: pass, canMutate: true, wantPolicy: wantPolicy}.run(t)
}

// 1.24's TestAdmitSeccomp.
func TestAdmitSeccomp124(t *testing.T) {
	pod := func(annotations map[string]string) *api.Pod {
		return &api.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: annotations}, Spec: api.PodSpec{Containers: []api.Container{{Name: "container"}}}}
	}
	podAnn := func(v string) map[string]string { return map[string]string{api.SeccompPodAnnotationKey: v} }
	containerAnn := func(v string) map[string]string {
		return map[string]string{api.SeccompContainerAnnotationKeyPrefix + "container": v}
	}
	allowed := func(v string) map[string]string {
		return map[string]string{policy.SeccompAllowedProfilesAnnotationKey: v}
	}
	tests := []struct {
		name     string
		psp, pod map[string]string
		pass     bool
	}{
		{"no seccomp, no pod annotations", nil, nil, true},
		{"no seccomp, pod annotations", nil, podAnn("localhost/foo"), false},
		{"no seccomp, container annotations", nil, containerAnn("localhost/foo"), false},
		{"seccomp, allow any no pod annotation", allowed("*"), nil, true},
		{"seccomp, allow any pod annotation", allowed("*"), podAnn("localhost/foo"), true},
		{"seccomp, allow any container annotation", allowed("*"), containerAnn("localhost/foo"), true},
		{"seccomp, allow specific pod annotation failure", allowed("localhost/foo"), podAnn("localhost/bar"), false},
		{"seccomp, allow specific container annotation failure",
			map[string]string{policy.SeccompDefaultProfileAnnotationKey: "localhost/foo", policy.SeccompAllowedProfilesAnnotationKey: "localhost/foo"},
			containerAnn("localhost/bar"), false},
		{"seccomp, allow specific pod annotation pass", allowed("localhost/foo"), podAnn("localhost/foo"), true},
		{"seccomp, allow specific container annotation pass",
			map[string]string{policy.SeccompDefaultProfileAnnotationKey: "localhost/foo", policy.SeccompAllowedProfilesAnnotationKey: "localhost/foo,localhost/bar"},
			containerAnn("localhost/bar"), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			psp := restrictive124("restrictive")
			psp.Annotations = tc.psp
			case124{op: admission.Create, policies: []*policy.PodSecurityPolicy{psp}, user: &user.DefaultInfo{}, pod: pod(tc.pod),
				passAdmit: tc.pass, passValidate: tc.pass, canMutate: true, wantPolicy: "restrictive"}.run(t)
		})
	}
}

// 1.24's TestAdmitPrivileged.
func TestAdmitPrivileged124(t *testing.T) {
	withPriv := func(priv bool) *api.Pod {
		p := goodPod124()
		p.Spec.Containers[0].SecurityContext.Privileged = &priv
		return p
	}
	nonPriv, priv := restrictive124("non-priv"), restrictive124("priv")
	priv.Spec.Privileged = true
	tests := []struct {
		name       string
		pod        *api.Pod
		policies   []*policy.PodSecurityPolicy
		pass       bool
		wantPriv   *bool
		wantPolicy string
	}{
		{"pod with priv=nil allowed under non priv PSP", goodPod124(), []*policy.PodSecurityPolicy{nonPriv}, true, nil, "non-priv"},
		{"pod with priv=nil allowed under priv PSP", goodPod124(), []*policy.PodSecurityPolicy{priv}, true, nil, "priv"},
		{"pod with priv=false allowed under non priv PSP", withPriv(false), []*policy.PodSecurityPolicy{nonPriv}, true, ptr(false), "non-priv"},
		{"pod with priv=false allowed under priv PSP", withPriv(false), []*policy.PodSecurityPolicy{priv}, true, ptr(false), "priv"},
		{"pod with priv=true denied by non priv PSP", withPriv(true), []*policy.PodSecurityPolicy{nonPriv}, false, nil, ""},
		{"pod with priv=true allowed by priv PSP", withPriv(true), []*policy.PodSecurityPolicy{nonPriv, priv}, true, ptr(true), "priv"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			case124{op: admission.Create, policies: tc.policies, user: &user.DefaultInfo{}, pod: tc.pod,
				passAdmit: tc.pass, passValidate: tc.pass, canMutate: true, wantPolicy: tc.wantPolicy}.run(t)
			if tc.pass {
				if got := tc.pod.Spec.Containers[0].SecurityContext.Privileged; !apiequality.Semantic.DeepEqual(got, tc.wantPriv) {
					t.Errorf("privileged %v, want %v", got, tc.wantPriv)
				}
			}
		})
	}
}

// 1.24's TestAdmitPreferNonmutating.
func TestAdmitPreferNonmutating124(t *testing.T) {
	mutating1, mutating2 := restrictive124("mutating1"), restrictive124("mutating2")
	mutating1.Spec.RunAsUser.Ranges = []policy.IDRange{{Min: 1, Max: 1}}
	mutating2.Spec.RunAsUser.Ranges = []policy.IDRange{{Min: 2, Max: 2}}
	privileged := permissive124("privileged")
	// The pod as the v1 defaults leave it.
	unprivileged := defaulted124(t, &api.Pod{Spec: api.PodSpec{ServiceAccountName: "default",
		Containers: []api.Container{{Name: "mycontainer", Image: "myimage"}}}})
	changed := unprivileged.DeepCopy()
	changed.Spec.Containers[0].Image = "myimage2"
	annotated := func(p *api.Pod, name string) *api.Pod {
		p = p.DeepCopy()
		p.Annotations = map[string]string{ValidatedPSPAnnotation: name}
		return p
	}
	gcChanged := unprivileged.DeepCopy()
	gcChanged.OwnerReferences = []metav1.OwnerReference{{Kind: "Foo", Name: "bar"}}
	gcChanged.Finalizers = []string{"foo"}
	all := []*policy.PodSecurityPolicy{mutating2, mutating1, privileged}
	both := []*policy.PodSecurityPolicy{mutating2, mutating1}
	tests := []struct {
		name          string
		op            admission.Operation
		pod, old      *api.Pod
		policies      []*policy.PodSecurityPolicy
		passValidate  bool
		mutates       bool
		containerUser *int64
		wantPolicy    string
	}{
		{"pod should not be mutated by allow-all strategies", admission.Create, unprivileged, nil, []*policy.PodSecurityPolicy{privileged}, true, false, nil, "privileged"},
		{"pod should prefer non-mutating PSP on create", admission.Create, unprivileged, nil, all, true, false, nil, "privileged"},
		{"pod should use deterministic mutating PSP on create", admission.Create, unprivileged, nil, both, true, true, ptr(int64(1)), "mutating1"},
		{"pod should use deterministic mutating PSP on create even if ValidatedPSPAnnotation is set", admission.Create, annotated(unprivileged, "mutating2"), nil, both, true, true, ptr(int64(1)), "mutating1"},
		{"pod should prefer non-mutating PSP on update", admission.Update, annotated(changed, "privileged"), annotated(unprivileged, "privileged"), all, true, false, nil, "privileged"},
		{"pod should not mutate on update, but fail validation", admission.Update, changed, unprivileged, both, false, false, nil, ""},
		{"pod should be allowed if completely unchanged on update", admission.Update, unprivileged, unprivileged, both, true, false, nil, ""},
		{"pod should be allowed if unchanged on update except finalizers,ownerrefs", admission.Update, gcChanged, unprivileged, both, true, false, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := tc.pod.DeepCopy()
			var old *api.Pod
			if tc.old != nil {
				old = tc.old.DeepCopy()
			}
			case124{op: tc.op, policies: tc.policies, user: &user.DefaultInfo{}, pod: pod, oldPod: old,
				passAdmit: true, passValidate: tc.passValidate, canMutate: tc.mutates, wantPolicy: tc.wantPolicy}.run(t)
			if pod.Spec.SecurityContext != nil && pod.Spec.SecurityContext.RunAsUser != nil {
				t.Errorf("pod-level runAsUser %d, want none", *pod.Spec.SecurityContext.RunAsUser)
			}
			var got *int64
			if sc := pod.Spec.Containers[0].SecurityContext; sc != nil {
				got = sc.RunAsUser
			}
			if !apiequality.Semantic.DeepEqual(got, tc.containerUser) {
				t.Errorf("container runAsUser %v, want %v", got, tc.containerUser)
			}
		})
	}
}

// defaulted124 is 1.24's defaultPod: the pod through the v1 defaults, as the server has it.
func defaulted124(t *testing.T, pod *api.Pod) *api.Pod {
	t.Helper()
	var v1 corev1.Pod
	if err := corev1conversion.Convert_core_Pod_To_v1_Pod(pod, &v1, nil); err != nil {
		t.Fatal(err)
	}
	corev1conversion.SetObjectDefaults_Pod(&v1)
	out := &api.Pod{}
	if err := corev1conversion.Convert_v1_Pod_To_core_Pod(&v1, out, nil); err != nil {
		t.Fatal(err)
	}
	return out
}

// 1.24's TestPolicyAuthorization.
func TestPolicyAuthorization124(t *testing.T) {
	named := func(names ...string) []*policy.PodSecurityPolicy {
		var out []*policy.PodSecurityPolicy
		for _, n := range names {
			out = append(out, permissive124(n))
		}
		return out
	}
	sa := serviceaccount.MakeUsername("test", "sa")
	type grants = map[string]map[string]map[string]bool
	tests := []struct {
		name       string
		user       user.Info
		sa         string
		grants     grants
		group      string
		policies   []*policy.PodSecurityPolicy
		wantPolicy string
	}{
		{"policy allowed by user (extensions API Group)", &user.DefaultInfo{Name: "user"}, "sa",
			grants{"user": {"test": {"policy": true}}}, "", named("policy"), "policy"},
		{"policy allowed by sa (extensions API Group)", &user.DefaultInfo{Name: "user"}, "sa",
			grants{sa: {"test": {"policy": true}}}, "", named("policy"), "policy"},
		{"policy allowed by user (policy API Group)", &user.DefaultInfo{Name: "user"}, "sa",
			grants{"user": {"test": {"policy": true}}}, policy.GroupName, named("policy"), "policy"},
		{"policy allowed by sa (policy API Group)", &user.DefaultInfo{Name: "user"}, "sa",
			grants{sa: {"test": {"policy": true}}}, policy.GroupName, named("policy"), "policy"},
		{"no policies allowed", &user.DefaultInfo{Name: "user"}, "sa", grants{}, "", named("policy"), ""},
		{"multiple policies allowed", &user.DefaultInfo{Name: "user"}, "sa",
			grants{sa: {"test": {"policy1": true}, "": {"policy4": true}, "other": {"policy6": true}},
				"user": {"test": {"policy2": true}, "": {"policy5": true}, "other": {"policy7": true}}},
			"", named("a_policy1", "a_policy2", "policy2", "policy3", "policy4", "policy5", "policy6"), "policy2"},
		{"policies are not allowed for nil user info", nil, "sa",
			grants{sa: {"test": {"policy1": true}}, "user": {"test": {"policy2": true}}}, "", named("policy1", "policy2", "policy3"), "policy1"},
		{"policies are not allowed for nil sa info", &user.DefaultInfo{Name: "user"}, "",
			grants{sa: {"test": {"policy1": true}}, "user": {"test": {"policy2": true}}}, "", named("policy1", "policy2", "policy3"), "policy2"},
		{"policies are not allowed for nil sa and user info", nil, "",
			grants{sa: {"test": {"policy1": true}}, "user": {"test": {"policy2": true}}}, "", named("policy1", "policy2", "policy3"), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := goodPod124()
			pod.Namespace, pod.Spec.ServiceAccountName = "test", tc.sa
			pass := tc.wantPolicy != ""
			case124{op: admission.Create, policies: tc.policies, authz: allowed124{grants: tc.grants, group: tc.group}, user: tc.user,
				pod: pod, passAdmit: pass, passValidate: pass, canMutate: true, wantPolicy: tc.wantPolicy}.run(t)
		})
	}
}

// 1.24's TestAdmitCaps, in regular and then in init containers.
func TestAdmitCaps124(t *testing.T) {
	withCaps := func(caps *api.Capabilities) func() *api.Pod {
		return func() *api.Pod {
			p := goodPod124()
			p.Spec.Containers[0].SecurityContext.Capabilities = caps
			return p
		}
	}
	restricted := restrictive124("restrictive")
	allowed := restrictive124("allowCapInAllowed")
	allowed.Spec.AllowedCapabilities = []api.Capability{"foo"}
	required := restrictive124("allowCapInRequired")
	required.Spec.DefaultAddCapabilities = []api.Capability{"foo"}
	drop := restrictive124("requireDrop")
	drop.Spec.RequiredDropCapabilities = []api.Capability{"foo"}
	all := restrictive124("allowAllCapsInAllowed")
	all.Spec.AllowedCapabilities = []api.Capability{policy.AllowAllCapabilities}
	addFoo := withCaps(&api.Capabilities{Add: []api.Capability{"foo"}})
	tests := []struct {
		name       string
		pod        func() *api.Pod
		policies   []*policy.PodSecurityPolicy
		pass       bool
		wantCaps   *api.Capabilities
		wantPolicy string
	}{
		{"should reject cap add when not allowed or required", addFoo, []*policy.PodSecurityPolicy{restricted}, false, nil, ""},
		{"should accept cap add when in allowed", addFoo, []*policy.PodSecurityPolicy{restricted, allowed}, true, nil, "allowCapInAllowed"},
		{"should accept cap add when in required", addFoo, []*policy.PodSecurityPolicy{restricted, required}, true, nil, "allowCapInRequired"},
		{"should reject cap add when requested cap is required to be dropped", addFoo, []*policy.PodSecurityPolicy{restricted, drop}, false, nil, ""},
		{"should accept cap drop when cap is required to be dropped", withCaps(&api.Capabilities{Drop: []api.Capability{"foo"}}), []*policy.PodSecurityPolicy{drop}, true, nil, "requireDrop"},
		{"required add is defaulted", goodPod124, []*policy.PodSecurityPolicy{required}, true, &api.Capabilities{Add: []api.Capability{"foo"}}, "allowCapInRequired"},
		{"required drop is defaulted", goodPod124, []*policy.PodSecurityPolicy{drop}, true, &api.Capabilities{Drop: []api.Capability{"foo"}}, "requireDrop"},
		{"should accept cap add when all caps are allowed", addFoo, []*policy.PodSecurityPolicy{restricted, all}, true, nil, "allowAllCapsInAllowed"},
	}
	for _, init := range []bool{false, true} {
		for _, tc := range tests {
			t.Run(fmt.Sprintf("%s/init containers %t", tc.name, init), func(t *testing.T) {
				pod := tc.pod()
				if init {
					pod.Spec.InitContainers, pod.Spec.Containers = pod.Spec.Containers, []api.Container{}
				}
				case124{op: admission.Create, policies: tc.policies, user: &user.DefaultInfo{}, pod: pod,
					passAdmit: tc.pass, passValidate: tc.pass, canMutate: true, wantPolicy: tc.wantPolicy}.run(t)
				if tc.wantCaps == nil {
					return
				}
				c := pod.Spec.Containers
				if init {
					c = pod.Spec.InitContainers
				}
				if got := c[0].SecurityContext.Capabilities; !apiequality.Semantic.DeepEqual(got, tc.wantCaps) {
					t.Errorf("capabilities %+v, want %+v", got, tc.wantCaps)
				}
			})
		}
	}
}

// 1.24's TestPreferValidatedPSP: on update, the policy named in kubernetes.io/psp is tried
// first; the refusals are those of the usable policies.
func TestPreferValidatedPSP124(t *testing.T) {
	tests := []struct {
		name       string
		policies   []*policy.PodSecurityPolicy
		hint       string
		wantErrs   int
		wantPolicy string
	}{
		{"no policy saved in annotations, PSPs are ordered lexicographically", []*policy.PodSecurityPolicy{
			restrictive124("001restrictive"), restrictive124("002restrictive"), permissive124("002permissive"), permissive124("001permissive"), permissive124("003permissive"),
		}, "", 0, "001permissive"},
		{"policy saved in annotations is preferred", []*policy.PodSecurityPolicy{
			restrictive124("001restrictive"), restrictive124("002restrictive"), permissive124("001permissive"), permissive124("002permissive"), permissive124("003permissive"),
		}, "002permissive", 0, "002permissive"},
		{"policy saved in annotations is invalid", []*policy.PodSecurityPolicy{restrictive124("001restrictive"), restrictive124("002restrictive")}, "foo", 2, ""},
		{"policy saved in annotations is disallowed anymore", []*policy.PodSecurityPolicy{restrictive124("001restrictive"), restrictive124("002restrictive")}, "001restrictive", 2, ""},
		{"policy saved in annotations is disallowed anymore, but find another one", []*policy.PodSecurityPolicy{
			restrictive124("001restrictive"), restrictive124("002restrictive"), permissive124("002permissive"), permissive124("001permissive"),
		}, "001restrictive", 0, "001permissive"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newPlugin124(t, allowed124{}, tc.policies)
			pod := goodPod124()
			pod.Namespace, pod.Spec.ServiceAccountName = "ns", "sa"
			pod.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = ptr(true)
			attrs := admission.NewAttributesRecord(pod, nil, api.Kind("Pod").WithVersion("version"), "ns", "", api.Resource("pods").WithVersion("version"),
				"", admission.Update, &metav1.UpdateOptions{}, false, &user.DefaultInfo{Name: "test"})
			_, name, errs, err := p.computeSecurityContext(context.Background(), attrs, pod, false, tc.hint)
			if err != nil {
				t.Fatal(err)
			}
			if len(errs) != tc.wantErrs || name != tc.wantPolicy {
				t.Errorf("policy %q with %d errors (%v), want %q with %d", name, len(errs), errs, tc.wantPolicy, tc.wantErrs)
			}
		})
	}
}

// 1.24's TestAdmitRunAsUser: the verdicts, and the security contexts admitted pods end with.
func TestAdmitRunAsUser124(t *testing.T) {
	withContexts := func(pod *api.PodSecurityContext, container *api.SecurityContext) *api.Pod {
		p := goodPod124()
		p.Spec.SecurityContext, p.Spec.Containers[0].SecurityContext = pod, container
		return p
	}
	podUser := func(u int64) *api.PodSecurityContext { return &api.PodSecurityContext{RunAsUser: &u} }
	containerUser := func(u int64) *api.SecurityContext { return &api.SecurityContext{RunAsUser: &u} }
	runAsAny := permissive124("runAsAny")
	mustRunAs := permissive124("mustRunAs")
	mustRunAs.Spec.RunAsUser = policy.RunAsUserStrategyOptions{Rule: policy.RunAsUserStrategyMustRunAs, Ranges: []policy.IDRange{{Min: 999, Max: 1000}}}
	nonRoot := permissive124("runAsNonRoot")
	nonRoot.Spec.RunAsUser.Rule = policy.RunAsUserStrategyMustRunAsNonRoot
	tests := []struct {
		name          string
		pod           *api.Pod
		psp           *policy.PodSecurityPolicy
		pass          bool
		wantPod       *api.PodSecurityContext
		wantContainer *api.SecurityContext
	}{
		{"runAsAny no pod request", withContexts(nil, nil), runAsAny, true, nil, nil},
		{"runAsAny pod request", withContexts(podUser(1), nil), runAsAny, true, podUser(1), nil},
		{"runAsAny container request", withContexts(nil, containerUser(1)), runAsAny, true, nil, containerUser(1)},
		{"mustRunAs pod request out of range", withContexts(podUser(1), nil), mustRunAs, false, nil, nil},
		{"mustRunAs container request out of range", withContexts(podUser(999), containerUser(1)), mustRunAs, false, nil, nil},
		{"mustRunAs pod request in range", withContexts(podUser(999), nil), mustRunAs, true, podUser(999), nil},
		{"mustRunAs container request in range", withContexts(nil, containerUser(999)), mustRunAs, true, nil, containerUser(999)},
		{"mustRunAs pod and container request in range", withContexts(podUser(999), containerUser(1000)), mustRunAs, true, podUser(999), containerUser(1000)},
		{"mustRunAs no request", withContexts(nil, nil), mustRunAs, true, nil, containerUser(999)},
		{"runAsNonRoot no request", withContexts(nil, nil), nonRoot, true, nil, &api.SecurityContext{RunAsNonRoot: ptr(true)}},
		{"runAsNonRoot pod request root", withContexts(podUser(0), nil), nonRoot, false, nil, nil},
		{"runAsNonRoot pod request non-root", withContexts(podUser(1), nil), nonRoot, true, podUser(1), nil},
		{"runAsNonRoot container request root", withContexts(podUser(1), containerUser(0)), nonRoot, false, nil, nil},
		{"runAsNonRoot container request non-root", withContexts(podUser(1), containerUser(2)), nonRoot, true, podUser(1), containerUser(2)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			createUnder124(t, tc.psp, tc.pod, tc.pass)
			if !tc.pass {
				return
			}
			if !apiequality.Semantic.DeepEqual(tc.pod.Spec.SecurityContext, tc.wantPod) {
				t.Errorf("pod securityContext %+v, want %+v", tc.pod.Spec.SecurityContext, tc.wantPod)
			}
			if !apiequality.Semantic.DeepEqual(tc.pod.Spec.Containers[0].SecurityContext, tc.wantContainer) {
				t.Errorf("container securityContext %+v, want %+v", tc.pod.Spec.Containers[0].SecurityContext, tc.wantContainer)
			}
		})
	}
}

// 1.24's TestAdmitHostPorts, in regular and then in init containers.
func TestAdmitHostPorts124(t *testing.T) {
	withHostPort := func(port int32) func() *api.Pod {
		return func() *api.Pod {
			p := goodPod124()
			p.Spec.Containers[0].Ports = []api.ContainerPort{{HostPort: port}}
			return p
		}
	}
	none, ranged := restrictive124("noHostPorts"), restrictive124("hostPorts")
	ranged.Spec.HostPorts = []policy.HostPortRange{{Min: 1, Max: 10}}
	tests := []struct {
		name string
		pod  func() *api.Pod
		psp  *policy.PodSecurityPolicy
		pass bool
	}{
		{"host port out of range", withHostPort(11), ranged, false},
		{"host port in range", withHostPort(5), ranged, true},
		{"no host ports with range", goodPod124, ranged, true},
		{"no host ports without range", goodPod124, none, true},
		{"host ports without range", withHostPort(5), none, false},
	}
	for _, init := range []bool{false, true} {
		for _, tc := range tests {
			t.Run(fmt.Sprintf("%s/init containers %t", tc.name, init), func(t *testing.T) {
				pod := tc.pod()
				if init {
					pod.Spec.InitContainers, pod.Spec.Containers = pod.Spec.Containers, nil
				}
				createUnder124(t, tc.psp, pod, tc.pass)
			})
		}
	}
}

// 1.24's TestAdmitSupplementalGroups: verdicts and the pod security context admitted pods end with.
func TestAdmitSupplementalGroups124(t *testing.T) {
	withContext := func(sc *api.PodSecurityContext) *api.Pod {
		p := goodPod124()
		p.Spec.SecurityContext, p.Spec.Containers[0].SecurityContext = sc, nil
		return p
	}
	groups := func(g ...int64) *api.PodSecurityContext { return &api.PodSecurityContext{SupplementalGroups: g} }
	runAsAny := permissive124("runAsAny")
	mustRunAs := permissive124("mustRunAs")
	mustRunAs.Spec.SupplementalGroups = policy.SupplementalGroupsStrategyOptions{Rule: policy.SupplementalGroupsStrategyMustRunAs, Ranges: []policy.IDRange{{Min: 999, Max: 1000}}}
	tests := []struct {
		name string
		pod  *api.Pod
		psp  *policy.PodSecurityPolicy
		pass bool
		want *api.PodSecurityContext
	}{
		{"runAsAny no pod request", withContext(nil), runAsAny, true, nil},
		{"runAsAny empty pod request", withContext(&api.PodSecurityContext{}), runAsAny, true, &api.PodSecurityContext{}},
		{"runAsAny empty pod request empty supplemental groups", withContext(&api.PodSecurityContext{SupplementalGroups: []int64{}}), runAsAny, true,
			&api.PodSecurityContext{SupplementalGroups: []int64{}}},
		{"runAsAny pod request", withContext(groups(1)), runAsAny, true, groups(1)},
		{"mustRunAs no pod request", withContext(nil), mustRunAs, true, groups(999)},
		{"mustRunAs bad pod request", withContext(groups(1)), mustRunAs, false, nil},
		{"mustRunAs good pod request", withContext(groups(999)), mustRunAs, true, groups(999)},
		// Ours, as 1.24: an explicit empty list is judged, not defaulted.
		{"mustRunAs explicit empty list", withContext(&api.PodSecurityContext{SupplementalGroups: []int64{}}), mustRunAs, false, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			createUnder124(t, tc.psp, tc.pod, tc.pass)
			if tc.pass && !reflect.DeepEqual(tc.pod.Spec.SecurityContext, tc.want) {
				t.Errorf("pod securityContext %#v, want %#v", tc.pod.Spec.SecurityContext, tc.want)
			}
		})
	}
}

// 1.24's TestAdmitSysctls.
func TestAdmitSysctls124(t *testing.T) {
	withSysctls := func(names ...string) *api.Pod {
		p := goodPod124()
		p.Spec.SecurityContext = &api.PodSecurityContext{}
		for _, n := range names {
			p.Spec.SecurityContext.Sysctls = append(p.Spec.SecurityContext.Sysctls, api.Sysctl{Name: n, Value: "dummy"})
		}
		return p
	}
	restricted := func(name string, forbidden, unsafe []string) *policy.PodSecurityPolicy {
		p := restrictive124(name)
		p.Spec.ForbiddenSysctls, p.Spec.AllowedUnsafeSysctls = forbidden, unsafe
		return p
	}
	safe := restricted("no sysctls", nil, nil)
	none := restricted("empty sysctls", []string{"*"}, nil)
	mixed := restricted("wildcard sysctls", []string{"net.*"}, []string{"a.*", "b.*"})
	a := restricted("a sysctl", nil, []string{"a"})
	all := restricted("catchall sysctl", nil, []string{"*"})
	tests := []struct {
		name string
		pod  *api.Pod
		psp  *policy.PodSecurityPolicy
		pass bool
	}{
		{"pod without any sysctls request allowed under safeSysctls PSP", goodPod124(), safe, true},
		{"pod without any sysctls request allowed under noSysctls PSP", goodPod124(), none, true},
		{"pod with safe sysctls request allowed under safeSysctls PSP", withSysctls("kernel.shm_rmid_forced", "net.ipv4.tcp_syncookies"), safe, true},
		{"pod with unsafe sysctls request disallowed under noSysctls PSP", withSysctls("a", "b"), none, false},
		{"pod with unsafe sysctls a, b request disallowed under aUnsafeSysctl SCC", withSysctls("a", "b"), a, false},
		{"pod with unsafe sysctls b request disallowed under aUnsafeSysctl SCC", withSysctls("b"), a, false},
		{"pod with unsafe sysctls a request allowed under aUnsafeSysctl SCC", withSysctls("a"), a, true},
		{"pod with safe net sysctl request allowed under aUnsafeSysctl SCC", withSysctls("net.ipv4.ip_local_port_range"), a, true},
		{"pod with safe sysctls request disallowed under noSysctls PSP", withSysctls("net.ipv4.ip_local_port_range"), none, false},
		{"pod with matching sysctls request allowed under mixedSysctls PSP", withSysctls("kernel.shm_rmid_forced", "a.b", "b.a"), mixed, true},
		{"pod with not-matching unsafe sysctls request disallowed under mixedSysctls PSP", withSysctls("e"), mixed, false},
		{"pod with not-matching safe sysctls request disallowed under mixedSysctls PSP", withSysctls("net.ipv4.ip_local_port_range"), mixed, false},
		{"pod with sysctls request allowed under catchallSysctls PSP", withSysctls("net.ipv4.ip_local_port_range", "f"), all, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var before []api.Sysctl
			if tc.pod.Spec.SecurityContext != nil {
				before = slices.Clone(tc.pod.Spec.SecurityContext.Sysctls)
			}
			createUnder124(t, tc.psp, tc.pod, tc.pass)
			if tc.pass && !reflect.DeepEqual(tc.pod.Spec.SecurityContext.Sysctls, before) {
				t.Errorf("sysctls %v, want them unchanged: %v", tc.pod.Spec.SecurityContext.Sysctls, before)
			}
		})
	}
}

// 1.24's TestPolicyAuthorizationErrors: a pod no policy admits is refused with the reasons of
// the policies the user or the service account may use, and only those.
func TestPolicyAuthorizationErrors124(t *testing.T) {
	sa := serviceaccount.MakeUsername("test", "sa")
	type grants = map[string]map[string]map[string]bool
	tests := []struct {
		name     string
		grants   grants
		wantErrs int
	}{
		{"policies not allowed", grants{}, 0},
		{"policy allowed by user", grants{"user": {"test": {"policy1": true}}}, 1},
		{"policy allowed by service account", grants{sa: {"test": {"policy2": true}}}, 1},
		{"multiple policies allowed", grants{"user": {"test": {"policy1": true}}, sa: {"test": {"policy2": true}}}, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newPlugin124(t, allowed124{grants: tc.grants}, []*policy.PodSecurityPolicy{restrictive124("policy1"), restrictive124("policy2")})
			pod := goodPod124()
			pod.Namespace, pod.Spec.ServiceAccountName = "test", "sa"
			kubecompat.SetPodHostNamespaces(&pod.Spec, kubecompat.HostNamespaces{PID: true})
			attrs := admission.NewAttributesRecord(pod, nil, api.Kind("Pod").WithVersion("version"), "test", "", api.Resource("pods").WithVersion("version"),
				"", admission.Create, &metav1.CreateOptions{}, false, &user.DefaultInfo{Name: "user"})
			allowed, _, errs, err := p.computeSecurityContext(context.Background(), attrs, pod, true, "")
			if err != nil || allowed != nil || len(errs) != tc.wantErrs {
				t.Errorf("allowed %v, err %v, %d reasons (%v); want refused with %d", allowed != nil, err, len(errs), errs, tc.wantErrs)
			}
		})
	}
}

// 1.24's TestFailClosedOnInvalidPod: a versioned pod (an integrator's mistake) is refused in
// both phases.
func TestFailClosedOnInvalidPod124(t *testing.T) {
	p := newPlugin124(t, allowed124{}, nil)
	pod := &corev1.Pod{}
	attrs := admission.NewAttributesRecord(pod, nil, api.Kind("Pod").WithVersion("version"), pod.Namespace, pod.Name,
		api.Resource("pods").WithVersion("version"), "", admission.Create, &metav1.CreateOptions{}, false, &user.DefaultInfo{})
	if err := p.Admit(context.Background(), attrs, nil); err == nil || !strings.Contains(err.Error(), "unexpected type") {
		t.Errorf("Admit: %v, want a refusal for the unexpected type", err)
	}
	if err := p.Validate(context.Background(), attrs, nil); err == nil || !strings.Contains(err.Error(), "unexpected type") {
		t.Errorf("Validate: %v, want a refusal for the unexpected type", err)
	}
}

// 1.24's TestAdmitVolumes: each volume source of the release, refused by a policy allowing no
// volumes (in regular and in init containers), admitted by one naming its type or "*".
func TestAdmitVolumes124(t *testing.T) {
	sources := reflect.TypeOf(api.VolumeSource{})
	for i := range sources.NumField() {
		source := sources.Field(i)
		var volume api.Volume
		reflect.ValueOf(&volume.VolumeSource).Elem().Field(i).Set(reflect.New(source.Type.Elem()))
		fsType, err := psputil.GetVolumeFSType(&volume)
		if err != nil {
			t.Errorf("%s: %v", source.Name, err)
			continue
		}
		withVolume := func(init bool) *api.Pod {
			p := goodPod124()
			p.Spec.Volumes = []api.Volume{volume}
			if init {
				p.Spec.InitContainers, p.Spec.Containers = p.Spec.Containers, nil
			}
			return p
		}
		t.Run(string(fsType), func(t *testing.T) {
			for _, init := range []bool{false, true} {
				createUnder124(t, restrictive124("restrictive"), withVolume(init), false)
			}
			for _, allowed := range []policy.FSType{fsType, policy.All} {
				psp := restrictive124("restrictive")
				psp.Spec.Volumes = []policy.FSType{allowed}
				createUnder124(t, psp, withVolume(true), true)
			}
		})
	}
}

// 1.24's TestAdmitHostNetwork, TestAdmitHostPID and TestAdmitHostIPC: the same four cases for
// each host namespace, in regular and then in init containers.
func TestAdmitHostNamespaces124(t *testing.T) {
	namespaces := []struct {
		name  string
		inPod func(*kubecompat.HostNamespaces) *bool
		inPSP func(*policy.PodSecurityPolicySpec) *bool
	}{
		{"hostnetwork", func(h *kubecompat.HostNamespaces) *bool { return &h.Network }, func(s *policy.PodSecurityPolicySpec) *bool { return &s.HostNetwork }},
		{"hostpid", func(h *kubecompat.HostNamespaces) *bool { return &h.PID }, func(s *policy.PodSecurityPolicySpec) *bool { return &s.HostPID }},
		{"hostipc", func(h *kubecompat.HostNamespaces) *bool { return &h.IPC }, func(s *policy.PodSecurityPolicySpec) *bool { return &s.HostIPC }},
	}
	for _, ns := range namespaces {
		without, with := restrictive124("no-"+ns.name), restrictive124(ns.name)
		*ns.inPSP(&with.Spec) = true
		requesting := func(request bool) func() *api.Pod {
			return func() *api.Pod {
				p := goodPod124()
				h := kubecompat.PodHostNamespaces(&p.Spec)
				*ns.inPod(&h) = request
				kubecompat.SetPodHostNamespaces(&p.Spec, h)
				return p
			}
		}
		tests := []struct {
			name       string
			pod        func() *api.Pod
			policies   []*policy.PodSecurityPolicy
			pass       bool
			wantPolicy string
		}{
			{"pod without the request allowed under a policy without", requesting(false), []*policy.PodSecurityPolicy{without}, true, without.Name},
			{"pod without the request allowed under a policy with", requesting(false), []*policy.PodSecurityPolicy{with}, true, with.Name},
			{"pod with the request denied by a policy without", requesting(true), []*policy.PodSecurityPolicy{without}, false, ""},
			{"pod with the request allowed by a policy with", requesting(true), []*policy.PodSecurityPolicy{without, with}, true, with.Name},
		}
		for _, init := range []bool{false, true} {
			for _, tc := range tests {
				t.Run(fmt.Sprintf("%s/%s/init containers %t", ns.name, tc.name, init), func(t *testing.T) {
					pod := tc.pod()
					if init {
						pod.Spec.InitContainers, pod.Spec.Containers = pod.Spec.Containers, nil
					}
					inPod := func() bool { h := kubecompat.PodHostNamespaces(&pod.Spec); return *ns.inPod(&h) }
					want := inPod()
					case124{op: admission.Create, policies: tc.policies, user: &user.DefaultInfo{}, pod: pod,
						passAdmit: tc.pass, passValidate: tc.pass, canMutate: true, wantPolicy: tc.wantPolicy}.run(t)
					if tc.pass && inPod() != want {
						t.Errorf("%s %t after admission, want %t", ns.name, !want, want)
					}
				})
			}
		}
	}
}

// 1.24's TestAdmitSELinux: verdicts, and the security contexts admitted pods end with.
func TestAdmitSELinux124(t *testing.T) {
	runAsAny := permissive124("runAsAny")
	mustRunAs := permissive124("mustRunAs")
	mustRunAs.Spec.SELinux = policy.SELinuxStrategyOptions{Rule: policy.SELinuxStrategyMustRunAs,
		SELinuxOptions: &api.SELinuxOptions{Level: "level", Role: "role", Type: "type", User: "user"}}
	withContexts := func(pod *api.PodSecurityContext, container *api.SecurityContext) *api.Pod {
		p := goodPod124()
		p.Spec.SecurityContext, p.Spec.Containers[0].SecurityContext = pod, container
		return p
	}
	selinuxUser := func(name string) *api.SELinuxOptions { return &api.SELinuxOptions{User: name} }
	policyOptions := func() *api.SELinuxOptions { return mustRunAs.Spec.SELinux.SELinuxOptions.DeepCopy() }
	tests := []struct {
		name          string
		pod           *api.Pod
		psp           *policy.PodSecurityPolicy
		pass          bool
		wantPod       *api.PodSecurityContext
		wantContainer *api.SecurityContext
	}{
		{"runAsAny with no request", withContexts(nil, nil), runAsAny, true, nil, nil},
		{"runAsAny with empty pod request", withContexts(&api.PodSecurityContext{}, nil), runAsAny, true, &api.PodSecurityContext{}, nil},
		{"runAsAny with empty container request", withContexts(nil, &api.SecurityContext{}), runAsAny, true, nil, &api.SecurityContext{}},
		{"runAsAny with pod request", withContexts(&api.PodSecurityContext{SELinuxOptions: selinuxUser("foo")}, nil), runAsAny, true,
			&api.PodSecurityContext{SELinuxOptions: selinuxUser("foo")}, nil},
		{"runAsAny with container request", withContexts(nil, &api.SecurityContext{SELinuxOptions: selinuxUser("foo")}), runAsAny, true,
			nil, &api.SecurityContext{SELinuxOptions: selinuxUser("foo")}},
		{"runAsAny with pod and container request",
			withContexts(&api.PodSecurityContext{SELinuxOptions: selinuxUser("bar")}, &api.SecurityContext{SELinuxOptions: selinuxUser("foo")}), runAsAny, true,
			&api.PodSecurityContext{SELinuxOptions: selinuxUser("bar")}, &api.SecurityContext{SELinuxOptions: selinuxUser("foo")}},
		{"mustRunAs with bad pod request", withContexts(&api.PodSecurityContext{SELinuxOptions: selinuxUser("foo")}, nil), mustRunAs, false, nil, nil},
		{"mustRunAs with bad container request", withContexts(nil, &api.SecurityContext{SELinuxOptions: selinuxUser("foo")}), mustRunAs, false, nil, nil},
		{"mustRunAs with no request", withContexts(nil, nil), mustRunAs, true, &api.PodSecurityContext{SELinuxOptions: policyOptions()}, nil},
		// 1.24's "good container request" case sets the pod's options too; so does this one.
		{"mustRunAs with good pod request", withContexts(&api.PodSecurityContext{SELinuxOptions: policyOptions()}, nil), mustRunAs, true,
			&api.PodSecurityContext{SELinuxOptions: policyOptions()}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			createUnder124(t, tc.psp, tc.pod, tc.pass)
			if !tc.pass {
				return
			}
			if !reflect.DeepEqual(tc.pod.Spec.SecurityContext, tc.wantPod) {
				t.Errorf("pod securityContext %#v, want %#v", tc.pod.Spec.SecurityContext, tc.wantPod)
			}
			if got := tc.pod.Spec.Containers[0].SecurityContext; !reflect.DeepEqual(got, tc.wantContainer) {
				t.Errorf("container securityContext %#v, want %#v", got, tc.wantContainer)
			}
		})
	}
}

// appArmorProfile124 is the profile the container "container" runs with, written as 1.24's
// annotation values: its annotation, else its field, else the pod's field.
func appArmorProfile124(pod *api.Pod) string {
	if v, ok := pod.Annotations[api.DeprecatedAppArmorAnnotationKeyPrefix+"container"]; ok {
		return v
	}
	var f *api.AppArmorProfile
	if sc := pod.Spec.Containers[0].SecurityContext; sc != nil && sc.AppArmorProfile != nil {
		f = sc.AppArmorProfile
	} else if pod.Spec.SecurityContext != nil {
		f = pod.Spec.SecurityContext.AppArmorProfile
	}
	switch {
	case f == nil:
		return ""
	case f.Type == api.AppArmorProfileTypeRuntimeDefault:
		return api.DeprecatedAppArmorAnnotationValueRuntimeDefault
	case f.Type == api.AppArmorProfileTypeLocalhost && f.LocalhostProfile != nil:
		return api.DeprecatedAppArmorAnnotationValueLocalhostPrefix + *f.LocalhostProfile
	default:
		return string(f.Type)
	}
}

// 1.24's TestAdmitAppArmor. 1.24 wrote a default profile as the container's annotation; this
// plugin writes it as the pod's field (1.37 nodes read the fields), so the profile checked
// is the one the container runs with.
func TestAdmitAppArmor124(t *testing.T) {
	const runtimeDefault = api.DeprecatedAppArmorAnnotationValueRuntimeDefault
	withProfile := func(profile string) *api.Pod {
		p := goodPod124()
		p.Annotations[api.DeprecatedAppArmorAnnotationKeyPrefix+"container"] = profile
		return p
	}
	annotated := func(name string, annotations map[string]string) *policy.PodSecurityPolicy {
		p := restrictive124(name)
		p.Annotations = annotations
		return p
	}
	unconstrained := annotated("unconstrained", map[string]string{})
	defaulted := annotated("defaulted", map[string]string{policy.AppArmorDefaultProfileAnnotationKey: runtimeDefault})
	enforced := annotated("enforced", map[string]string{policy.AppArmorAllowedProfilesAnnotationKey: runtimeDefault})
	enforcedDefault := annotated("enforced-default", map[string]string{
		policy.AppArmorDefaultProfileAnnotationKey:  runtimeDefault,
		policy.AppArmorAllowedProfilesAnnotationKey: runtimeDefault + "," + api.DeprecatedAppArmorAnnotationValueLocalhostPrefix + "foo",
	})
	tests := []struct {
		name        string
		pod         *api.Pod
		psp         *policy.PodSecurityPolicy
		pass        bool
		wantProfile string
	}{
		{"unconstrained with no profile", goodPod124(), unconstrained, true, ""},
		{"unconstrained with profile", withProfile(runtimeDefault), unconstrained, true, runtimeDefault},
		{"unconstrained with default profile", goodPod124(), defaulted, true, runtimeDefault},
		{"AppArmor enforced with no profile", goodPod124(), enforced, false, ""},
		{"AppArmor enforced with default profile", goodPod124(), enforcedDefault, true, runtimeDefault},
		{"AppArmor enforced with good profile", withProfile("localhost/foo"), enforcedDefault, true, "localhost/foo"},
		{"AppArmor enforced with local profile", withProfile("localhost/bar"), enforced, false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			createUnder124(t, tc.psp, tc.pod, tc.pass)
			if got := appArmorProfile124(tc.pod); tc.pass && got != tc.wantProfile {
				t.Errorf("AppArmor profile %q, want %q", got, tc.wantProfile)
			}
		})
	}
}

// 1.24's TestAdmitFSGroup.
func TestAdmitFSGroup124(t *testing.T) {
	withFSGroup := func(group int64) *api.Pod {
		p := goodPod124()
		p.Spec.SecurityContext.FSGroup = &group
		return p
	}
	runAsAny, mustRunAs := restrictive124("runAsAny"), restrictive124("mustRunAs")
	runAsAny.Spec.FSGroup.Rule = policy.FSGroupStrategyRunAsAny
	tests := []struct {
		name string
		pod  *api.Pod
		psp  *policy.PodSecurityPolicy
		pass bool
		want *int64
	}{
		{"runAsAny no pod request", goodPod124(), runAsAny, true, nil},
		{"runAsAny pod request", withFSGroup(1), runAsAny, true, ptr(int64(1))},
		{"mustRunAs no pod request", goodPod124(), mustRunAs, true, ptr(int64(999))},
		{"mustRunAs bad pod request", withFSGroup(1), mustRunAs, false, nil},
		{"mustRunAs good pod request", withFSGroup(999), mustRunAs, true, ptr(int64(999))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			createUnder124(t, tc.psp, tc.pod, tc.pass)
			if got := tc.pod.Spec.SecurityContext.FSGroup; tc.pass && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("fsGroup %v, want %v", got, tc.want)
			}
		})
	}
}

// 1.24's TestAdmitReadOnlyRootFilesystem.
func TestAdmitReadOnlyRootFilesystem124(t *testing.T) {
	withReadOnly := func(readOnly bool) *api.Pod {
		p := goodPod124()
		p.Spec.Containers[0].SecurityContext.ReadOnlyRootFilesystem = &readOnly
		return p
	}
	writable, readOnly := restrictive124("no-rorfs"), restrictive124("rorfs")
	readOnly.Spec.ReadOnlyRootFilesystem = true
	tests := []struct {
		name string
		pod  *api.Pod
		psp  *policy.PodSecurityPolicy
		pass bool
		want bool
	}{
		{"no-rorfs allows pod request with rorfs", withReadOnly(true), writable, true, true},
		{"no-rorfs allows pod request without rorfs", withReadOnly(false), writable, true, false},
		{"rorfs rejects pod request without rorfs", withReadOnly(false), readOnly, false, false},
		{"rorfs defaults nil pod request", goodPod124(), readOnly, true, true},
		{"rorfs accepts pod request with rorfs", withReadOnly(true), readOnly, true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			createUnder124(t, tc.psp, tc.pod, tc.pass)
			if got := tc.pod.Spec.Containers[0].SecurityContext.ReadOnlyRootFilesystem; tc.pass && (got == nil || *got != tc.want) {
				t.Errorf("readOnlyRootFilesystem %v, want %t", got, tc.want)
			}
		})
	}
}

// 1.24's TestAssignSecurityContext: a policy's defaults and validation over every container.
func TestApplyPolicy124(t *testing.T) {
	provider, err := psp.NewSimpleProvider(restrictive124("restrictive"), "namespace", psp.NewSimpleStrategyFactory())
	if err != nil {
		t.Fatal(err)
	}
	container := func(privileged bool) api.Container {
		return api.Container{SecurityContext: &api.SecurityContext{Privileged: &privileged}}
	}
	tests := []struct {
		name       string
		containers []api.Container
		valid      bool
	}{
		{"pod and container SC is not changed when invalid", []api.Container{container(true)}, false},
		{"must validate all containers", []api.Container{container(false), container(true)}, false},
		{"pod validates", []api.Container{container(false)}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := &api.Pod{Spec: api.PodSpec{SecurityContext: &api.PodSecurityContext{}, Containers: tc.containers}}
			if errs := applyPolicy(provider, pod); (len(errs) == 0) != tc.valid {
				t.Errorf("errors %v, want valid %t", errs, tc.valid)
			}
		})
	}
}

// 1.24's TestCreateProvidersFromConstraints: a policy whose strategies cannot be built admits
// nothing, says why, and is not changed.
func TestCompilePolicy124(t *testing.T) {
	anyRule := func(user policyv1beta1.RunAsUserStrategy) *policyv1beta1.PodSecurityPolicy {
		p := &policyv1beta1.PodSecurityPolicy{Spec: policyv1beta1.PodSecurityPolicySpec{
			SELinux:            policyv1beta1.SELinuxStrategyOptions{Rule: policyv1beta1.SELinuxStrategyRunAsAny},
			RunAsUser:          policyv1beta1.RunAsUserStrategyOptions{Rule: user},
			RunAsGroup:         &policyv1beta1.RunAsGroupStrategyOptions{Rule: policyv1beta1.RunAsGroupStrategyRunAsAny},
			FSGroup:            policyv1beta1.FSGroupStrategyOptions{Rule: policyv1beta1.FSGroupStrategyRunAsAny},
			SupplementalGroups: policyv1beta1.SupplementalGroupsStrategyOptions{Rule: policyv1beta1.SupplementalGroupsStrategyRunAsAny},
		}}
		p.Name = "psp"
		return p
	}
	tests := []struct {
		name    string
		psp     *policyv1beta1.PodSecurityPolicy
		wantErr string
	}{
		{"valid psp", anyRule(policyv1beta1.RunAsUserStrategyRunAsAny), ""},
		{"bad psp strategy options", anyRule(policyv1beta1.RunAsUserStrategyMustRunAs), "MustRunAs requires at least one range"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(tc.psp)
			if err != nil {
				t.Fatal(err)
			}
			u := &unstructured.Unstructured{Object: content}
			before := u.DeepCopy()
			obj, err := newPlugin124(t, allowed124{}, nil).compileObject(u)
			if err != nil {
				t.Fatal(err)
			}
			compiled := obj.(*compiledPolicy)
			switch {
			case tc.wantErr == "" && compiled.err != nil:
				t.Errorf("unusable: %v", compiled.err)
			case tc.wantErr != "" && (compiled.err == nil || !strings.Contains(compiled.err.Error(), tc.wantErr)):
				t.Errorf("error %v, want one containing %q", compiled.err, tc.wantErr)
			case tc.wantErr != "" && compiled.provider != nil:
				t.Error("an unusable policy has a provider")
			}
			if !apiequality.Semantic.DeepEqual(u, before) {
				t.Errorf("compiling changed the policy: %v", u.Object)
			}
		})
	}
}
