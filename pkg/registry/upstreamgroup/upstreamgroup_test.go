package upstreamgroup

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	controlplaneapiserver "k8s.io/kubernetes/pkg/controlplane/apiserver"
)

var (
	upstreamV1  = schema.GroupVersionResource{Group: "example.io", Version: "v1", Resource: "widgets"}
	upstreamOld = schema.GroupVersionResource{Group: "example.io", Version: "v1alpha1", Resource: "gadgets"}
	ours        = schema.GroupVersionResource{Group: "example.io", Version: "v1alpha1", Resource: "gizmos"}
	elsewhere   = schema.GroupVersionResource{Group: "other.io", Version: "v1", Resource: "things"}
)

// fakeUpstream serves the resources of its group that the configuration it is given
// enables, as upstream's providers do, and records that configuration.
type fakeUpstream struct {
	group     string
	resources []schema.GroupVersionResource
	seen      *serverstorage.APIResourceConfigSource
}

func (f fakeUpstream) GroupName() string { return f.group }

func (f fakeUpstream) NewRESTStorage(config serverstorage.APIResourceConfigSource, _ generic.RESTOptionsGetter) (genericapiserver.APIGroupInfo, error) {
	if f.seen != nil {
		*f.seen = config
	}
	info := genericapiserver.APIGroupInfo{VersionedResourcesStorageMap: map[string]map[string]rest.Storage{}}
	for _, r := range f.resources {
		if !config.ResourceEnabled(r) {
			continue
		}
		if info.VersionedResourcesStorageMap[r.Version] == nil {
			info.VersionedResourcesStorageMap[r.Version] = map[string]rest.Storage{}
		}
		info.VersionedResourcesStorageMap[r.Version][r.Resource] = nil
	}
	return info, nil
}

func config(enabled ...schema.GroupVersionResource) *serverstorage.ResourceConfig {
	c := serverstorage.NewResourceConfig()
	for _, r := range enabled {
		c.EnableResources(r)
	}
	return c
}

func addition(upstream fakeUpstream, resources ...schema.GroupVersionResource) Addition {
	a := Addition{Group: upstream.group, Upstream: func(UpstreamInputs) controlplaneapiserver.RESTStorageProvider { return upstream }}
	for _, r := range resources {
		a.Resources = append(a.Resources, Resource{GroupVersionResource: r, NewStorage: func(generic.RESTOptionsGetter) (rest.Storage, error) { return nil, nil }})
	}
	return a
}

func served(t *testing.T, info genericapiserver.APIGroupInfo) []string {
	t.Helper()
	var out []string
	for version, resources := range info.VersionedResourcesStorageMap {
		for resource := range resources {
			out = append(out, version+"/"+resource)
		}
	}
	slices.Sort(out)
	return out
}

func TestProviderServesUpstreamsPartAndOurs(t *testing.T) {
	upstream := fakeUpstream{group: "example.io", resources: []schema.GroupVersionResource{upstreamV1, upstreamOld}}
	for _, tc := range []struct {
		name    string
		enabled []schema.GroupVersionResource
		want    []string
	}{
		{name: "stock's default: upstream's v1, ours in a version upstream does not serve", enabled: []schema.GroupVersionResource{upstreamV1}, want: []string{"v1/widgets", "v1alpha1/gizmos"}},
		{name: "upstream's alpha turned on by its flag: beside ours in the same version", enabled: []schema.GroupVersionResource{upstreamV1, upstreamOld}, want: []string{"v1/widgets", "v1alpha1/gadgets", "v1alpha1/gizmos"}},
		{name: "upstream's group turned off: ours alone", want: []string{"v1alpha1/gizmos"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			real := config(tc.enabled...)
			a := addition(upstream, ours)
			// The server passes the hiding configuration; the provider must use the real one.
			info, err := a.Provider(real, UpstreamInputs{}).NewRESTStorage(HideUpstream(real, a), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := served(t, info); !slices.Equal(got, tc.want) {
				t.Errorf("served %v, want %v", got, tc.want)
			}
		})
	}
}

func TestHideUpstream(t *testing.T) {
	real := config(upstreamV1, upstreamOld, ours, elsewhere)
	a := addition(fakeUpstream{group: "example.io"}, ours)
	hidden := HideUpstream(real, a)
	for r, want := range map[schema.GroupVersionResource]bool{upstreamV1: false, upstreamOld: false, ours: true, elsewhere: true} {
		if got := hidden.ResourceEnabled(r); got != want {
			t.Errorf("ResourceEnabled(%v) = %v, want %v", r, got, want)
		}
	}
	// Other questions are the real configuration's: the group is still installed.
	if !hidden.AnyResourceForGroupEnabled("example.io") {
		t.Error("the group looks disabled: the server would skip our provider")
	}
	// Upstream's provider, shown the hiding configuration, serves nothing.
	info, err := fakeUpstream{group: "example.io", resources: []schema.GroupVersionResource{upstreamV1, upstreamOld}}.NewRESTStorage(hidden, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := served(t, info); len(got) != 0 {
		t.Errorf("upstream's provider serves %v", got)
	}
}

func TestProviderRefusesAResourceUpstreamServes(t *testing.T) {
	upstream := fakeUpstream{group: "example.io", resources: []schema.GroupVersionResource{upstreamOld}}
	_, err := addition(upstream, upstreamOld).Provider(config(upstreamOld), UpstreamInputs{}).NewRESTStorage(nil, nil)
	if err == nil || !strings.Contains(err.Error(), "served by upstream too") {
		t.Errorf("got %v, want an error saying upstream serves it too", err)
	}
}

func TestProviderPassesOnAStorageError(t *testing.T) {
	a := addition(fakeUpstream{group: "example.io"})
	broken := errors.New("no etcd")
	a.Resources = []Resource{{GroupVersionResource: ours, NewStorage: func(generic.RESTOptionsGetter) (rest.Storage, error) { return nil, broken }}}
	if _, err := a.Provider(config(), UpstreamInputs{}).NewRESTStorage(nil, nil); !errors.Is(err, broken) || !strings.Contains(err.Error(), "gizmos.example.io") {
		t.Errorf("got %v, want the storage's error naming the resource", err)
	}
}

func TestValidate(t *testing.T) {
	if err := addition(fakeUpstream{group: "example.io"}, ours).Validate(); err != nil {
		t.Errorf("a valid addition: %v", err)
	}
	if err := addition(fakeUpstream{group: "example.io"}, elsewhere).Validate(); err == nil {
		t.Error("a resource of another group is accepted")
	}
	a := addition(fakeUpstream{group: "other.io"}, ours)
	a.Group = "example.io"
	if err := a.Validate(); err == nil {
		t.Error("an upstream provider of another group is accepted")
	}
}
