package readiness

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	dynamicfake "k8s.io/client-go/dynamic/fake"
)

// TestWatchSnapshot: ready once the handler has loaded what was listed, each object
// transformed once; a later change loads again.
func TestWatchSnapshot(t *testing.T) {
	resource := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	widget := func(name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("example.com/v1")
		u.SetKind("Widget")
		u.SetName(name)
		return u
	}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{resource: "WidgetList"}, widget("a"), widget("b"))
	var mu sync.Mutex
	var loaded []string
	drained := make(chan struct{})
	defer close(drained)
	ready, err := WatchSnapshot(client, resource, func(obj any) (any, error) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "transformed " + u.GetName()}}, nil
		}
		return obj, nil
	}, drained, func(objs []any) {
		names := make([]string, 0, len(objs))
		for _, obj := range objs {
			names = append(names, obj.(*metav1.PartialObjectMetadata).Name)
		}
		slices.Sort(names)
		mu.Lock()
		loaded = names
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	if !Wait(context.Background(), ready, time.Minute) {
		t.Fatal("never ready")
	}
	mu.Lock()
	got := slices.Clone(loaded)
	mu.Unlock()
	if want := []string{"transformed a", "transformed b"}; !slices.Equal(got, want) {
		t.Fatalf("ready with %v loaded, want %v", got, want)
	}
	if _, err := client.Resource(resource).Create(context.Background(), widget("c"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return len(loaded) == 3, nil
	})
	if err != nil {
		t.Fatalf("the new object was never loaded: %v", loaded)
	}
}
