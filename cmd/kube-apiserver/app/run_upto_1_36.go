//go:build kube1.35 || kube1.36

package app

import "k8s.io/kubernetes/cmd/kube-apiserver/app/options"

// nameInformers does nothing: informers have no names before 1.37.
func nameInformers(*options.CompletedOptions) error { return nil }
