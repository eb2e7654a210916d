//go:build !kube1.35

package webhook

import (
	"context"
	"fmt"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MutatingAdmissionPolicy is served as admissionregistration.k8s.io/v1 since Kubernetes 1.36.

// reinvocationByPolicyCases are testReinvocation's cases where a MutatingAdmissionPolicy
// changes the object after a webhook.
var reinvocationByPolicyCases = []struct {
	name string
	run  func(*testing.T, *env)
}{
	{"after a later mutating plugin's change", testReinvokedAfterPolicy},
}

func testReinvokedAfterPolicy(t *testing.T, e *env) {
	k := newCase(e.main, "reinvoke-policy")
	ns := k.namespace(t, nil)
	// A MutatingAdmissionPolicy (the plugin before the webhooks, run again in the
	// reinvocation round) copies the "stage" label into an annotation.
	k.createCopyingPolicy(t, ns)
	k.c.hooks.handle(k.path("stager"), func(c *call) *admissionv1.AdmissionResponse {
		if meta := c.objectMeta(); meta.Labels["stage"] == "" {
			return patched(setLabel(meta, "stage", "webhook"))
		}
		return nil
	})
	stager := mutatingHook(k.hookName("stager"), k.c.hooks.clientConfig(k.path("stager")), k.selector(nil), configMapRule(opCreate))
	stager.ReinvocationPolicy = ptr(admissionregistrationv1.IfNeededReinvocationPolicy)
	k.c.createMutating(t, mutatingConfig(k.configName("m"), stager))

	k.mustCreateConfigMap(t, k.configMap(ns, "staged", nil))
	calls := callsFor(k.c.hooks, k.path("stager"), "staged")
	if len(calls) != 2 {
		t.Fatalf("the IfNeeded webhook was called %d times, want twice (the policy changed the object after it)", len(calls))
	}
	if first, second := calls[0].objectMeta().Annotations[policyAnnotation], calls[1].objectMeta().Annotations[policyAnnotation]; first != "none" || second != "webhook" {
		t.Errorf("the policy's annotation was %q at the first call and %q at the second, want none then webhook", first, second)
	}
	if got := k.storedConfigMap(t, ns, "staged").Annotations[policyAnnotation]; got != "webhook" {
		t.Errorf("stored annotation %s = %q, want webhook", policyAnnotation, got)
	}
}

// policyAnnotation is where the reinvocation case's policy copies the "stage" label.
const policyAnnotation = "policy-saw-stage"

// createCopyingPolicy creates a MutatingAdmissionPolicy, reinvoked if needed, that copies
// the "stage" label of ConfigMaps created in ns into policyAnnotation ("none" without one),
// binds it, and waits until it applies.
func (k *suiteCase) createCopyingPolicy(t *testing.T, ns string) {
	t.Helper()
	name := k.configName("copy-stage")
	policies := k.c.Client.AdmissionregistrationV1().MutatingAdmissionPolicies()
	policy := &admissionregistrationv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{
				NamespaceSelector: k.selector(nil),
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: configMapRule(opCreate),
				}},
			},
			Mutations: []admissionregistrationv1.Mutation{{
				PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
				ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: fmt.Sprintf(
					`Object{metadata: Object.metadata{annotations: {%q: has(object.metadata.labels) && "stage" in object.metadata.labels ? object.metadata.labels["stage"] : "none"}}}`,
					policyAnnotation)},
			}},
			FailurePolicy:      ptr(admissionregistrationv1.Fail),
			ReinvocationPolicy: admissionregistrationv1.IfNeededReinvocationPolicy,
		},
	}
	if _, err := policies.Create(k.ctx(t), policy, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating MutatingAdmissionPolicy %s: %v", name, err)
	}
	deleteAtEnd(t, "MutatingAdmissionPolicy "+name, func(ctx context.Context) error {
		return policies.Delete(ctx, name, metav1.DeleteOptions{})
	})
	bindings := k.c.Client.AdmissionregistrationV1().MutatingAdmissionPolicyBindings()
	if _, err := bindings.Create(k.ctx(t), &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: name},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating MutatingAdmissionPolicyBinding %s: %v", name, err)
	}
	deleteAtEnd(t, "MutatingAdmissionPolicyBinding "+name, func(ctx context.Context) error {
		return bindings.Delete(ctx, name, metav1.DeleteOptions{})
	})
	eventually(t, pollTimeout, "the MutatingAdmissionPolicy to apply", func(ctx context.Context) (bool, error) {
		out, err := k.c.Client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "policy-probe-", Labels: k.labels(nil)},
		}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err
		}
		return out.Annotations[policyAnnotation] == "none", nil
	})
}
