package readiness

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
)

// WatchSnapshot watches every object of resource through client until drained, keeping
// what transform makes of each as it enters the cache, and hands load every object held
// after each change, so that a plugin can rebuild a snapshot its requests read without a
// lock. The returned ready reports true once load has seen everything listed first: the
// handler's sync, not merely the store's, so that a ready plugin never decides on a
// snapshot that misses a listed object.
func WatchSnapshot(client dynamic.Interface, resource schema.GroupVersionResource, transform cache.TransformFunc, drained <-chan struct{}, load func([]any)) (ready func() bool, err error) {
	informer := dynamicinformer.NewFilteredDynamicInformer(client, resource, metav1.NamespaceAll, 0, cache.Indexers{}, nil).Informer()
	// Only fails once the informer has started, which it has not.
	_ = informer.SetTransform(transform)
	store := informer.GetStore()
	reload := func() { load(store.List()) }
	registration, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { reload() },
		UpdateFunc: func(any, any) { reload() },
		DeleteFunc: func(any) { reload() },
	})
	if err != nil {
		return nil, fmt.Errorf("watching %s: %w", resource.GroupResource(), err)
	}
	go informer.RunWithContext(UntilDrained(drained))
	return registration.HasSynced, nil
}
