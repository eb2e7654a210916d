package podsecuritypolicy

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	api "k8s.io/kubernetes/pkg/apis/core"
	corev1conversion "k8s.io/kubernetes/pkg/apis/core/v1"

	psp "github.com/portcullis-k8s/portcullis/pkg/security/podsecuritypolicy"
)

// Evaluator judges pods as the plugin would, away from a server: kube-apiserver preflight
// --podsecuritypolicy runs it over a cluster's pods and pod templates before the plugin is
// turned on.
type Evaluator struct {
	plugin *Plugin
}

// NewEvaluator compiles policies (policy/v1beta1 objects, as listed) and asks authz who may
// use them. A policy that cannot be used is reported by Unusable and admits nothing, as in
// the plugin.
func NewEvaluator(policies []unstructured.Unstructured, authz authorizer.Authorizer) *Evaluator {
	p := New(psp.NewSimpleStrategyFactory())
	p.authz = authz
	p.ready = func() bool { return true }
	objs := make([]any, 0, len(policies))
	for i := range policies {
		c, _ := p.compileObject(&policies[i])
		objs = append(objs, c)
	}
	p.setPolicies(objs)
	return &Evaluator{plugin: p}
}

// Unusable returns, by policy name, why a policy admits nothing.
func (e *Evaluator) Unusable() map[string]string {
	out := map[string]string{}
	for _, c := range *e.plugin.policies.Load() {
		if c.err != nil {
			out[c.Name] = c.err.Error()
		}
	}
	return out
}

// Verdict is what the plugin would do with a pod.
type Verdict struct {
	// Policy admits the pod; empty when it is refused.
	Policy string `json:"policy,omitempty"`
	// Defaults are the security settings the policy would set, each as "path: value", in
	// the pod's order; empty when it admits the pod unchanged.
	Defaults []string `json:"defaults,omitempty"`
	// Refusal is the refusal's message, in the plugin's words, when no policy admits it.
	Refusal string `json:"refusal,omitempty"`
}

// Evaluate judges pod as a create (new pods from a template: the policy's defaults may be
// applied) or an update (an existing pod: they may not), requested by requester (nil: the
// pod's service account only).
func (e *Evaluator) Evaluate(ctx context.Context, pod *api.Pod, requester user.Info, create bool) Verdict {
	if requester == nil {
		requester = &user.DefaultInfo{}
	}
	op := admission.Update
	if create {
		op = admission.Create
	}
	a := admission.NewAttributesRecord(pod, pod, api.Kind("Pod").WithVersion("v1"), pod.Namespace, pod.Name,
		podsResource.WithVersion("v1"), "", op, nil, false, requester)
	hint := ""
	if !create {
		hint = pod.Annotations[ValidatedPSPAnnotation]
	}
	allowed, name, errs, err := e.plugin.computeSecurityContext(ctx, a, pod, create, hint)
	switch {
	case err != nil:
		return Verdict{Refusal: fmt.Sprintf("%s: %v", PluginName, err)}
	case allowed == nil:
		phase := "unable to validate pod"
		if create {
			phase = "unable to admit pod"
		}
		return Verdict{Refusal: fmt.Sprintf("%s: %s: %v", PluginName, phase, errs)}
	}
	return Verdict{Policy: name, Defaults: securityDefaults(pod, allowed)}
}

// securityDefaults lists the security settings that differ between a pod and the same pod
// as a policy admits it, as the v1 JSON a user would write.
func securityDefaults(before, after *api.Pod) []string {
	var out []string
	spec := field.NewPath("spec")
	if !apiequality.Semantic.DeepEqual(before.Spec.SecurityContext, after.Spec.SecurityContext) && after.Spec.SecurityContext != nil {
		var v1 corev1.PodSecurityContext
		if err := corev1conversion.Convert_core_PodSecurityContext_To_v1_PodSecurityContext(after.Spec.SecurityContext, &v1, nil); err == nil {
			out = append(out, spec.Child("securityContext").String()+": "+asJSON(&v1))
		}
	}
	if !apiequality.Semantic.DeepEqual(before.Spec.RuntimeClassName, after.Spec.RuntimeClassName) && after.Spec.RuntimeClassName != nil {
		out = append(out, spec.Child("runtimeClassName").String()+": "+*after.Spec.RuntimeClassName)
	}
	container := func(path *field.Path, b, a *api.SecurityContext) {
		if apiequality.Semantic.DeepEqual(b, a) || a == nil {
			return
		}
		var v1 corev1.SecurityContext
		if err := corev1conversion.Convert_core_SecurityContext_To_v1_SecurityContext(a, &v1, nil); err == nil {
			out = append(out, path.Child("securityContext").String()+": "+asJSON(&v1))
		}
	}
	for i := range before.Spec.InitContainers {
		container(spec.Child("initContainers").Index(i), before.Spec.InitContainers[i].SecurityContext, after.Spec.InitContainers[i].SecurityContext)
	}
	for i := range before.Spec.Containers {
		container(spec.Child("containers").Index(i), before.Spec.Containers[i].SecurityContext, after.Spec.Containers[i].SecurityContext)
	}
	return out
}

func asJSON(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(data)
}
