package webhookconfigurationguard

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Builders for webhook configurations. good() and friends follow the "Admission Webhook
// Good Practices" page's examples; each test case then breaks one practice.

func ptr[T any](v T) *T { return &v }

type op = admissionregistrationv1.OperationType

func rule(groups, resources []string, ops ...op) admissionregistrationv1.RuleWithOperations {
	return admissionregistrationv1.RuleWithOperations{
		Operations: ops,
		Rule:       admissionregistrationv1.Rule{APIGroups: groups, APIVersions: []string{"*"}, Resources: resources},
	}
}

var (
	create = admissionregistrationv1.Create
	update = admissionregistrationv1.Update
	all    = admissionregistrationv1.OperationAll
)

// excludeSystem is the namespaceSelector the page recommends: no kube-system, no
// kube-node-lease, and not the webhook's own namespace.
func excludeNamespaces(ns ...string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: namespaceNameLabel, Operator: metav1.LabelSelectorOpNotIn, Values: ns,
	}}}
}

// sidecarInjector: "For a create Pod request, inject a sidecar container named foo-sidecar
// if none exists" (idempotent mutation), failing open ("Fail open and validate the final
// state"), served from its own namespace which it excludes ("Avoid self-mutations"), with a
// small timeout.
func sidecarInjector() *admissionregistrationv1.MutatingWebhookConfiguration {
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "sidecar-injector"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    "sidecar.example.com",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "injector", Name: "webhook"}},
			Rules:                   []admissionregistrationv1.RuleWithOperations{rule([]string{""}, []string{"pods"}, create)},
			FailurePolicy:           ptr(admissionregistrationv1.Ignore),
			NamespaceSelector:       excludeNamespaces("kube-system", "kube-node-lease", "injector"),
			SideEffects:             ptr(admissionregistrationv1.SideEffectClassNone),
			TimeoutSeconds:          ptr(int32(3)),
			ReinvocationPolicy:      ptr(admissionregistrationv1.IfNeededReinvocationPolicy),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
}

// replicasValidator: "web-server Deployments have at least three replicas" as a validating
// webhook limited by a namespaceSelector and a matchCondition ("Filter for specific
// requests by using match conditions"), failing closed but served from outside the
// namespaces it intercepts.
func replicasValidator() *admissionregistrationv1.ValidatingWebhookConfiguration {
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "replicas"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:              "replicas.example.com",
			ClientConfig:      admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "policy", Name: "webhook"}},
			Rules:             []admissionregistrationv1.RuleWithOperations{rule([]string{"apps"}, []string{"deployments"}, create, update)},
			FailurePolicy:     ptr(admissionregistrationv1.Fail),
			NamespaceSelector: excludeNamespaces("kube-system", "kube-node-lease", "policy"),
			MatchConditions: []admissionregistrationv1.MatchCondition{{
				Name: "web-server", Expression: `object.metadata.name == "web-server"`,
			}},
			SideEffects:             ptr(admissionregistrationv1.SideEffectClassNone),
			TimeoutSeconds:          ptr(int32(2)),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
}

// envLabel: the page's "env: prod" example, installed as it recommends ("Install and enable
// a mutating webhook"): failurePolicy Ignore and a namespaceSelector on a test namespace.
func envLabel() *admissionregistrationv1.MutatingWebhookConfiguration {
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "env-label"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    "env.example.com",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "env", Name: "webhook"}},
			Rules:                   []admissionregistrationv1.RuleWithOperations{rule([]string{""}, []string{"pods"}, create)},
			FailurePolicy:           ptr(admissionregistrationv1.Ignore),
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{namespaceNameLabel: "webhook-test"}},
			SideEffects:             ptr(admissionregistrationv1.SideEffectClassNone),
			TimeoutSeconds:          ptr(int32(1)),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
}
