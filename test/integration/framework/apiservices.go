package framework

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	portcullisapi "github.com/portcullis-k8s/portcullis/pkg/apis/admission"
)

// APIServiceResource is the aggregator's APIService resource.
var APIServiceResource = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// OursAPIServices returns the APIServices of the versions of ours, by name, each with the
// resource of ours it serves.
func OursAPIServices() map[string]schema.GroupVersionResource {
	out := map[string]schema.GroupVersionResource{}
	for _, r := range portcullisapi.ServableResources() {
		out[r.Version+"."+r.Group] = r
	}
	return out
}

// WatchAPIServicesThroughStockStart watches the APIServices of ours through config from now
// on, and returns what waits, once a stock server has started, for each to be deleted (a
// stock start deletes them) and, when recreated, added again (a server of ours runs).
func WatchAPIServicesThroughStockStart(t testing.TB, config *rest.Config, recreated bool) (waitForStockStart func(stock string)) {
	t.Helper()
	ctx := context.Background()
	services := dynamic.NewForConfigOrDie(config).Resource(APIServiceResource)
	list, err := services.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := services.Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	ours := OursAPIServices()
	return func(stock string) {
		t.Helper()
		defer w.Stop()
		deleted, added := map[string]bool{}, map[string]bool{}
		done := func() bool {
			for name := range ours {
				if !deleted[name] || (recreated && !added[name]) {
					return false
				}
			}
			return true
		}
		timeout := time.After(2 * time.Minute)
		for !done() {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					t.Fatalf("the watch of APIServices through %s ended", config.Host)
				}
				obj, isObject := ev.Object.(*unstructured.Unstructured)
				if !isObject {
					continue
				}
				if _, isOurs := ours[obj.GetName()]; !isOurs {
					continue
				}
				switch ev.Type {
				case watch.Deleted:
					deleted[obj.GetName()] = true
				case watch.Added:
					if deleted[obj.GetName()] {
						added[obj.GetName()] = true
					}
				}
			case <-timeout:
				want := "deleted by stock's start"
				if recreated {
					want += " and recreated by ours"
				}
				t.Fatalf("after %s started: deleted %v, added again %v (want every one of %v %s)", stock, deleted, added, slices.Sorted(maps.Keys(ours)), want)
			}
		}
	}
}

// ServedResources returns the resources discovery lists, and the error it reports: through
// aggregated discovery (client-go's default), or legacy discovery (/apis and each version).
func ServedResources(config *rest.Config, legacy bool) (map[schema.GroupVersionResource]bool, error) {
	var client discovery.DiscoveryInterface = discovery.NewDiscoveryClientForConfigOrDie(config)
	if legacy {
		client = discovery.NewDiscoveryClientForConfigOrDie(config).WithLegacy()
	}
	_, lists, err := client.ServerGroupsAndResources()
	served := map[schema.GroupVersionResource]bool{}
	for _, list := range lists {
		gv, parseErr := schema.ParseGroupVersion(list.GroupVersion)
		if parseErr != nil {
			return nil, errors.Join(err, parseErr)
		}
		for _, r := range list.APIResources {
			served[gv.WithResource(r.Name)] = true
		}
	}
	return served, err
}

// CheckOursDiscoverable fails the test unless aggregated and legacy discovery through config
// each list every resource of ours, and report no version of ours failed. With servers of two
// minors on one etcd, legacy discovery through the older one also reports failed the
// versions only the newer one serves, whose APIServices it registered (upstream's: 1.37's
// storagemigration.k8s.io/v1 through 1.36), as between stock servers of two minors: with
// otherMinorMayFail, those are not counted.
func CheckOursDiscoverable(t testing.TB, config *rest.Config, otherMinorMayFail bool) {
	t.Helper()
	ours := map[schema.GroupVersion]bool{}
	for _, gvr := range OursAPIServices() {
		ours[gvr.GroupVersion()] = true
	}
	for _, legacy := range []bool{false, true} {
		path := map[bool]string{false: "aggregated", true: "legacy"}[legacy]
		served, err := ServedResources(config, legacy)
		var failed *discovery.ErrGroupDiscoveryFailed
		switch {
		case err == nil:
		case otherMinorMayFail && errors.As(err, &failed):
			for gv, gvErr := range failed.Groups {
				if ours[gv] {
					t.Errorf("%s discovery through %s: %s: %v", path, config.Host, gv, gvErr)
				}
			}
		default:
			t.Errorf("%s discovery through %s: %v", path, config.Host, err)
		}
		for _, gvr := range OursAPIServices() {
			if !served[gvr] {
				t.Errorf("%s discovery through %s does not list %v", path, config.Host, gvr)
			}
		}
	}
}
