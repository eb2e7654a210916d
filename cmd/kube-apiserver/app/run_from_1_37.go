//go:build !kube1.35 && !kube1.36

package app

import (
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/cmd/kube-apiserver/app/options"
)

// nameInformers names the server's informers, as upstream's Run does since 1.37.
func nameInformers(opts *options.CompletedOptions) error {
	if opts.InformerName == nil {
		informerName, err := cache.NewInformerName("kube-apiserver")
		if err != nil {
			return err
		}
		opts.InformerName = informerName
	}
	return nil
}
