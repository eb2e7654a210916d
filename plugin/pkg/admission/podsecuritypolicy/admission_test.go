package podsecuritypolicy

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	api "k8s.io/kubernetes/pkg/apis/core"

	"github.com/portcullis-k8s/portcullis/pkg/apis/policy"
	"github.com/portcullis-k8s/portcullis/pkg/kubecompat"
	psp "github.com/portcullis-k8s/portcullis/pkg/security/podsecuritypolicy"
)

// grants is an authorizer that allows "use" of a policy to the users listed for it, in the
// namespace and API group given ("*" for any).
type grants map[string][]grant

type grant struct{ user, namespace, group string }

func (g grants) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.GetVerb() != "use" || a.GetResource() != "podsecuritypolicies" {
		return authorizer.DecisionNoOpinion, "", nil
	}
	for _, gr := range g[a.GetName()] {
		if gr.user == a.GetUser().GetName() && (gr.namespace == "*" || gr.namespace == a.GetNamespace()) && (gr.group == "*" || gr.group == a.GetAPIGroup()) {
			return authorizer.DecisionAllow, "", nil
		}
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// permissive admits everything and sets nothing.
func permissive(name string) *policy.PodSecurityPolicy {
	return &policy.PodSecurityPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: policy.PodSecurityPolicySpec{
			Privileged:               true,
			AllowPrivilegeEscalation: true,
			AllowedCapabilities:      []api.Capability{policy.AllowAllCapabilities},
			Volumes:                  []policy.FSType{policy.All},
			HostNetwork:              true, HostIPC: true, HostPID: true,
			HostPorts:          []policy.HostPortRange{{Min: 0, Max: 65535}},
			RunAsUser:          policy.RunAsUserStrategyOptions{Rule: policy.RunAsUserStrategyRunAsAny},
			SELinux:            policy.SELinuxStrategyOptions{Rule: policy.SELinuxStrategyRunAsAny},
			SupplementalGroups: policy.SupplementalGroupsStrategyOptions{Rule: policy.SupplementalGroupsStrategyRunAsAny},
			FSGroup:            policy.FSGroupStrategyOptions{Rule: policy.FSGroupStrategyRunAsAny},
		},
	}
}

// unprivileged forbids privileged containers and sets nothing.
func unprivileged(name string) *policy.PodSecurityPolicy {
	p := permissive(name)
	p.Spec.Privileged = false
	return p
}

// defaulting sets runAsUser 1000 on pods that have none, and admits only that user.
func defaulting(name string) *policy.PodSecurityPolicy {
	p := unprivileged(name)
	p.Spec.RunAsUser = policy.RunAsUserStrategyOptions{Rule: policy.RunAsUserStrategyMustRunAs, Ranges: []policy.IDRange{{Min: 1000, Max: 1000}}}
	return p
}

func newTestPlugin(t testing.TB, g grants, policies ...*policy.PodSecurityPolicy) *Plugin {
	t.Helper()
	return pluginWith(t, g.Authorize, policies...)
}

// pluginWith returns a ready plugin holding policies, whose authorizer is authorize.
func pluginWith(t testing.TB, authorize authorizer.AuthorizerFunc, policies ...*policy.PodSecurityPolicy) *Plugin {
	t.Helper()
	p := New(psp.NewSimpleStrategyFactory())
	p.authz = authorize
	p.ready = func() bool { return true }
	var objs []any
	for _, pol := range policies {
		provider, err := psp.NewSimpleProvider(pol, "", p.strategyFactory)
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, &compiledPolicy{ObjectMeta: pol.ObjectMeta, provider: provider})
	}
	p.setPolicies(objs)
	return p
}

func newPod(mutate func(*api.Pod)) *api.Pod {
	pod := &api.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"},
		Spec: api.PodSpec{
			ServiceAccountName: "default",
			Containers:         []api.Container{{Name: "app", Image: "nginx"}},
		},
	}
	if mutate != nil {
		mutate(pod)
	}
	return pod
}

var alice = &user.DefaultInfo{Name: "alice"}

