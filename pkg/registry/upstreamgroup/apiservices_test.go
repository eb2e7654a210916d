package upstreamgroup

import (
	"context"
	"reflect"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset/fake"
	"k8s.io/kube-aggregator/pkg/client/informers/externalversions"
)

func TestAPIServiceKeeper(t *testing.T) {
	policy := LocalAPIService(schema.GroupVersion{Group: "policy", Version: "v1beta1"}, APIServicePriority{Group: 17100, Version: 9})
	if got := policy.Labels["kube-aggregator.kubernetes.io/automanaged"]; got != "onstart" {
		t.Errorf("the APIService is labelled %q, not as upstream's aggregator labels its own (onstart)", got)
	}
	// Another server's, which the keeper must leave alone when it is deleted.
	other := LocalAPIService(schema.GroupVersion{Group: "example.com", Version: "v1"}, APIServicePriority{Group: 100, Version: 9})
	// An edited one: the keeper leaves it as it is.
	edited := policy.DeepCopy()
	edited.Spec.VersionPriority = 1

	client := fake.NewSimpleClientset(edited, other)
	factory := externalversions.NewSharedInformerFactory(client, 0)
	keeper, err := NewAPIServiceKeeper(client.ApiregistrationV1(), factory.Apiregistration().V1().APIServices(), []*apiregistrationv1.APIService{policy})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory.Start(ctx.Done())
	done := make(chan struct{})
	go func() { keeper.Run(ctx, time.Hour); close(done) }()
	defer func() { cancel(); <-done }()

	services := client.ApiregistrationV1().APIServices()
	get := func(name string) (*apiregistrationv1.APIService, error) {
		return services.Get(ctx, name, metav1.GetOptions{})
	}
	// The keeper's first pass has run once the queue has seen and forgotten every name; a
	// pass over an existing APIService writes nothing.
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return keeper.queue.Len() == 0 && factory.Apiregistration().V1().APIServices().Informer().HasSynced(), nil
	}); err != nil {
		t.Fatal(err)
	}
	if got, err := get(policy.Name); err != nil || got.Spec.VersionPriority != 1 {
		t.Fatalf("the keeper changed an APIService that exists: %v, %+v", err, got)
	}

	// The other server's first: its deletion reaches the keeper before the policy's.
	if err := services.Delete(ctx, other.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := services.Delete(ctx, policy.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var recreated *apiregistrationv1.APIService
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		recreated, err = get(policy.Name)
		return err == nil, nil
	}); err != nil {
		t.Fatalf("the deleted APIService %s was not recreated: %v", policy.Name, err)
	}
	if !reflect.DeepEqual(recreated.Spec, policy.Spec) || recreated.Labels["kube-aggregator.kubernetes.io/automanaged"] != "onstart" {
		t.Errorf("recreated as %+v, labels %v; want %+v labelled onstart", recreated.Spec, recreated.Labels, policy.Spec)
	}
	if _, err := get(other.Name); !apierrors.IsNotFound(err) {
		t.Errorf("the keeper recreated an APIService not its own: %v", err)
	}
}
