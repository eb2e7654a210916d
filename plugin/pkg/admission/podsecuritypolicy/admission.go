// Package podsecuritypolicy restores the PodSecurityPolicy admission controller, which
// upstream deprecated in 1.21 and removed in 1.25, adapted to the 1.37 pod API.
//
// A pod is admitted when a policy admits it — unchanged, or (on CREATE only) once the
// policy's defaults are applied — and the requesting user or the pod's service account may
// "use" that policy in the pod's namespace. The policy is recorded on the pod in the
// kubernetes.io/psp annotation. Policies come from policy/v1beta1, which the server serves
// natively beside policy/v1 when the plugin is enabled.
package podsecuritypolicy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	genericadmissioninit "k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"
	api "k8s.io/kubernetes/pkg/apis/core"
	rbacregistry "k8s.io/kubernetes/pkg/registry/rbac"

	policyv1beta1 "github.com/portcullis-k8s/api/policy/v1beta1"
	"github.com/portcullis-k8s/portcullis/pkg/admission/enforcement"
	"github.com/portcullis-k8s/portcullis/pkg/apis/policy"
	"github.com/portcullis-k8s/portcullis/pkg/apis/policy/install"
	psp "github.com/portcullis-k8s/portcullis/pkg/security/podsecuritypolicy"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/internal/readiness"
)

const (
	// PluginName is the name of this admission controller.
	PluginName = "PodSecurityPolicy"

	// ValidatedPSPAnnotation names, on an admitted pod, the policy that admitted it.
	ValidatedPSPAnnotation = "kubernetes.io/psp"

	// ReadinessCheckName names the plugin's check in the server's /readyz.
	ReadinessCheckName = "podsecuritypolicy-policies-synced"

	// auditKeyPrefix prefixes the audit annotations naming the admitting policy, as 1.24's.
	auditKeyPrefix = "podsecuritypolicy.policy.k8s.io"
)

// Register registers the plugin. It takes no configuration.
func Register(plugins *admission.Plugins) {
	plugins.Register(PluginName, func(io.Reader) (admission.Interface, error) {
		return New(psp.NewSimpleStrategyFactory()), nil
	})
}

// Plugin admits pods that a policy their user or service account may use admits.
type Plugin struct {
	*admission.Handler
	strategyFactory psp.StrategyFactory
	authz           authorizer.Authorizer
	dynamicClient   dynamic.Interface
	drained         <-chan struct{}

	// policies holds every policy, compiled, sorted by name: rebuilt when one changes, read
	// without a lock by every request.
	policies     atomic.Pointer[[]*compiledPolicy]
	ready        func() bool
	readyTimeout time.Duration

	// deferRefusals: the plugin's enforcement mode is Warn or Audit, so Admit leaves a pod
	// no policy admits unchanged, for Validate to refuse (and the mode to admit, recorded).
	deferRefusals bool
}

var (
	_ admission.MutationInterface                   = &Plugin{}
	_ admission.ValidationInterface                 = &Plugin{}
	_ admission.InitializationValidator             = &Plugin{}
	_ genericadmissioninit.WantsAuthorizer          = &Plugin{}
	_ genericadmissioninit.WantsDynamicClient       = &Plugin{}
	_ genericadmissioninit.WantsDrainedNotification = &Plugin{}
	_ enforcement.RefusalDeferrer                   = &Plugin{}
)

// New returns a PodSecurityPolicy plugin handling CREATE and UPDATE.
func New(strategyFactory psp.StrategyFactory) *Plugin {
	p := &Plugin{
		Handler:         admission.NewHandler(admission.Create, admission.Update),
		strategyFactory: strategyFactory,
		ready:           func() bool { return false },
		readyTimeout:    readiness.DefaultTimeout,
	}
	p.policies.Store(&[]*compiledPolicy{})
	return p
}

// SetAuthorizer receives the server's authorizer, which decides who may use a policy.
func (p *Plugin) SetAuthorizer(authz authorizer.Authorizer) { p.authz = authz }

// SetDynamicClient receives the loopback dynamic client, used to watch policies.
func (p *Plugin) SetDynamicClient(client dynamic.Interface) { p.dynamicClient = client }

// DeferRefusalsToValidation is called when the plugin's enforcement mode is Warn or Audit:
// a pod no policy admits then passes Admit unchanged (no defaults, no kubernetes.io/psp) and
// is refused by Validate, which the mode admits and records. A pod some policy admits gets
// that policy's defaults as under Deny, so turning Deny on changes no admitted pod.
func (p *Plugin) DeferRefusalsToValidation() { p.deferRefusals = true }

// SetDrainedNotification receives the channel closed when the server has drained.
func (p *Plugin) SetDrainedNotification(drained <-chan struct{}) { p.drained = drained }

