package bench

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// podWriteRules are what SecurityContextDeny handles: pod creates and updates, and updates
// through the ephemeralcontainers subresource.
func podWriteRules() []admissionregistrationv1.RuleWithOperations {
	return []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule: admissionregistrationv1.Rule{
			APIGroups:   []string{""},
			APIVersions: []string{"v1"},
			Resources:   []string{"pods", "pods/ephemeralcontainers"},
		},
	}}
}

// podCreateRules match pod creates only: what the fan-out webhooks see.
func podCreateRules() []admissionregistrationv1.RuleWithOperations {
	return []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule: admissionregistrationv1.Rule{
			APIGroups:   []string{""},
			APIVersions: []string{"v1"},
			Resources:   []string{"pods"},
		},
	}}
}

// containerAllowed is CEL that holds when container c sets neither field SecurityContextDeny
// forbids on containers.
const containerAllowed = `!has(c.securityContext) || !(has(c.securityContext.seLinuxOptions) || has(c.securityContext.runAsUser))`

// securityContextDenyPolicy is a ValidatingAdmissionPolicy that refuses what the
// SecurityContextDeny plugin refuses, and its binding.
func securityContextDenyPolicy() (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	fail := admissionregistrationv1.Fail
	notEphemeral := `request.subResource != 'ephemeralcontainers'`
	allContainers := func(list string) string {
		return fmt.Sprintf(`(!has(object.spec.%[1]s) || object.spec.%[1]s.all(c, %[2]s))`, list, containerAllowed)
	}
	var rules []admissionregistrationv1.NamedRuleWithOperations
	for _, r := range podWriteRules() {
		rules = append(rules, admissionregistrationv1.NamedRuleWithOperations{RuleWithOperations: r})
	}
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: policyMarker},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: rules},
			Validations: []admissionregistrationv1.Validation{
				{
					Expression: `!(` + notEphemeral + `) || !has(object.spec.securityContext) || !(` + strings.Join([]string{
						`has(object.spec.securityContext.supplementalGroups)`,
						`has(object.spec.securityContext.seLinuxOptions)`,
						`has(object.spec.securityContext.runAsUser)`,
						`has(object.spec.securityContext.fsGroup)`,
					}, " || ") + `)`,
					Message: policyMarker + ": pod.Spec.SecurityContext sets supplementalGroups, seLinuxOptions, runAsUser or fsGroup, which are forbidden",
				},
				{
					Expression: `!(` + notEphemeral + `) || (` + allContainers("initContainers") + ` && ` + allContainers("containers") + `)`,
					Message:    policyMarker + ": a container's securityContext sets seLinuxOptions or runAsUser, which are forbidden",
				},
				{
					Expression: notEphemeral + ` || ` + allContainers("ephemeralContainers"),
					Message:    policyMarker + ": an ephemeral container's securityContext sets seLinuxOptions or runAsUser, which are forbidden",
				},
			},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policyMarker},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	return policy, binding
}

// securityContextDenyWebhook is a validating webhook configuration that sends what
// SecurityContextDeny handles to the server's equivalent webhook.
func securityContextDenyWebhook(server *webhookServer) *admissionregistrationv1.ValidatingWebhookConfiguration {
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: policyMarker},
		Webhooks:   []admissionregistrationv1.ValidatingWebhook{validatingWebhook("securitycontextdeny.bench.portcullis.dev", server.clientConfig(securityContextDenyPath), podWriteRules())},
	}
}

// holdValidatingWebhooks is a configuration of n validating webhooks, each at its own hold path.
func holdValidatingWebhooks(server *webhookServer, n int) *admissionregistrationv1.ValidatingWebhookConfiguration {
	config := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-hold-validating-%d", n)}}
	for i := range n {
		config.Webhooks = append(config.Webhooks, validatingWebhook(fmt.Sprintf("hold-%d.validating.bench.portcullis.dev", i),
			server.clientConfig(holdPath(validatingKind, i)), podCreateRules()))
	}
	return config
}

// holdMutatingWebhooks is a configuration of n mutating webhooks, each at its own hold path.
func holdMutatingWebhooks(server *webhookServer, n int) *admissionregistrationv1.MutatingWebhookConfiguration {
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	never := admissionregistrationv1.NeverReinvocationPolicy
	timeout := int32(10)
	config := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-hold-mutating-%d", n)}}
	for i := range n {
		config.Webhooks = append(config.Webhooks, admissionregistrationv1.MutatingWebhook{
			Name:                    fmt.Sprintf("hold-%d.mutating.bench.portcullis.dev", i),
			ClientConfig:            server.clientConfig(holdPath(mutatingKind, i)),
			Rules:                   podCreateRules(),
			FailurePolicy:           &fail,
			SideEffects:             &none,
			TimeoutSeconds:          &timeout,
			AdmissionReviewVersions: []string{"v1"},
			ReinvocationPolicy:      &never,
		})
	}
	return config
}

// validatingWebhook fails closed and has no side effects, so dry-run probes reach it.
func validatingWebhook(name string, client admissionregistrationv1.WebhookClientConfig, rules []admissionregistrationv1.RuleWithOperations) admissionregistrationv1.ValidatingWebhook {
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	timeout := int32(10)
	return admissionregistrationv1.ValidatingWebhook{
		Name:                    name,
		ClientConfig:            client,
		Rules:                   rules,
		FailurePolicy:           &fail,
		SideEffects:             &none,
		TimeoutSeconds:          &timeout,
		AdmissionReviewVersions: []string{"v1"},
	}
}