const defaultSA = "system:serviceaccount:ns:default"

// admit runs both phases, as the server does, and returns the pod as admitted.
func admit(t testing.TB, p *Plugin, pod *api.Pod, requester user.Info, op admission.Operation, subresource string, old *api.Pod) (*api.Pod, error) {
	t.Helper()
	var oldObj runtime.Object
	if old != nil {
		oldObj = old
	}
	attrs := admission.NewAttributesRecord(pod, oldObj, api.Kind("Pod").WithVersion("v1"), pod.Namespace, pod.Name,
		api.Resource("pods").WithVersion("v1"), subresource, op, nil, false, requester)
	ctx := context.Background()
	if err := p.Admit(ctx, attrs, nil); err != nil {
		return nil, err
	}
	return pod, p.Validate(ctx, attrs, nil)
}

func TestSelection(t *testing.T) {
	privileged := func(p *api.Pod) { p.Spec.Containers[0].SecurityContext = &api.SecurityContext{Privileged: ptr(true)} }
	tests := []struct {
		name     string
		policies []*policy.PodSecurityPolicy
		grants   grants
		pod      *api.Pod
		// wantPolicy is the admitting policy; empty means refused with wantError.
		wantPolicy string
		wantError  string
	}{
		{
			name:       "a policy that admits the pod unchanged wins over an earlier one that would change it",
			policies:   []*policy.PodSecurityPolicy{defaulting("a-defaulting"), unprivileged("b-unchanged")},
			grants:     grants{"a-defaulting": {{defaultSA, "ns", "policy"}}, "b-unchanged": {{defaultSA, "ns", "policy"}}},
			pod:        newPod(nil),
			wantPolicy: "b-unchanged",
		},
		{
			name:       "otherwise the first by name that admits it once defaulted",
			policies:   []*policy.PodSecurityPolicy{defaulting("b-defaulting"), defaulting("a-defaulting")},
			grants:     grants{"a-defaulting": {{defaultSA, "ns", "policy"}}, "b-defaulting": {{defaultSA, "ns", "policy"}}},
			pod:        newPod(nil),
			wantPolicy: "a-defaulting",
		},
		{
			name:       "the requesting user's grant is enough",
			policies:   []*policy.PodSecurityPolicy{unprivileged("p")},
			grants:     grants{"p": {{"alice", "ns", "policy"}}},
			pod:        newPod(nil),
			wantPolicy: "p",
		},
		{
			name:       "the pod's service account's grant is enough",
			policies:   []*policy.PodSecurityPolicy{unprivileged("p")},
			grants:     grants{"p": {{defaultSA, "ns", "policy"}}},
			pod:        newPod(nil),
			wantPolicy: "p",
		},
		{
			name:       "a grant in the legacy extensions group counts",
			policies:   []*policy.PodSecurityPolicy{unprivileged("p")},
			grants:     grants{"p": {{"alice", "ns", "extensions"}}},
			pod:        newPod(nil),
			wantPolicy: "p",
		},
		{
			name:      "a grant in another namespace does not count",
			policies:  []*policy.PodSecurityPolicy{unprivileged("p")},
			grants:    grants{"p": {{"alice", "elsewhere", "policy"}, {defaultSA, "elsewhere", "policy"}}},
			pod:       newPod(nil),
			wantError: "PodSecurityPolicy: unable to admit pod: []",
		},
		{
			name:       "a cluster-wide grant counts in every namespace",
			policies:   []*policy.PodSecurityPolicy{unprivileged("p")},
			grants:     grants{"p": {{"alice", "*", "policy"}}},
			pod:        newPod(nil),
			wantPolicy: "p",
		},
		{
			name:      "a refusal names the field, with the reasons of usable policies only",
			policies:  []*policy.PodSecurityPolicy{unprivileged("granted"), unprivileged("not-granted")},
			grants:    grants{"granted": {{"alice", "ns", "policy"}}},
			pod:       newPod(privileged),
			wantError: "PodSecurityPolicy: unable to admit pod: [spec.containers[0].securityContext.privileged: Invalid value: true: Privileged containers are not allowed]",
		},
		{
			name:       "a usable policy that admits it is found past one that does not",
			policies:   []*policy.PodSecurityPolicy{unprivileged("a-strict"), permissive("b-privileged")},
			grants:     grants{"a-strict": {{"alice", "ns", "policy"}}, "b-privileged": {{"alice", "ns", "policy"}}},
			pod:        newPod(privileged),
			wantPolicy: "b-privileged",
		},
		{
			name:      "no policy at all refuses every pod",
			grants:    grants{},
			pod:       newPod(nil),
			wantError: "PodSecurityPolicy: no providers available to validate pod request",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newTestPlugin(t, tc.grants, tc.policies...)
			pod, err := admit(t, p, tc.pod.DeepCopy(), alice, admission.Create, "", nil)
			if tc.wantPolicy == "" {
				if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tc.wantError) {
					t.Fatalf("want 403 saying %q, got %v", tc.wantError, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := pod.Annotations[ValidatedPSPAnnotation]; got != tc.wantPolicy {
				t.Errorf("admitted by %q, want %q", got, tc.wantPolicy)
			}
		})
	}
}

func TestDefaultsAreAppliedOnCreateOnly(t *testing.T) {
	p := newTestPlugin(t, grants{"defaulting": {{"alice", "ns", "policy"}}}, defaulting("defaulting"))
	pod, err := admit(t, p, newPod(nil), alice, admission.Create, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if sc := pod.Spec.Containers[0].SecurityContext; sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != 1000 {
		t.Fatalf("the policy's runAsUser default was not applied: %+v", pod.Spec.Containers[0].SecurityContext)
	}
	// An update may not be changed: a pod without the default is refused, not defaulted.
	stored := pod.DeepCopy()
	updated := newPod(func(p *api.Pod) { p.Labels = map[string]string{"a": "b"} })
	if _, err := admit(t, p, updated, alice, admission.Update, "", stored); !apierrors.IsForbidden(err) {
		t.Errorf("an update that the policy would have to change must be refused, got %v", err)
	}
}

func TestEphemeralContainersAreJudged(t *testing.T) {
	p := newTestPlugin(t, grants{"unprivileged": {{"alice", "ns", "policy"}}}, unprivileged("unprivileged"))
	stored := newPod(func(p *api.Pod) { p.Annotations = map[string]string{ValidatedPSPAnnotation: "unprivileged"} })
	debug := func(privileged bool) *api.Pod {
		pod := stored.DeepCopy()
		ec := api.EphemeralContainer{EphemeralContainerCommon: api.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}
		if privileged {
			ec.SecurityContext = &api.SecurityContext{Privileged: ptr(true)}
		}
		pod.Spec.EphemeralContainers = []api.EphemeralContainer{ec}
		return pod
	}
	if _, err := admit(t, p, debug(false), alice, admission.Update, "ephemeralcontainers", stored); err != nil {
		t.Errorf("a compliant ephemeral container was refused: %v", err)
	}
	_, err := admit(t, p, debug(true), alice, admission.Update, "ephemeralcontainers", stored)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "spec.ephemeralContainers[0].securityContext.privileged") {
		t.Errorf("a privileged ephemeral container must be refused naming it, got %v", err)
	}
}

func TestIgnoredRequests(t *testing.T) {
	// No policy at all: whatever the plugin judges is refused, so admission means ignored.
	p := newTestPlugin(t, grants{})
	pod := newPod(nil)
	withFinalizer := pod.DeepCopy()
	withFinalizer.Finalizers = []string{"example.com/hold"}
	for _, tc := range []struct {
		name        string
		op          admission.Operation
		subresource string
		old         *api.Pod
		obj         *api.Pod
	}{
		{"pods/status", admission.Update, "status", pod, pod.DeepCopy()},
		{"pods/exec", admission.Connect, "exec", nil, pod.DeepCopy()},
		{"an update of garbage-collection fields only", admission.Update, "", pod, withFinalizer.DeepCopy()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := admit(t, p, tc.obj, alice, tc.op, tc.subresource, tc.old); err != nil {
				t.Errorf("want the request left alone, got %v", err)
			}
		})
	}
}

