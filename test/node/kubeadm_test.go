package node_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/portcullis-k8s/portcullis/test/docs"
	"github.com/portcullis-k8s/portcullis/test/node"
)

// initConfiguration is what the node's kubeadm init is given: the cluster as an operator
// without systemd and on cgroup v1 sets it up (docs/node.md). The kubelet's settings go to
// the cluster's kubelet-config ConfigMap, which every later kubeadm upgrade reads.
// apiServerArgs, each name=value, are the API server's extraArgs.
func initConfiguration(kubernetesVersion string, apiServerArgs ...string) string {
	var extraArgs strings.Builder
	if len(apiServerArgs) > 0 {
		extraArgs.WriteString("apiServer:\n  extraArgs:\n")
		for _, arg := range apiServerArgs {
			name, value, _ := strings.Cut(arg, "=")
			fmt.Fprintf(&extraArgs, "  - name: %s\n    value: %q\n", name, value)
		}
	}
	return `apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
nodeRegistration:
  # cgroup v1 (the kubelet runs on it with failCgroupV1: false).
  ignorePreflightErrors: [SystemVerification]
# A slow machine: the kubelet here admits the static pods about 10 s apart, and the API server
# may answer after kubeadm's default minute for its calls. (Not
# controlPlaneComponentHealthCheck: kubeadm derives the static pods' startup probes from it,
# and the guide's render, without it, would differ from the running manifest.)
timeouts:
  kubernetesAPICall: 5m0s
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: ` + kubernetesVersion + `
` + extraArgs.String() + `networking:
  podSubnet: ` + node.PodSubnet + `
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
# The node's pods' cgroups, beneath a root of the node's own (removed after).
cgroupRoot: ` + node.CgroupRoot + `
failCgroupV1: false
failSwapOn: false
# Without CAP_SYS_RESOURCE nothing may lower an oom_score_adj below 0.
oomScoreAdj: 0
# The node shares the machine's disk with the build: as kind does, no eviction and no image
# garbage collection on disk usage, which would taint the node (DiskPressure) or remove the
# images built here, which no registry can give back.
evictionHard:
  memory.available: 100Mi
  nodefs.available: "0%"
  nodefs.inodesFree: "0%"
  imagefs.available: "0%"
imageGCHighThresholdPercent: 100
`
}

// kubeadmInit installs a stock control plane of the node's release on the node with kubeadm's
// CLI, without kube-proxy (docs/node.md), and with kubeadm's DNS addon only with coreDNS
// (its pods run, but are not Ready: they reach the API server through its Service, which
// nothing routes without kube-proxy). The control-plane taint is removed so that ordinary pods
// run on it. apiServerArgs (name=value) are the API server's flags of the cluster's own.
func kubeadmInit(t *testing.T, n *node.Node, coreDNS bool, apiServerArgs ...string) {
	t.Helper()
	node.WriteFile(t, filepath.Join(n.Dir, "root", "kubeadm-init.yaml"), initConfiguration(n.Release.KubernetesVersion, apiServerArgs...))
	skip := "addon/kube-proxy"
	if !coreDNS {
		skip += ",addon/coredns"
	}
	n.Run(t, "kubeadm init --config /root/kubeadm-init.yaml --skip-phases="+skip)
	n.Run(t, "kubectl taint nodes --all node-role.kubernetes.io/control-plane-")
	client := n.Client(t)
	n.WaitFor(t, "the node Ready", 3*time.Minute, func() error {
		nodes, err := client.CoreV1().Nodes().List(node.Context(t), metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, no := range nodes.Items {
			for _, c := range no.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					return nil
				}
			}
		}
		return fmt.Errorf("no node is Ready: %d nodes", len(nodes.Items))
	})
}

// waitForAPIServer waits until the kube-apiserver mirror pod runs image, Running and Ready,
// and the server it runs reports gitVersion.
func waitForAPIServer(t *testing.T, n *node.Node, image, gitVersion string) {
	t.Helper()
	n.WaitFor(t, "kube-apiserver running "+image, 5*time.Minute, func() error {
		client := n.Client(t)
		info, err := client.Discovery().ServerVersion()
		if err != nil {
			return err
		}
		if info.GitVersion != gitVersion {
			return fmt.Errorf("the server reports %s, want %s", info.GitVersion, gitVersion)
		}
		pod, err := client.CoreV1().Pods("kube-system").Get(node.Context(t), "kube-apiserver-"+node.Hostname, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(pod.Spec.Containers) != 1 || pod.Spec.Containers[0].Image != image {
			return fmt.Errorf("the mirror pod runs %v", pod.Spec.Containers)
		}
		if pod.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("the mirror pod is %s", pod.Status.Phase)
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("the mirror pod is not Ready: %v", pod.Status.Conditions)
	})
}

// manifestImage is the image of the node's kube-apiserver manifest.
func manifestImage(t *testing.T, n *node.Node) string {
	t.Helper()
	var pod corev1.Pod
	if err := yaml.Unmarshal(docs.ReadFile(t, filepath.Join(n.Dir, "etc-kubernetes", "manifests", "kube-apiserver.yaml")), &pod); err != nil {
		t.Fatal(err)
	}
	return pod.Spec.Containers[0].Image
}

// apiServerFlags are the --name=value flags of a kube-apiserver manifest's command.
func apiServerFlags(t *testing.T, manifest string) map[string]string {
	t.Helper()
	var pod corev1.Pod
	if err := yaml.Unmarshal(docs.ReadFile(t, manifest), &pod); err != nil {
		t.Fatal(err)
	}
	flags := map[string]string{}
	for _, arg := range pod.Spec.Containers[0].Command {
		if name, value, ok := strings.Cut(strings.TrimPrefix(arg, "--"), "="); ok {
			flags[name] = value
		}
	}
	return flags
}

// clusterConfiguration is the ClusterConfiguration kubeadm keeps in the cluster.
func clusterConfiguration(t *testing.T, n *node.Node) string {
	t.Helper()
	cm, err := n.Client(t).CoreV1().ConfigMaps("kube-system").Get(node.Context(t), "kubeadm-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm.Data["ClusterConfiguration"]
}
