package validation

// refused lists the plugins whose mode cannot be changed, and why (docs/enforcement-modes.md).
var refused = map[string]string{
	"PodSecurity":                          "it has enforce, warn and audit modes of its own (PodSecurityConfiguration defaults and namespace labels)",
	"ValidatingAdmissionPolicy":            "it has validationActions Deny, Warn and Audit of its own, per binding",
	"ValidatingAdmissionWebhook":           "each webhook has a failurePolicy of its own and can return warnings itself, and a webhook's denial may be what protects the server; soften one webhook at a time with webhookDispatch.validating.enforcementModes",
	"MutatingAdmissionWebhook":             "it is mutating, and each webhook has a failurePolicy of its own; make one webhook a shadow with webhookDispatch.mutating.enforcementModes",
	"MutatingAdmissionPolicy":              "it is mutating, and each policy has a failurePolicy of its own",
	"NamespaceLifecycle":                   "it keeps objects out of namespaces being deleted and protects the system namespaces; the server's own integrity depends on it",
	"NamespaceExists":                      "it keeps objects out of namespaces that do not exist, which nothing would ever delete",
	"NodeRestriction":                      "it limits each kubelet to its own Node and pods: the node isolation boundary",
	"ServiceAccount":                       "it keeps pods from using service accounts that do not exist and mirror pods from reaching tokens, secrets and config maps: a credential boundary",
	"OwnerReferencesPermissionEnforcement": "it stops users who may not delete an object from blocking its deletion: an authorization check",
	"CertificateApproval":                  "it checks who may approve certificate requests: admitting would be privilege escalation",
	"CertificateSigning":                   "it checks who may sign certificate requests: admitting would be privilege escalation",
	"CertificateSubjectRestriction":        "it refuses certificate requests for the system:masters group: admitting would be privilege escalation",
	"ClusterTrustBundleAttest":             "it checks who may attest ClusterTrustBundles for a signer: admitting would be privilege escalation",
	"Priority":                             "it reserves the system priority classes and values for the cluster's own components: admitting would let workloads preempt the control plane",
	"EventRateLimit":                       "its denial protects the API server and etcd from event floods",
	"ResourceQuota":                        "it charges usage as it admits: a request admitted over quota leaves capacity and quota accounting unprotected",
}
