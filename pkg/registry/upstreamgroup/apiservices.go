package upstreamgroup

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	apiregistrationclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset/typed/apiregistration/v1"
	apiregistrationinformers "k8s.io/kube-aggregator/pkg/client/informers/externalversions/apiregistration/v1"
	apiregistrationlisters "k8s.io/kube-aggregator/pkg/client/listers/apiregistration/v1"
	"k8s.io/kube-aggregator/pkg/controllers/autoregister"
)

// APIServicePriority is an APIService's place in discovery, as upstream's aggregator gives
// each version it serves.
type APIServicePriority struct {
	Group   int32
	Version int32
}

// automanagedOnStart is the value of autoregister.AutoRegisterManagedLabel upstream's
// aggregator gives the APIServices of the versions its server serves: "sync on start".
const automanagedOnStart = "onstart"

// LocalAPIService returns the APIService upstream's aggregator registers for a version its
// own server serves, labelled as upstream labels it.
func LocalAPIService(gv schema.GroupVersion, priority APIServicePriority) *apiregistrationv1.APIService {
	return &apiregistrationv1.APIService{
		ObjectMeta: metav1.ObjectMeta{
			Name:   gv.Version + "." + gv.Group,
			Labels: map[string]string{autoregister.AutoRegisterManagedLabel: automanagedOnStart},
		},
		Spec: apiregistrationv1.APIServiceSpec{
			Group:                gv.Group,
			Version:              gv.Version,
			GroupPriorityMinimum: priority.Group,
			VersionPriority:      priority.Version,
		},
	}
}

// APIServiceKeeper recreates the APIServices of the versions of ours the server serves
// whenever they are missing.
//
// Upstream's aggregator creates its server's APIServices once, at start, and, at start
// again, deletes every one labelled "sync on start" that its own server does not serve. So
// in a control plane with stock and Portcullis members on one etcd, a stock member's start
// deletes ours, and upstream's aggregator in ours never recreates them: legacy discovery
// (/apis) and `kubectl get apiservice` lose policy/v1beta1 until each member of ours
// restarts. The keeper puts them back, with upstream's own label, so that:
//   - a stock member leaves the recreated ones alone (it deletes only those present at its
//     start);
//   - once every member runs stock, the last one's start deletes them, and no APIService
//     is left pointing at nothing.
type APIServiceKeeper struct {
	client  apiregistrationclient.APIServicesGetter
	lister  apiregistrationlisters.APIServiceLister
	synced  cache.InformerSynced
	desired map[string]*apiregistrationv1.APIService
	queue   workqueue.TypedRateLimitingInterface[string]
}

// NewAPIServiceKeeper returns a keeper of desired (each as LocalAPIService makes it),
// watching APIServices through informer and creating them through client.
func NewAPIServiceKeeper(client apiregistrationclient.APIServicesGetter, informer apiregistrationinformers.APIServiceInformer, desired []*apiregistrationv1.APIService) (*APIServiceKeeper, error) {
	k := &APIServiceKeeper{
		client:  client,
		lister:  informer.Lister(),
		synced:  informer.Informer().HasSynced,
		desired: make(map[string]*apiregistrationv1.APIService, len(desired)),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "portcullis_apiservice_keeper"}),
	}
	for _, s := range desired {
		k.desired[s.Name] = s
	}
	_, err := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj any) {
			if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			if s, ok := obj.(*apiregistrationv1.APIService); ok {
				k.enqueue(s.Name)
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("watching APIServices: %w", err)
	}
	return k, nil
}

func (k *APIServiceKeeper) enqueue(name string) {
	if _, ok := k.desired[name]; ok {
		k.queue.Add(name)
	}
}

// Run keeps the APIServices until ctx ends. It checks each once the informer has synced,
// then again whenever one is deleted, and every resync period in case a create failed
// past its retries.
func (k *APIServiceKeeper) Run(ctx context.Context, resync time.Duration) {
	defer utilruntime.HandleCrash()
	defer k.queue.ShutDown()
	if !cache.WaitForNamedCacheSync("portcullis-apiservice-keeper", ctx.Done(), k.synced) {
		return
	}
	go wait.UntilWithContext(ctx, func(ctx context.Context) {
		for k.processNext(ctx) {
		}
	}, time.Second)
	wait.UntilWithContext(ctx, func(context.Context) {
		for name := range k.desired {
			k.queue.Add(name)
		}
	}, resync)
}

func (k *APIServiceKeeper) processNext(ctx context.Context) bool {
	name, quit := k.queue.Get()
	if quit {
		return false
	}
	defer k.queue.Done(name)
	if err := k.keep(ctx, name); err != nil {
		utilruntime.HandleError(fmt.Errorf("recreating APIService %s: %w", name, err))
		k.queue.AddRateLimited(name)
		return true
	}
	k.queue.Forget(name)
	return true
}

// keep creates the APIService name when it is missing, and leaves one that exists as it is,
// as upstream's aggregator leaves an APIService it created once.
func (k *APIServiceKeeper) keep(ctx context.Context, name string) error {
	if _, err := k.lister.Get(name); !apierrors.IsNotFound(err) {
		return err
	}
	_, err := k.client.APIServices().Create(ctx, k.desired[name].DeepCopy(), metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		return nil
	case err != nil:
		return err
	}
	klog.InfoS("Recreated the APIService of a version Portcullis serves, deleted by another API server's start (a member running stock?)", "apiService", name)
	return nil
}
