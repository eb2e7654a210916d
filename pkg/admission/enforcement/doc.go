// Package enforcement gives any validating admission plugin an enforcement mode — Deny (the
// default: the plugin's own behaviour), Warn, Audit, or Warn and Audit — set per plugin in
// the admission config file and implemented once, as an admission decorator around the
// plugins the chain builds, rather than in each plugin.
//
// # Where it is configured
//
// The enforcementModes of the admission config file's Portcullis entry (a
// PortcullisConfiguration, read by pkg/admission/portcullisconfig; the EnforcementModes entry
// of earlier releases is still read). That entry is not a plugin: a stock kube-apiserver asks
// its config provider only for the plugins it enables
// (k8s.io/apiserver/pkg/admission.Plugins.NewFromPlugins calls ConfigFor(pluginName) for each
// enabled name, and nothing validates the names of the entries), so it never reads it and the
// same file still starts it — rolling back to stock means every plugin denies again.
//
// # What counts as a denial
//
// A validating plugin's error rejects the request. The decorator turns into a warning or an
// audit record only errors that carry an API status with a 4xx code (403 Forbidden from
// admission.NewForbidden, 400, 404, 409, 422, …): the plugin looked at the request and
// judged it. Anything else — a 5xx status, or a plain error, which the server answers with
// 500 — means the plugin could not judge (a lister failed, a timeout): it is returned
// unchanged, so a plugin in Warn or Audit mode still fails closed when it is broken. A 403
// "not yet ready" from a plugin still starting is a 4xx and is admitted in Warn/Audit mode,
// which is what a non-enforcing plugin would do anyway.
//
// # Only the validating phase
//
// The wrapper of a plugin that both mutates and validates passes Admit through untouched:
// mutation is never suppressed, and a denial from the mutating phase still rejects — unless
// the plugin implements RefusalDeferrer (PodSecurityPolicy), whose mutating phase then
// leaves its refusals to its validating phase, so that Warn and Audit admit what either
// phase would refuse, recorded once. A
// plugin with no validating phase has nothing to soften and is refused (Decorator.Err).
// The wrapper of a validating-only plugin does not implement MutationInterface, so the chain
// does not start treating it as mutating.
//
// # Refused plugins
//
// Some plugins' modes cannot be changed: they have modes of their own (PodSecurity,
// ValidatingAdmissionPolicy), they are per-webhook or mutating (the webhook and mutating
// policy plugins), or their denial is a boundary (namespaces, nodes, service accounts,
// certificates, priorities, event floods, quota). The list, with the reason each is refused,
// is validation's (pkg/apis/admission/validation/refused.go): a file naming one is refused at
// start with its reason, and docs/enforcement-modes.md lists them.
package enforcement
