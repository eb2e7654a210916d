package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// measureLists fills a namespace with opts.ListPods pods, then times opts.Lists consistent
// LISTs of them (what `kubectl get pods` sends; the server answers from its watch cache),
// after two untimed ones. The body is read but not decoded, so the client's CPU stays out.
func measureLists(ctx context.Context, server *apiServer, clients []kubernetes.Interface, opts DropInOptions) (*Latencies, time.Duration, error) {
	const namespace = "drop-in-list"
	if err := loadNamespace(ctx, server.client, namespace); err != nil {
		return nil, 0, err
	}
	fill := createLoad{clients: clients, namespace: namespace, namePrefix: "listed", count: opts.ListPods, timeout: opts.Load.Timeout}
	if _, err := fill.run(ctx); err != nil {
		return nil, 0, fmt.Errorf("creating the pods to list: %w", err)
	}
	list := func() (time.Duration, error) {
		sent := time.Now()
		body, err := server.client.CoreV1().RESTClient().Get().Namespace(namespace).Resource("pods").DoRaw(ctx)
		if err != nil {
			return 0, fmt.Errorf("listing the pods of %s: %w", namespace, err)
		}
		if len(body) == 0 {
			return 0, fmt.Errorf("listing the pods of %s: an empty body", namespace)
		}
		return time.Since(sent), nil
	}
	for range 2 {
		if _, err := list(); err != nil {
			return nil, 0, err
		}
	}
	samples := make([]time.Duration, 0, opts.Lists)
	cpu, err := server.cpuDuring(func() error {
		for range opts.Lists {
			took, err := list()
			if err != nil {
				return err
			}
			samples = append(samples, took)
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	return newLatencies(samples), cpu, nil
}

// measureWatchFanOut opens opts.Watchers watches on an empty namespace's pods, spread over
// the clients' connections, creates opts.WatchCreates pods there and times how long it takes
// until every watch has seen every create.
func measureWatchFanOut(ctx context.Context, server *apiServer, clients []kubernetes.Interface, opts DropInOptions) (delivered, cpu time.Duration, err error) {
	const namespace = "drop-in-watch"
	if err := loadNamespace(ctx, server.client, namespace); err != nil {
		return 0, 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Load.Timeout)
	defer cancel()
	// Watch from the namespace's current state, so that no watch starts with a replay.
	list, err := server.client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, 0, err
	}
	watches := make([]watch.Interface, 0, opts.Watchers)
	defer func() {
		for _, w := range watches {
			w.Stop()
		}
	}()
	for i := range opts.Watchers {
		w, err := clients[i%len(clients)].CoreV1().Pods(namespace).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
		if err != nil {
			return 0, 0, fmt.Errorf("opening watch %d: %w", i+1, err)
		}
		watches = append(watches, w)
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		lastSeen time.Time
		errs     = make([]error, len(watches))
	)
	started := time.Now()
	cpu, err = server.cpuDuring(func() error {
		for i, w := range watches {
			wg.Add(1)
			go func() {
				defer wg.Done()
				seen := 0
				for seen < opts.WatchCreates {
					event, ok := <-w.ResultChan()
					if !ok {
						errs[i] = fmt.Errorf("watch %d ended after %d of %d events (%v)", i+1, seen, opts.WatchCreates, ctx.Err())
						return
					}
					if event.Type == watch.Added {
						seen++
					}
				}
				now := time.Now()
				mu.Lock()
				if now.After(lastSeen) {
					lastSeen = now
				}
				mu.Unlock()
			}()
		}
		creates := createLoad{clients: clients, namespace: namespace, namePrefix: "watched", count: opts.WatchCreates, timeout: opts.Load.Timeout}
		_, err := creates.run(ctx)
		if err != nil {
			cancel() // ends the watches, so that the wait below returns
		}
		wg.Wait()
		return errors.Join(append([]error{err}, errs...)...)
	})
	if err != nil {
		return 0, 0, fmt.Errorf("watch fan-out: %w", err)
	}
	return lastSeen.Sub(started), cpu, nil
}