// ValidateInitialization checks the plugin got what it needs, then starts watching policies.
func (p *Plugin) ValidateInitialization() error {
	switch {
	case p.authz == nil:
		return fmt.Errorf("%s: missing authorizer", PluginName)
	case p.dynamicClient == nil:
		return fmt.Errorf("%s: missing dynamic client", PluginName)
	case p.drained == nil:
		return fmt.Errorf("%s: missing drained notification", PluginName)
	}
	ready, err := readiness.WatchSnapshot(p.dynamicClient, policyv1beta1.SchemeGroupVersion.WithResource("podsecuritypolicies"),
		p.compileObject, p.drained, p.setPolicies)
	if err != nil {
		return fmt.Errorf("%s: %w", PluginName, err)
	}
	p.ready = ready
	return nil
}

// ReadinessCheck returns the check the server adds to /readyz: the policies are listed.
func (p *Plugin) ReadinessCheck() healthz.HealthChecker {
	return readiness.Check(ReadinessCheckName, "the PodSecurityPolicies are not listed yet", p.ready)
}

// compiledPolicy is a policy with its provider, built once per policy version.
type compiledPolicy struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	provider psp.Provider
	// err says why no provider could be built: the policy then admits nothing.
	err error
}

// DeepCopyObject copies the metadata; the provider is never modified once built, so it is
// shared.
func (c *compiledPolicy) DeepCopyObject() runtime.Object {
	out := *c
	c.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

var policyScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	install.Install(s)
	return s
}()

// compileObject is the informer's transform: it keeps compiled policies, not unstructured
// objects.
func (p *Plugin) compileObject(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil // already compiled, or a tombstone
	}
	c := &compiledPolicy{}
	c.Name, c.UID, c.ResourceVersion = u.GetName(), u.GetUID(), u.GetResourceVersion()
	var versioned policyv1beta1.PodSecurityPolicy
	internal := &policy.PodSecurityPolicy{}
	c.err = runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &versioned)
	if c.err == nil {
		// Stored policies are defaulted already; defaulting again costs nothing and guards
		// objects written by an older server.
		policyScheme.Default(&versioned)
		c.err = policyScheme.Convert(&versioned, internal, nil)
	}
	if c.err == nil {
		c.provider, c.err = psp.NewSimpleProvider(internal, "", p.strategyFactory)
	}
	if c.err != nil {
		klog.ErrorS(c.err, "PodSecurityPolicy cannot be used; it admits no pod", "podsecuritypolicy", c.Name)
	}
	return c, nil
}

// setPolicies replaces the policies requests see with objs, sorted by name.
func (p *Plugin) setPolicies(objs []any) {
	policies := make([]*compiledPolicy, 0, len(objs))
	for _, obj := range objs {
		if c, ok := obj.(*compiledPolicy); ok {
			policies = append(policies, c)
		}
	}
	slices.SortFunc(policies, func(a, b *compiledPolicy) int { return strings.Compare(a.Name, b.Name) })
	p.policies.Store(&policies)
}

var podsResource = api.Resource("pods")

// podOf returns the pod of a request the plugin judges, or ignore when it judges none: other
// resources, subresources other than ephemeralcontainers, and updates that change only
// the fields garbage collection changes (whoever may update and delete the pod may do that).
func podOf(a admission.Attributes) (pod *api.Pod, ignore bool, err error) {
	if a.GetResource().GroupResource() != podsResource {
		return nil, true, nil
	}
	if sub := a.GetSubresource(); sub != "" && sub != "ephemeralcontainers" {
		return nil, true, nil
	}
	pod, ok := a.GetObject().(*api.Pod)
	if !ok {
		// An integrator passing a versioned pod: refused, as 1.24 refused it.
		return nil, false, admission.NewForbidden(a, fmt.Errorf("unexpected type %T", a.GetObject()))
	}
	if a.GetOperation() == admission.Update && a.GetSubresource() == "" && rbacregistry.IsOnlyMutatingGCFields(a.GetObject(), a.GetOldObject(), apiequality.Semantic) {
		return nil, true, nil
	}
	return pod, false, nil
}

// Admit applies the defaults of the policy that admits a new pod, preferring a policy that
// admits it unchanged, and records the policy on the pod.
func (p *Plugin) Admit(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	pod, ignore, err := podOf(a)
	if err != nil || ignore {
		return err
	}
	// Only a new pod may be changed; the rest is validated.
	if a.GetOperation() != admission.Create || a.GetSubresource() != "" {
		return nil
	}
	if !p.waitForReady(ctx) {
		return p.refuseInAdmit(admission.NewForbidden(a, errors.New("not yet ready to handle request")))
	}
	allowed, name, errs, err := p.computeSecurityContext(ctx, a, pod, true, "")
	if err != nil {
		return p.refuseInAdmit(admission.NewForbidden(a, fmt.Errorf("%s: %w", PluginName, err)))
	}
	if allowed == nil {
		// 1.24's wording, which runbooks and alerts match.
		return p.refuseInAdmit(admission.NewForbidden(a, fmt.Errorf("%s: unable to admit pod: %v", PluginName, errs)))
	}
	*pod = *allowed
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[ValidatedPSPAnnotation] = name
	if err := a.AddAnnotation(auditKeyPrefix+"/admit-policy", name); err != nil {
		klog.ErrorS(err, "Failed to add the audit annotation", "plugin", PluginName)
	}
	return nil
}

