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
// These are refused at start, with the reason in the error:
//
//   - PodSecurity, ValidatingAdmissionPolicy: they have enforce/warn/audit (validationActions)
//     of their own; use those.
//   - ValidatingAdmissionWebhook, MutatingAdmissionWebhook: each webhook has its own
//     failurePolicy and can return warnings itself, and a webhook's denial may be what
//     protects the server (or another component) from harm; per webhook, not per plugin.
//   - MutatingAdmissionPolicy: mutating only; a policy's own match conditions and failure
//     policy decide.
//   - NamespaceLifecycle: keeps objects out of namespaces being deleted and protects the
//     system namespaces from deletion; without it the namespace controller never finishes.
//   - NamespaceExists: keeps objects out of namespaces that do not exist, which nothing
//     would ever delete.
//   - NodeRestriction: limits each kubelet to its own Node and pods; the node isolation
//     boundary.
//   - ServiceAccount: its validating phase keeps pods from using service accounts that do
//     not exist and mirror pods from reaching tokens, secrets and config maps; a credential
//     boundary.
//   - OwnerReferencesPermissionEnforcement: stops a user who may not delete an object from
//     blocking its deletion through ownerReferences; an authorization check.
//   - CertificateApproval, CertificateSigning, CertificateSubjectRestriction,
//     ClusterTrustBundleAttest: authorization checks on approving and signing certificates
//     (system:masters among them); admitting would be privilege escalation.
//   - Priority: reserves the system- priority classes and the values above one billion for
//     the cluster's own components; admitting would let a workload preempt the control plane.
//   - EventRateLimit: its denial protects the API server and etcd from event floods.
//   - ResourceQuota: charges usage as it admits; a request admitted over quota would leave
//     the cluster's capacity and the quota's accounting unprotected.
package enforcement
