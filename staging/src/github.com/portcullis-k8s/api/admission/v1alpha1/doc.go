// Package v1alpha1 is admission.portcullis.io/v1alpha1: the configuration kinds of
// Portcullis's own admission plugins, read from --admission-control-config-file. Each kind
// lives in its own file and registers itself from that file's init, so plugins written in
// parallel never edit the same file.
//
// +k8s:deepcopy-gen=package
// +groupName=admission.portcullis.io
package v1alpha1