// refuseInAdmit returns Admit's refusal, or nil when refusals are deferred to Validate
// (DeferRefusalsToValidation): Validate then refuses the unchanged pod for the same reason,
// as no policy that admits it unchanged can exist where none admits it at all.
func (p *Plugin) refuseInAdmit(err error) error {
	if p.deferRefusals {
		return nil
	}
	return err
}

// Validate admits a pod that a usable policy admits unchanged; the policy named in its
// kubernetes.io/psp annotation is tried first.
func (p *Plugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	pod, ignore, err := podOf(a)
	if err != nil || ignore {
		return err
	}
	if !p.waitForReady(ctx) {
		return admission.NewForbidden(a, errors.New("not yet ready to handle request"))
	}
	allowed, name, errs, err := p.computeSecurityContext(ctx, a, pod, false, pod.Annotations[ValidatedPSPAnnotation])
	if err != nil {
		return admission.NewForbidden(a, fmt.Errorf("%s: %w", PluginName, err))
	}
	if allowed == nil {
		return admission.NewForbidden(a, fmt.Errorf("%s: unable to validate pod: %v", PluginName, errs))
	}
	if err := a.AddAnnotation(auditKeyPrefix+"/validate-policy", name); err != nil {
		klog.ErrorS(err, "Failed to add the audit annotation", "plugin", PluginName)
	}
	return nil
}

// computeSecurityContext finds the policy that admits the pod, as 1.24 did: in name order
// (the hint first when mutation is not allowed), the first usable policy that admits the pod
// unchanged; failing that, when mutation is allowed, the first usable one that admits it once
// its defaults are applied. It returns the pod as admitted and the policy's name, or nil and
// the errors of the usable policies. Unlike 1.24 it asks the authorizer before trying a
// policy, not after, so that policies the requester may not use cost no work.
func (p *Plugin) computeSecurityContext(ctx context.Context, a admission.Attributes, pod *api.Pod, mutationAllowed bool, hint string) (*api.Pod, string, field.ErrorList, error) {
	policies := *p.policies.Load()
	if len(policies) == 0 {
		return nil, "", nil, errors.New("no providers available to validate pod request")
	}
	if !mutationAllowed && hint != "" {
		if i := slices.IndexFunc(policies, func(c *compiledPolicy) bool { return c.Name == hint }); i > 0 {
			policies = append([]*compiledPolicy{policies[i]}, slices.Delete(slices.Clone(policies), i, i+1)...)
		}
	}
	serviceAccount := serviceAccountOf(pod)
	var (
		mutated   *api.Pod
		mutatedBy string
		// rejections are the reasons of the usable policies that refused the pod, in order.
		rejections  field.ErrorList
		anyProvider bool
	)
	canUse := func(name string) bool {
		return p.mayUse(ctx, a.GetUserInfo(), serviceAccount, a.GetNamespace(), name)
	}
	for _, c := range policies {
		if c.provider == nil {
			continue
		}
		anyProvider = true
		// A policy the requester may not use can neither admit the pod nor explain its
		// refusal: skip it before any work.
		if !canUse(c.Name) {
			continue
		}
		candidate := pod.DeepCopy()
		if errs := applyPolicy(c.provider, candidate); len(errs) > 0 {
			rejections = append(rejections, errs...)
			continue
		}
		changed := securityChanged(pod, candidate, mutationAllowed)
		if changed && !mutationAllowed {
			continue
		}
		if !changed {
			return candidate, c.Name, nil, nil
		}
		if mutated == nil {
			mutated, mutatedBy = candidate, c.Name
		}
	}
	if !anyProvider {
		return nil, "", nil, errors.New("no providers available to validate pod request")
	}
	if mutated != nil {
		return mutated, mutatedBy, nil, nil
	}
	return nil, "", rejections, nil
}

