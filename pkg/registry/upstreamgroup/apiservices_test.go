package upstreamgroup

import (
	"context"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset/fake"
	"k8s.io/kube-aggregator/pkg/client/informers/externalversions"
)

var (
	policyAPIService       = LocalAPIService(schema.GroupVersion{Group: "policy", Version: "v1beta1"}, APIServicePriority{Group: 17100, Version: 9})
	initializersAPIService = LocalAPIService(schema.GroupVersion{Group: "admissionregistration.k8s.io", Version: "v1alpha1"}, APIServicePriority{Group: 16700, Version: 9})
)

func TestLocalAPIServiceIsLabelledAsUpstreamLabelsItsOwn(t *testing.T) {
	if got := policyAPIService.Labels["kube-aggregator.kubernetes.io/automanaged"]; got != "onstart" {
		t.Errorf("the APIService is labelled %q, not as upstream's aggregator labels its own (onstart)", got)
	}
}

// TestAPIServiceKeeperKeep: an APIService that exists is left as it is, even edited; a
// missing one is created as desired.
func TestAPIServiceKeeperKeep(t *testing.T) {
	edited := policyAPIService.DeepCopy()
	edited.Spec.VersionPriority = 1
	client := fake.NewSimpleClientset(edited)
	factory := externalversions.NewSharedInformerFactory(client, 0)
	informer := factory.Apiregistration().V1().APIServices()
	keeper, err := NewAPIServiceKeeper(client.ApiregistrationV1(), informer, []*apiregistrationv1.APIService{policyAPIService, initializersAPIService})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.Informer().HasSynced) {
		t.Fatal("the informer did not sync")
	}
	client.ClearActions()
	for _, name := range []string{policyAPIService.Name, initializersAPIService.Name} {
		if err := keeper.keep(ctx, name); err != nil {
			t.Fatalf("keep(%s): %v", name, err)
		}
	}
	actions := client.Actions()
	if len(actions) != 1 || actions[0].GetVerb() != "create" {
		t.Fatalf("want one create (the missing APIService), got %v", actions)
	}
	got, err := client.ApiregistrationV1().APIServices().Get(ctx, policyAPIService.Name, metav1.GetOptions{})
	if err != nil || got.Spec.VersionPriority != 1 {
		t.Errorf("the edited APIService changed: %v, %+v", err, got)
	}
	created, err := client.ApiregistrationV1().APIServices().Get(ctx, initializersAPIService.Name, metav1.GetOptions{})
	if err != nil || !reflect.DeepEqual(created.Spec, initializersAPIService.Spec) || !reflect.DeepEqual(created.Labels, initializersAPIService.Labels) {
		t.Errorf("created %+v, want %+v", created, initializersAPIService)
	}
}

// TestAPIServiceKeeperRecreates: an APIService deleted while the keeper runs comes back.
func TestAPIServiceKeeperRecreates(t *testing.T) {
	client := fake.NewSimpleClientset(policyAPIService.DeepCopy())
	factory := externalversions.NewSharedInformerFactory(client, 0)
	keeper, err := NewAPIServiceKeeper(client.ApiregistrationV1(), factory.Apiregistration().V1().APIServices(), []*apiregistrationv1.APIService{policyAPIService})
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
	if err := services.Delete(ctx, policyAPIService.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var recreated *apiregistrationv1.APIService
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		recreated, err = services.Get(ctx, policyAPIService.Name, metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("the deleted APIService %s was not recreated: %v", policyAPIService.Name, err)
	}
	if !reflect.DeepEqual(recreated.Spec, policyAPIService.Spec) || !reflect.DeepEqual(recreated.Labels, policyAPIService.Labels) {
		t.Errorf("recreated as %+v, labels %v; want %+v labelled onstart", recreated.Spec, recreated.Labels, policyAPIService.Spec)
	}
}
