package apiserver

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"

	"github.com/portcullis-k8s/portcullis/test/integration/framework"
)

// execTarget is a pod to exec into, and what each plugin must answer.
type execTarget struct {
	name   string
	mutate func(*corev1.Pod)
	// refusal per plugin: the 403 message, or "" when the request must pass admission.
	refusal map[string]string
}

const (
	hostNetworkRefusal = "cannot exec into or attach to a container using host network"
	hostPIDRefusal     = "cannot exec into or attach to a container using host pid"
	hostIPCRefusal     = "cannot exec into or attach to a container using host ipc"
	privilegedRefusal  = "cannot exec into or attach to a privileged container"
)

func privilegedContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{Privileged: ptr(true)}
}

var execTargets = []execTarget{
	{
		name:    "privileged",
		mutate:  func(p *corev1.Pod) { p.Spec.Containers[0].SecurityContext = privilegedContext() },
		refusal: map[string]string{"DenyEscalatingExec": privilegedRefusal, "DenyExecOnPrivileged": privilegedRefusal},
	},
	{
		name:    "host-pid",
		mutate:  func(p *corev1.Pod) { p.Spec.HostPID = true },
		refusal: map[string]string{"DenyEscalatingExec": hostPIDRefusal},
	},
	{
		name:    "host-network",
		mutate:  func(p *corev1.Pod) { p.Spec.HostNetwork = true },
		refusal: map[string]string{"DenyEscalatingExec": hostNetworkRefusal},
	},
	{
		name:    "host-ipc",
		mutate:  func(p *corev1.Pod) { p.Spec.HostIPC = true },
		refusal: map[string]string{"DenyEscalatingExec": hostIPCRefusal},
	},
	{
		name: "privileged-init-only",
		mutate: func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "registry.k8s.io/pause:3.10", SecurityContext: privilegedContext()}}
		},
		refusal: map[string]string{"DenyEscalatingExec": privilegedRefusal, "DenyExecOnPrivileged": privilegedRefusal},
	},
	{name: "plain", refusal: map[string]string{}},
}

// connect sends exec or attach to a pod, as kubectl's first request does.
func connect(ctx context.Context, client kubernetes.Interface, ns, pod, subresource string) error {
	req := client.CoreV1().RESTClient().Post().Namespace(ns).Resource("pods").Name(pod).SubResource(subresource).
		Param("container", "a").Param("stdout", "true")
	if subresource == "exec" {
		req = req.Param("command", "true")
	}
	return req.Do(ctx).Error()
}

func TestDenyExec(t *testing.T) {
	bins := framework.FindBinaries(t)
	etcd := framework.StartEtcd(t, bins.Etcd)
	ctx := context.Background()

	for _, plugin := range []string{"DenyEscalatingExec", "DenyExecOnPrivileged"} {
		t.Run(plugin, func(t *testing.T) {
			server := framework.StartAPIServer(t, bins.APIServer, etcd, "--etcd-prefix=/"+plugin,
				"--allow-privileged=true", "--enable-admission-plugins="+plugin)
			ns := namespace(t, server.Client)
			for _, target := range execTargets {
				pod := podWith(target.mutate)
				pod.Name = target.name
				if err := createPod(ctx, server.Client, ns, pod); err != nil {
					t.Fatalf("creating pod %s: %v", target.name, err)
				}
				for _, sub := range []string{"exec", "attach"} {
					t.Run(target.name+"/"+sub, func(t *testing.T) {
						err := connect(ctx, server.Client, ns, target.name, sub)
						if want := target.refusal[plugin]; want != "" {
							wantForbidden(t, err, want)
							return
						}
						// Admission passed; what follows fails because no node runs the pod.
						if err == nil {
							t.Fatal("exec into an unscheduled pod succeeded")
						}
						if apierrors.IsForbidden(err) || strings.Contains(err.Error(), "cannot exec into") {
							t.Fatalf("refused by admission: %v", err)
						}
						if !strings.Contains(err.Error(), "host assigned") {
							t.Errorf("want the missing-node error, got %v", err)
						}
					})
				}
			}

			t.Run("its decisions are in the admission metrics", func(t *testing.T) {
				metrics, err := server.Client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for _, rejected := range []string{"true", "false"} {
					series := fmt.Sprintf(`apiserver_admission_controller_admission_duration_seconds_count{name=%q,operation="CONNECT",rejected=%q,type="validate"}`, plugin, rejected)
					if !strings.Contains(string(metrics), series) {
						t.Errorf("/metrics has no %s", series)
					}
				}
			})
		})
	}
}
