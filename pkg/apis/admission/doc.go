// Package admission holds the internal (hub) form of admission.portcullis.io: the
// configuration kinds of the admission config file's Portcullis entry and of Portcullis's own
// admission plugins. The versioned form is github.com/portcullis-k8s/api/admission/v1alpha1;
// v1alpha1/ here converts and defaults it, validation/ validates the internal form, and
// pkg/admission/portcullisconfig loads a file through both. The consumers (the enforcement
// decorator, the webhook dispatch, the trace, preflight and the plugins) read only these
// types, already defaulted and validated.
//
// +k8s:deepcopy-gen=package
// +groupName=admission.portcullis.io
package admission