func TestNotReadyRefuses(t *testing.T) {
	p := newTestPlugin(t, grants{}, unprivileged("p"))
	p.ready = func() bool { return false }
	p.readyTimeout = time.Millisecond
	if _, err := admit(t, p, newPod(nil), alice, admission.Create, "", nil); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "not yet ready") {
		t.Fatalf("want the not-ready refusal, got %v", err)
	}
}

// testInitializer gives a plugin what the server's initializers would; drained is closed,
// so whatever it starts stops at once.
type testInitializer struct{}

func (testInitializer) Initialize(plugin admission.Interface) {
	p := plugin.(*Plugin)
	p.SetAuthorizer(authorizer.AuthorizerFunc(grants{}.Authorize))
	// The informer it starts may list before it sees the drain: let the fake answer that
	// list (empty) rather than panic on a kind it was not told about.
	p.SetDynamicClient(dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		{Group: "policy", Version: "v1beta1", Resource: "podsecuritypolicies"}: "PodSecurityPolicyList",
	}))
	drained := make(chan struct{})
	close(drained)
	p.SetDrainedNotification(drained)
}

func TestRegister(t *testing.T) {
	plugins := admission.NewPlugins()
	Register(plugins)
	plugin, err := plugins.InitPlugin(PluginName, nil, admission.PluginInitializers{testInitializer{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := plugin.(*Plugin); !ok {
		t.Fatalf("the registered factory built a %T", plugin)
	}
}

// BenchmarkAdmit measures both phases for a typical pod created by a user whose service
// account may use one policy among n (the last by name, so every other is tried first).
func BenchmarkAdmit(b *testing.B) {
	for _, n := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("checked-admit/policies=%d", n), func(b *testing.B) {
			var policies []*policy.PodSecurityPolicy
			for i := range n {
				policies = append(policies, unprivileged(fmt.Sprintf("policy-%03d", i)))
			}
			granted := policies[n-1].Name
			p := newTestPlugin(b, grants{granted: {{defaultSA, "ns", "policy"}}}, policies...)
			template := newPod(nil)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				pod := template.DeepCopy()
				attrs := admission.NewAttributesRecord(pod, nil, api.Kind("Pod").WithVersion("v1"), "ns", "web",
					api.Resource("pods").WithVersion("v1"), "", admission.Create, nil, false, alice)
				if err := p.Admit(ctx, attrs, nil); err != nil {
					b.Fatal(err)
				}
				if err := p.Validate(ctx, attrs, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestSecurityChangedSeesEveryChange holds securityChanged to a comparison of the whole pod,
// for policies that default everything they can and pods that leave it all unset or set.
func TestSecurityChangedSeesEveryChange(t *testing.T) {
	everything := defaulting("everything")
	everything.Annotations = map[string]string{
		policy.SeccompAllowedProfilesAnnotationKey:  "runtime/default",
		policy.SeccompDefaultProfileAnnotationKey:   "runtime/default",
		policy.AppArmorAllowedProfilesAnnotationKey: "runtime/default",
		policy.AppArmorDefaultProfileAnnotationKey:  "runtime/default",
	}
	everything.Spec.RunAsGroup = &policy.RunAsGroupStrategyOptions{Rule: policy.RunAsGroupStrategyMustRunAs, Ranges: []policy.IDRange{{Min: 2000, Max: 2000}}}
	everything.Spec.FSGroup = policy.FSGroupStrategyOptions{Rule: policy.FSGroupStrategyMustRunAs, Ranges: []policy.IDRange{{Min: 3000, Max: 3000}}}
	everything.Spec.SupplementalGroups = policy.SupplementalGroupsStrategyOptions{Rule: policy.SupplementalGroupsStrategyMustRunAs, Ranges: []policy.IDRange{{Min: 4000, Max: 4000}}}
	everything.Spec.SELinux = policy.SELinuxStrategyOptions{Rule: policy.SELinuxStrategyMustRunAs, SELinuxOptions: &api.SELinuxOptions{Level: "s0:c1"}}
	everything.Spec.DefaultAddCapabilities = []api.Capability{"NET_ADMIN"}
	everything.Spec.RequiredDropCapabilities = []api.Capability{"ALL"}
	everything.Spec.AllowPrivilegeEscalation = false
	everything.Spec.ReadOnlyRootFilesystem = true
	everything.Spec.RuntimeClass = &policy.RuntimeClassStrategyOptions{AllowedRuntimeClassNames: []string{"gvisor"}, DefaultRuntimeClassName: ptr("gvisor")}
	provider, err := psp.NewSimpleProvider(everything, "", psp.NewSimpleStrategyFactory())
	if err != nil {
		t.Fatal(err)
	}
	pods := map[string]*api.Pod{
		"nothing set": newPod(func(p *api.Pod) {
			p.Spec.InitContainers = []api.Container{{Name: "init", Image: "busybox"}}
			p.Spec.EphemeralContainers = []api.EphemeralContainer{{EphemeralContainerCommon: api.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}}
		}),
		"the defaults already set": func() *api.Pod {
			pod := newPod(nil)
			if err := provider.MutatePod(pod); err != nil {
				t.Fatal(err)
			}
			return pod
		}(),
	}
	for name, pod := range pods {
		t.Run(name, func(t *testing.T) {
			candidate := pod.DeepCopy()
			if err := provider.MutatePod(candidate); err != nil {
				t.Fatal(err)
			}
			whole := !apiequality.Semantic.DeepEqual(pod, candidate)
			// Outside the mutating phase nothing is judged by 1.24's annotation rule that a
			// comparison of the whole pod would not see.
			if got := securityChanged(pod, candidate, false); got != whole {
				t.Errorf("securityChanged = %v, but the whole pod changed: %v", got, whole)
			}
		})
	}
}

// TestDeferredRefusals: in Warn or Audit mode the mutating phase leaves a pod no policy
// admits unchanged and the validating phase refuses it (for the mode to admit and record,
// once); a pod a policy admits is defaulted as under Deny.
func TestDeferredRefusals(t *testing.T) {
	p := newTestPlugin(t, grants{"defaulting": {{"alice", "ns", "policy"}}}, defaulting("defaulting"))
	p.DeferRefusalsToValidation()

	privileged := newPod(func(p *api.Pod) { p.Spec.Containers[0].SecurityContext = &api.SecurityContext{Privileged: ptr(true)} })
	pod := privileged.DeepCopy()
	attrs := admission.NewAttributesRecord(pod, nil, api.Kind("Pod").WithVersion("v1"), "ns", "web",
		api.Resource("pods").WithVersion("v1"), "", admission.Create, nil, false, alice)
	if err := p.Admit(context.Background(), attrs, nil); err != nil {
		t.Fatalf("Admit refused with refusals deferred: %v", err)
	}
	if !apiequality.Semantic.DeepEqual(pod, privileged) {
		t.Errorf("Admit changed a pod no policy admits: %+v", pod)
	}
	err := p.Validate(context.Background(), attrs, nil)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "PodSecurityPolicy: unable to validate pod: [spec.containers[0].securityContext.privileged") {
		t.Errorf("Validate: want 403 naming the reason, got %v", err)
	}

	admitted, err := admit(t, p, newPod(nil), alice, admission.Create, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if sc := admitted.Spec.Containers[0].SecurityContext; sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != 1000 {
		t.Errorf("a pod the policy admits was not defaulted: %+v", admitted.Spec.Containers[0].SecurityContext)
	}
}

// TestSeccompJudgedAs124 holds the choice of policy, and what an update may be, to 1.24's
// reading of the seccomp pod annotation (seccompChanged).
func TestSeccompJudgedAs124(t *testing.T) {
	allowAnyProfile := func(p *policy.PodSecurityPolicy) *policy.PodSecurityPolicy {
		p.Annotations = map[string]string{policy.SeccompAllowedProfilesAnnotationKey: "*"}
		return p
	}
	// a-defaulting sets runAsUser; b-unchanged sets nothing: 1.24 preferred b for a pod it
	// would not change at all, and took the first (a) when both change it.
	policies := []*policy.PodSecurityPolicy{allowAnyProfile(defaulting("a-defaulting")), allowAnyProfile(unprivileged("b-unchanged"))}
	g := grants{"a-defaulting": {{"alice", "ns", "policy"}}, "b-unchanged": {{"alice", "ns", "policy"}}}
	withField := func(p *api.Pod) {
		p.Spec.SecurityContext = &api.PodSecurityContext{SeccompProfile: &api.SeccompProfile{Type: api.SeccompProfileTypeRuntimeDefault}}
	}
	withAnnotation := func(p *api.Pod) {
		p.Annotations = map[string]string{api.SeccompPodAnnotationKey: "runtime/default"}
	}
	tests := []struct {
		name       string
		pod        *api.Pod
		wantPolicy string
	}{
		// 1.24 wrote the field's profile into the annotation: every policy changed the pod.
		{"a profile only in the field: the first policy", newPod(withField), "a-defaulting"},
		// 1.24 kept the annotation as it was.
		{"a profile only in the annotation: the policy that changes nothing", newPod(withAnnotation), "b-unchanged"},
		{"both: the policy that changes nothing", newPod(func(p *api.Pod) { withField(p); withAnnotation(p) }), "b-unchanged"},
		{"no profile: the policy that changes nothing", newPod(nil), "b-unchanged"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newTestPlugin(t, g, policies...)
			pod, err := admit(t, p, tc.pod.DeepCopy(), alice, admission.Create, "", nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := pod.Annotations[ValidatedPSPAnnotation]; got != tc.wantPolicy {
				t.Errorf("admitted by %q, want %q", got, tc.wantPolicy)
			}
		})
	}

	// A pod carrying only the annotation (created while the plugin was off, or by an old
	// client) may be updated: 1.24 did not count it as changed by any policy.
	t.Run("an update of a pod with only the annotation is admitted", func(t *testing.T) {
		p := newTestPlugin(t, grants{"b-unchanged": {{"alice", "ns", "policy"}}}, allowAnyProfile(unprivileged("b-unchanged")))
		stored := newPod(withAnnotation)
		updated := stored.DeepCopy()
		updated.Labels = map[string]string{"debug": "true"}
		if _, err := admit(t, p, updated, alice, admission.Update, "", stored); err != nil {
			t.Errorf("refused: %v", err)
		}
	})
	t.Run("an update of a pod without a profile that a default would give one is refused", func(t *testing.T) {
		defaults := allowAnyProfile(unprivileged("defaults"))
		defaults.Annotations[policy.SeccompDefaultProfileAnnotationKey] = "runtime/default"
		p := newTestPlugin(t, grants{"defaults": {{"alice", "ns", "policy"}}}, defaults)
		stored := newPod(nil)
		updated := stored.DeepCopy()
		updated.Labels = map[string]string{"debug": "true"}
		_, err := admit(t, p, updated, alice, admission.Update, "", stored)
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "PodSecurityPolicy: unable to validate pod: []") {
			t.Errorf("want 403 with 1.24's validating wording, got %v", err)
		}
	})
}

// TestServiceAccountTokenVolumeIsASecret: a policy allowing secret volumes but not projected
// ones admits the volume the ServiceAccount plugin injects, as 1.24 did, and nothing more.
func TestServiceAccountTokenVolumeIsASecret(t *testing.T) {
	secretsOnly := unprivileged("secrets-only")
	secretsOnly.Spec.Volumes = []policy.FSType{policy.Secret}
	tokenVolume := func(mutate func(*api.ProjectedVolumeSource)) func(*api.Pod) {
		return func(p *api.Pod) {
			src := &api.ProjectedVolumeSource{Sources: []api.VolumeProjection{
				{ServiceAccountToken: kubecompat.ServiceAccountTokenProjection("token", 3607)},
				{ConfigMap: &api.ConfigMapProjection{LocalObjectReference: api.LocalObjectReference{Name: "kube-root-ca.crt"},
					Items: []api.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
				{DownwardAPI: &api.DownwardAPIProjection{Items: []api.DownwardAPIVolumeFile{{Path: "namespace",
					FieldRef: &api.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
			}}
			if mutate != nil {
				mutate(src)
			}
			p.Spec.Volumes = []api.Volume{{Name: "kube-api-access-x7k2p", VolumeSource: api.VolumeSource{Projected: src}}}
		}
	}
	tests := []struct {
		name    string
		pod     *api.Pod
		allowed bool
	}{
		{"the injected token volume", newPod(tokenVolume(nil)), true},
		{"a token for another audience", newPod(tokenVolume(func(s *api.ProjectedVolumeSource) { s.Sources[0].ServiceAccountToken.Audience = "vault" })), false},
		{"a token at another path", newPod(tokenVolume(func(s *api.ProjectedVolumeSource) { s.Sources[0].ServiceAccountToken.Path = "other" })), false},
		{"another ConfigMap", newPod(tokenVolume(func(s *api.ProjectedVolumeSource) { s.Sources[1].ConfigMap.Name = "app-config" })), false},
		{"another downward API field", newPod(tokenVolume(func(s *api.ProjectedVolumeSource) {
			s.Sources[2].DownwardAPI.Items[0].FieldRef.FieldPath = "metadata.labels"
		})), false},
		{"a projected secret", newPod(tokenVolume(func(s *api.ProjectedVolumeSource) {
			s.Sources = append(s.Sources, api.VolumeProjection{Secret: &api.SecretProjection{LocalObjectReference: api.LocalObjectReference{Name: "s"}}})
		})), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newTestPlugin(t, grants{"secrets-only": {{"alice", "ns", "policy"}}}, secretsOnly)
			_, err := admit(t, p, tc.pod, alice, admission.Create, "", nil)
			switch {
			case tc.allowed && err != nil:
				t.Errorf("refused: %v", err)
			case !tc.allowed && (!apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "projected volumes are not allowed to be used")):
				t.Errorf("want 403 naming projected volumes, got %v", err)
			}
		})
	}
	// Without secret allowed, the token volume is a projected volume like any other.
	noVolumes := unprivileged("no-volumes")
	noVolumes.Spec.Volumes = []policy.FSType{policy.ConfigMap}
	p := newTestPlugin(t, grants{"no-volumes": {{"alice", "ns", "policy"}}}, noVolumes)
	if _, err := admit(t, p, newPod(tokenVolume(nil)), alice, admission.Create, "", nil); !apierrors.IsForbidden(err) {
		t.Errorf("a policy allowing neither secret nor projected admitted the token volume: %v", err)
	}
}

// BenchmarkAdmitIgnored measures the requests the plugin lets through without judging them.
func BenchmarkAdmitIgnored(b *testing.B) {
	p := newTestPlugin(b, grants{}, unprivileged("p"))
	configMap := &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}}
	pod := newPod(nil)
	for _, tc := range []struct {
		name, resource, subresource string
		obj                         runtime.Object
		op                          admission.Operation
	}{
		{"ignored-configmap", "configmaps", "", configMap, admission.Create},
		// The kubelet's status updates: the most frequent pod writes.
		{"ignored-pod-status-update", "pods", "status", pod, admission.Update},
	} {
		b.Run(tc.name, func(b *testing.B) {
			attrs := admission.NewAttributesRecord(tc.obj, tc.obj, api.Kind("Pod").WithVersion("v1"), "ns", "web",
				api.Resource(tc.resource).WithVersion("v1"), tc.subresource, tc.op, nil, false, alice)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if err := p.Admit(ctx, attrs, nil); err != nil {
					b.Fatal(err)
				}
				if err := p.Validate(ctx, attrs, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
