package soak

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
)

const (
	// etcdPrefix is kube-apiserver's default --etcd-prefix.
	etcdPrefix = "/registry"
	// pageSize is how many keys or objects one read returns; maxPages bounds the reads.
	pageSize = 500
	maxPages = 1000
	// verifyTimeout bounds the whole check of one run.
	verifyTimeout = 3 * time.Minute
	// pspAnnotation is what PodSecurityPolicy writes on a pod it admitted: the policy's name.
	pspAnnotation = "kubernetes.io/psp"
)

// Verification is what reading the pods back found.
type Verification struct {
	// InEtcd and Listed count the run's pods stored in etcd and listed through the server.
	InEtcd, Listed int
	// Lost counts acknowledged pods absent from etcd or stored with another uid; it must be 0.
	Lost int
	// LostNames names some of them.
	LostNames []string
	// MissingFromList counts acknowledged pods the server's list lacks.
	MissingFromList int
	// RefusedStored counts pods the server refused (a client error or a failed webhook call,
	// both answered before any write) that etcd holds anyway; it must be 0.
	RefusedStored int
	// FailedStored counts pods whose create failed otherwise (a timeout, a lost connection:
	// the outcome is unknown to the client) that etcd holds: allowed, and reported.
	FailedStored int
	// Unexpected counts pods of the run in etcd that no create sent could have written.
	Unexpected int
	// WithoutFailMutation counts acknowledged pods lacking the mutation of the Fail
	// mutating webhook, which every admitted pod passed through; it must be 0.
	WithoutFailMutation int
	// WithoutIgnoreMutation counts acknowledged pods lacking the Ignore mutating webhook's
	// mutation: 0 unless that webhook was down, when the server rightly skipped it.
	WithoutIgnoreMutation int
	// WithoutPolicy counts, on ours, acknowledged pods without PodSecurityPolicy's
	// annotation; it must be 0.
	WithoutPolicy int
	// Undecodable counts values under the prefix that did not decode as pods.
	Undecodable int
}

// OK reports whether nothing acknowledged was lost and nothing refused was stored.
func (v Verification) OK() bool {
	return v.Lost == 0 && v.RefusedStored == 0 && v.WithoutFailMutation == 0 && v.MissingFromList == 0 &&
		v.WithoutPolicy == 0 && v.Undecodable == 0 && v.Unexpected == 0
}

// etcdAccess says how to read etcd itself.
type etcdAccess struct {
	endpoints []string
	tls       *tls.Config // nil for plain http
}

// verify reads the run's pods from etcd with etcd's own client and through the server's
// list, and checks them against the outcomes. wantPolicy is true on ours, where
// PodSecurityPolicy admitted every pod.
func verify(ctx context.Context, etcd etcdAccess, client kubernetes.Interface, namespace string, load *LoadResult, wantPolicy bool) (Verification, error) {
	ctx, cancel := context.WithTimeout(ctx, verifyTimeout)
	defer cancel()
	stored, undecodable, err := readPodsFromEtcd(ctx, etcd, namespace)
	if err != nil {
		return Verification{}, err
	}
	listed, err := listPods(ctx, client, namespace)
	if err != nil {
		return Verification{}, err
	}
	return compare(load.Outcomes, stored, listed, undecodable, wantPolicy), nil
}

// compare checks the outcomes against the pods found in etcd and through the server, both
// by name.
func compare(outcomes []Outcome, stored map[string]*corev1.Pod, listed map[string]string, undecodable int, wantPolicy bool) Verification {
	v := Verification{InEtcd: len(stored), Listed: len(listed), Undecodable: undecodable}
	known := make(map[string]bool, len(outcomes))
	for _, o := range outcomes {
		if o.sent() {
			known[o.Name] = true
		}
		pod, inEtcd := stored[o.Name]
		switch {
		case o.Acked():
			if !inEtcd || string(pod.UID) != o.UID {
				v.Lost++
				if len(v.LostNames) < 10 {
					v.LostNames = append(v.LostNames, o.Name)
				}
				continue
			}
			if listed[o.Name] != o.UID {
				v.MissingFromList++
			}
			if pod.Annotations[mutatedByFail] != "true" {
				v.WithoutFailMutation++
			}
			if pod.Annotations[mutatedByIgnore] != "true" {
				v.WithoutIgnoreMutation++
			}
			if wantPolicy && pod.Annotations[pspAnnotation] == "" {
				v.WithoutPolicy++
			}
		case o.DefinitelyRefused() && inEtcd:
			v.RefusedStored++
		case o.sent() && inEtcd:
			v.FailedStored++
		}
	}
	for name := range stored {
		if !known[name] {
			v.Unexpected++
		}
	}
	return v
}

// readPodsFromEtcd reads every pod of namespace from etcd, under kube-apiserver's prefix,
// and decodes the stored protobuf.
func readPodsFromEtcd(ctx context.Context, access etcdAccess, namespace string) (map[string]*corev1.Pod, int, error) {
	client, err := clientv3.New(clientv3.Config{
		Endpoints: access.endpoints, TLS: access.tls, DialTimeout: 10 * time.Second,
		Logger: zap.NewNop(), Context: ctx,
	})
	if err != nil {
		return nil, 0, fmt.Errorf("connecting to etcd at %v: %w", access.endpoints, err)
	}
	defer client.Close()
	prefix := etcdPrefix + "/pods/" + namespace + "/"
	end := clientv3.GetPrefixRangeEnd(prefix)
	decoder := scheme.Codecs.UniversalDeserializer()
	pods := map[string]*corev1.Pod{}
	undecodable := 0
	key := prefix
	for page := 0; page < maxPages; page++ {
		resp, err := client.Get(ctx, key, clientv3.WithRange(end), clientv3.WithLimit(pageSize),
			clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
		if err != nil {
			return nil, 0, fmt.Errorf("reading %s from etcd: %w", prefix, err)
		}
		for _, kv := range resp.Kvs {
			obj, _, err := decoder.Decode(kv.Value, nil, nil)
			pod, ok := obj.(*corev1.Pod)
			if err != nil || !ok {
				undecodable++
				continue
			}
			pods[pod.Name] = pod
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return pods, undecodable, nil
		}
		key = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	return nil, 0, fmt.Errorf("reading %s from etcd: more than %d pages", prefix, maxPages)
}

// listPods lists namespace's pods through the server, page by page: name to uid.
func listPods(ctx context.Context, client kubernetes.Interface, namespace string) (map[string]string, error) {
	pods := map[string]string{}
	opts := metav1.ListOptions{Limit: pageSize}
	for page := 0; page < maxPages; page++ {
		list, err := client.CoreV1().Pods(namespace).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("listing the pods of %s: %w", namespace, err)
		}
		for _, p := range list.Items {
			pods[p.Name] = string(p.UID)
		}
		if list.Continue == "" {
			return pods, nil
		}
		opts.Continue = list.Continue
	}
	return nil, fmt.Errorf("listing the pods of %s: more than %d pages", namespace, maxPages)
}