// securityChanged reports whether applying a policy changed the pod, as 1.24 judged it. A
// policy's defaults reach only the pod's and its containers' security contexts and its
// runtime class, so only those are compared, rather than the whole pod (which costs most of
// an admission); TestSecurityChangedSeesEveryChange holds the providers to that. The pod's
// seccomp profile is judged as 1.24 judged its annotation (seccompChanged).
func securityChanged(before, after *api.Pod, mutating bool) bool {
	equal := apiequality.Semantic.DeepEqual
	if seccompChanged(before, after, mutating) || !equal(before.Spec.RuntimeClassName, after.Spec.RuntimeClassName) {
		return true
	}
	if b, a := before.Spec.SecurityContext, after.Spec.SecurityContext; b != a {
		if b == nil || a == nil {
			// Only a new profile field could make one out of none, and seccompChanged has
			// judged that.
			b, a = nonNil(b), nonNil(a)
		}
		bc, ac := *b, *a
		bc.SeccompProfile, ac.SeccompProfile = nil, nil
		if !equal(&bc, &ac) {
			return true
		}
	}
	for i := range before.Spec.InitContainers {
		if !equal(before.Spec.InitContainers[i].SecurityContext, after.Spec.InitContainers[i].SecurityContext) {
			return true
		}
	}
	for i := range before.Spec.Containers {
		if !equal(before.Spec.Containers[i].SecurityContext, after.Spec.Containers[i].SecurityContext) {
			return true
		}
	}
	for i := range before.Spec.EphemeralContainers {
		if !equal(before.Spec.EphemeralContainers[i].SecurityContext, after.Spec.EphemeralContainers[i].SecurityContext) {
			return true
		}
	}
	return false
}

func nonNil(sc *api.PodSecurityContext) *api.PodSecurityContext {
	if sc == nil {
		return &api.PodSecurityContext{}
	}
	return sc
}

// seccompChanged judges the pod-level seccomp profile as 1.24 did, where the profile lived in
// the seccomp.security.alpha.kubernetes.io/pod annotation and the policy wrote whatever the
// pod ended with into it:
//   - a pod with the annotation is never changed (1.24 kept it; our provider only copies it
//     into the field 1.37 nodes read), so pods created with only the annotation, such as
//     those created while the plugin was off, are admitted on update as 1.24 admitted them;
//   - when defaults may be applied (a new pod), a pod that ends with a profile but had no
//     annotation counts as changed, whether the profile is its own field or the policy's
//     default: 1.24 added the annotation in both cases, which decides the policy chosen;
//   - otherwise (an update, or the validating phase) only a new profile counts, as 1.24's
//     pods then carried the annotation the registry synced from the field.
func seccompChanged(before, after *api.Pod, mutating bool) bool {
	if before.Annotations[api.SeccompPodAnnotationKey] != "" {
		return false
	}
	b, a := podSeccompProfile(before), podSeccompProfile(after)
	if mutating && a != nil {
		return true
	}
	return !apiequality.Semantic.DeepEqual(b, a)
}

func podSeccompProfile(pod *api.Pod) *api.SeccompProfile {
	if pod.Spec.SecurityContext == nil {
		return nil
	}
	return pod.Spec.SecurityContext.SeccompProfile
}

// applyPolicy applies a policy's defaults to the pod, then validates it.
func applyPolicy(provider psp.Provider, pod *api.Pod) field.ErrorList {
	var errs field.ErrorList
	if err := provider.MutatePod(pod); err != nil {
		errs = append(errs, field.Invalid(field.NewPath(""), "", err.Error()))
	}
	return append(errs, provider.ValidatePod(pod)...)
}

// serviceAccountOf returns the user the pod's service account authenticates as, if any.
func serviceAccountOf(pod *api.Pod) user.Info {
	if pod.Spec.ServiceAccountName == "" {
		return nil
	}
	return serviceaccount.UserInfo(pod.Namespace, pod.Spec.ServiceAccountName, "")
}

// policyGroups are the API groups in which "use" of a policy may be granted: policy, and
// extensions, where the resource lived first and where older RBAC rules grant it.
var policyGroups = []string{policy.GroupName, "extensions"}

// mayUse reports whether the service account or the user may use the policy in namespace.
// The service account comes first: it is the usual grant.
func (p *Plugin) mayUse(ctx context.Context, requester, serviceAccount user.Info, namespace, name string) bool {
	for _, who := range []user.Info{serviceAccount, requester} {
		if who == nil {
			continue
		}
		for _, group := range policyGroups {
			decision, _, err := p.authz.Authorize(ctx, authorizer.AttributesRecord{
				User: who, Verb: "use", Namespace: namespace, Name: name,
				APIGroup: group, APIVersion: "*", Resource: "podsecuritypolicies", ResourceRequest: true,
			})
			if err != nil {
				klog.V(4).InfoS("Authorizing the use of a PodSecurityPolicy failed", "podsecuritypolicy", name, "user", who.GetName(), "err", err)
			}
			if decision == authorizer.DecisionAllow {
				return true
			}
		}
	}
	return false
}

// waitForReady waits, at most readyTimeout and never past the request's deadline, for the
// policies to be listed.
func (p *Plugin) waitForReady(ctx context.Context) bool {
	return readiness.Wait(ctx, p.ready, p.readyTimeout)
}
