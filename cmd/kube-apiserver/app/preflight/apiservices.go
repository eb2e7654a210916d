package preflight

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	portcullisapi "github.com/portcullis-k8s/portcullis/pkg/apis/admission"
)

var apiServicesResource = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// apiServiceState is what the cluster has of the APIService of one version of ours.
type apiServiceState struct {
	name string
	// registered: the APIService exists. answered: the server that answered serves its
	// version; ours: with our resource in it (a server of ours), not only upstream's (a stock
	// server that turns the version on for upstream's own resources).
	registered, answered, ours bool
}

// apiServiceStates reads, through kubeconfig, the APIServices of the versions of ours and
// what the server that answers serves in each (two reads per version, nothing written).
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
	for _, resource := range portcullisapi.ServableResources() {
		gv := resource.GroupVersion()
		s := apiServiceState{name: gv.Version + "." + gv.Group}
		switch _, err := dyn.Resource(apiServicesResource).Get(ctx, s.name, metav1.GetOptions{}); {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, fmt.Errorf("reading APIService %s through %s: %w", s.name, kubeconfig, err)
		default:
			s.registered = true
			switch list, err := disc.ServerResourcesForGroupVersion(gv.String()); {
			case err == nil:
				s.answered = true
				s.ours = slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == resource.Resource })
			case !apierrors.IsNotFound(err):
				return nil, fmt.Errorf("reading /apis/%s through %s: %w", gv, kubeconfig, err)
			}
		}
		states = append(states, s)
	}
	return states, nil
}

// addAPIServiceStates judges the APIServices of ours for a rollback. Stock's aggregator
// deletes them at its start, so a rollback that swaps each server in place ends with none:
// the last stock start deletes them. One that adds stock servers before removing ours (a
// surge), or removes a server of ours without a stock start after it, leaves them pointing
// at nothing, and legacy discovery (/apis) then reports their versions failed to every client
// that reads it. Asked through a load balancer during a rollback, a stock server answers as
// if they were left behind: judge (a problem) only when the check runs alone, once every API
// server runs stock; beside a manifest or unit, say it as a warning.
func (r *PreflightReport) addAPIServiceStates(states []apiServiceState, alone bool) {
	for _, s := range states {
		switch {
		case !s.registered:
		case s.ours:
			r.Notes = append(r.Notes, fmt.Sprintf("APIService %s is served by the API server that answered, a Portcullis one; once every API server runs stock, check again: a stock start deletes it, unless a Portcullis server still ran then (a surge rollout)", s.name))
		case s.answered:
			r.Notes = append(r.Notes, fmt.Sprintf("APIService %s is for upstream's own resources of its version, which the API server that answered turns on (--runtime-config): stock's, leave it", s.name))
		case alone:
			r.problem("APIService %s points at nothing: the API server that answered serves nothing in its version, and legacy discovery (/apis) reports the version failed to every client that reads it (clients before Kubernetes 1.30, or any with aggregated discovery off). Delete it (kubectl delete apiservice %s), or restart any one stock API server: its start deletes the APIServices of ours. (While a Portcullis API server still runs, a stock one answers this way: check once every API server runs stock.)", s.name, s.name)
		default:
			r.Warnings = append(r.Warnings, fmt.Sprintf("APIService %s: the API server that answered serves nothing in its version: a stock server during a rolling rollback, or an APIService left behind; once every API server runs stock, check with preflight --rollback --kubeconfig alone", s.name))
		}
	}
}
