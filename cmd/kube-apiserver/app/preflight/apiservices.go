package preflight

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/portcullis-k8s/portcullis/pkg/admission/portcullisconfig"
)

var apiServicesResource = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// apiServiceState is what the cluster has of the APIService of one version of ours.
type apiServiceState struct {
	name string
	// registered: the APIService exists; served: the server that answered serves its version.
	registered, served bool
}

// apiServiceStates reads, through kubeconfig, the APIServices of the versions of ours and
// whether the server that answers serves each (two reads per version, nothing written).
func apiServiceStates(ctx context.Context, kubeconfig string) ([]apiServiceState, error) {
	restConfig, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
	}
	dyn, err := dynamic.NewForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
	}
	var states []apiServiceState
	for _, gv := range portcullisconfig.ServableAPIs() {
		s := apiServiceState{name: gv.Version + "." + gv.Group}
		switch _, err := dyn.Resource(apiServicesResource).Get(ctx, s.name, metav1.GetOptions{}); {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, fmt.Errorf("reading APIService %s through %s: %w", s.name, kubeconfig, err)
		default:
			s.registered = true
			switch _, err := disc.RESTClient().Get().AbsPath("/apis", gv.Group, gv.Version).DoRaw(ctx); {
			case err == nil:
				s.served = true
			case !apierrors.IsNotFound(err):
				return nil, fmt.Errorf("reading /apis/%s through %s: %w", gv, kubeconfig, err)
			}
		}
		states = append(states, s)
	}
	return states, nil
}

// addAPIServiceStates judges the APIServices of ours for a rollback. Stock's aggregator
// deletes them at its start, so after a rolling rollback the last stock start has removed
// them; a member of ours removed instead of swapped back leaves them pointing at nothing,
// and legacy discovery (/apis) then fails for every client that uses it.
func (r *PreflightReport) addAPIServiceStates(states []apiServiceState) {
	for _, s := range states {
		switch {
		case !s.registered:
		case s.served:
			r.Notes = append(r.Notes, fmt.Sprintf("APIService %s is served by the API server that answered, a Portcullis one: once every API server runs stock, the last one's start deletes it; if a Portcullis API server is removed rather than swapped back, delete it then (kubectl delete apiservice %s)", s.name, s.name))
		default:
			r.problem("APIService %s points at nothing on the API server that answered (stock serves nothing there): once every API server runs stock, legacy discovery (/apis) fails for every client that reads it (kubectl api-resources, clients before Kubernetes 1.30, controllers that list every resource); delete it: kubectl delete apiservice %s. While a Portcullis API server still runs, a stock one answers this way: check again once every API server runs stock", s.name, s.name)
		}
	}
}
