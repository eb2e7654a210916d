package soak

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// BadInputRun is the malformed-request table's answers on one binary.
type BadInputRun struct {
	Results []BadInputResult
	Panics  PanicLines
}

// Clear counts the cases answered with a clear 4xx.
func (r *BadInputRun) Clear() int {
	n := 0
	for _, res := range r.Results {
		if res.Clear() {
			n++
		}
	}
	return n
}

// byName indexes the results by case name.
func (r *BadInputRun) byName() map[string]BadInputResult {
	out := make(map[string]BadInputResult, len(r.Results))
	for _, res := range r.Results {
		out[res.Case.Name] = res
	}
	return out
}

// Verdicts of a case on ours, against stock.
const (
	verdictClear    = "clear 4xx"
	verdictUpstream = "upstream's answer, stock's too"
	verdictOurs     = "**not clear, ours only**"
)

// badInputVerdict judges our answer to a case: a clear 4xx; a 5xx (or none) that stock gives
// to the same request, or to its twin on a resource stock serves (upstream's code answers
// both); or a failure of ours.
func badInputVerdict(ours BadInputResult, stock map[string]BadInputResult) (verdict string, stockAnswer BadInputResult, compared bool) {
	name := ours.Case.Name
	if ours.Case.Twin != "" {
		name = ours.Case.Twin
	}
	stockAnswer, compared = stock[name]
	switch {
	case ours.Clear():
		return verdictClear, stockAnswer, compared
	case compared && ours.SameFailureAs(stockAnswer):
		return verdictUpstream, stockAnswer, compared
	default:
		return verdictOurs, stockAnswer, compared
	}
}

// badInputFailures lists the cases ours answers unclearly where stock does not, and the
// requests ours panicked serving that stock did not panic on.
func badInputFailures(ours, stock *BadInputRun) []string {
	if ours == nil {
		return nil
	}
	stockByName := map[string]BadInputResult{}
	stockPanics := map[string]int{}
	if stock != nil {
		stockByName, stockPanics = stock.byName(), stock.Panics.Requests
	}
	var out []string
	for _, res := range ours.Results {
		if verdict, _, _ := badInputVerdict(res, stockByName); verdict == verdictOurs {
			out = append(out, fmt.Sprintf("bad inputs, ours: %s", res))
		}
	}
	for _, request := range sortedKeys(ours.Panics.Requests) {
		if stockPanics[request] == 0 {
			out = append(out, fmt.Sprintf("bad inputs, ours: panicked serving %s, stock did not", request))
		}
	}
	recovered := 0
	for _, n := range ours.Panics.Requests {
		recovered += n
	}
	if ours.Panics.Count > recovered {
		out = append(out, fmt.Sprintf("bad inputs, ours: %d panics in the log, %d of them serving a request", ours.Panics.Count, recovered))
	}
	return out
}

// runBadInputs sends the table to a fresh server of binary, as the admin, and scans its
// log for panics. The table's privileged pods need --allow-privileged. Stock gets the
// PodPreset CRD, so that the custom-resource cases take the same path on both.
func (e *environment) runBadInputs(ctx context.Context, binary string) (run *BadInputRun, err error) {
	dir := filepath.Join(e.opts.WorkDir, "badinputs-"+binary)
	etcd, err := startEtcdMember(ctx, e.etcdBinary, filepath.Join(dir, "etcd"), false)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, etcd.stop()) }()
	server, err := startAPIServer(ctx, e.serverSetup(binary, etcd.clientURL, "--allow-privileged=true"), filepath.Join(dir, "apiserver"))
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, server.stop()) }()
	if binary == Stock {
		if err := InstallPodPresetCRD(ctx, server.admin); err != nil {
			return nil, err
		}
	}
	const ns = "badinputs"
	if err := PrepareBadInputs(ctx, server.client, ns); err != nil {
		return nil, err
	}
	if err := WaitForBadInputWebhooks(ctx, server.client, ns); err != nil {
		return nil, err
	}
	results, err := RunBadInputs(ctx, server.admin, BadInputs(ns))
	if err != nil {
		return nil, err
	}
	run = &BadInputRun{Results: results}
	run.Panics, err = FindPanics(server.logFile())
	return run, err
}

// WaitForBadInputWebhooks waits until the server calls the webhooks PrepareBadInputs
// configured for namespace's pods (served nowhere, failing open), read from the server's
// own metrics, so that the cases that reach admission go through the webhook dispatch.
func WaitForBadInputWebhooks(ctx context.Context, client kubernetes.Interface, namespace string) error {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "badinput-dry-run"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}},
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if _, err := client.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			return false, nil
		}
		metrics, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
		if err != nil {
			return false, nil
		}
		for _, step := range []string{"admit", "validating"} {
			series := fmt.Sprintf(`apiserver_admission_webhook_fail_open_count{name="hook-0.badinput.portcullis.io",type=%q}`, step)
			if !strings.Contains(string(metrics), series) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("the server does not call the bad-input webhooks within 30 s: %w", err)
	}
	return nil
}
