package apiserver

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/portcullis-k8s/portcullis/test/integration/framework"
)

// deployedPlugins is the --enable-admission-plugins value of the deploy kit: the kubeadm
// ClusterConfiguration fragment's, which the systemd environment file must repeat.
func deployedPlugins(t *testing.T) string {
	t.Helper()
	root := framework.RepoRoot(t)
	var fragment struct {
		APIServer struct {
			ExtraArgs []struct{ Name, Value string } `json:"extraArgs"`
		} `json:"apiServer"`
	}
	data, err := os.ReadFile(filepath.Join(root, kitKubeadmConfig))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &fragment); err != nil {
		t.Fatal(err)
	}
	kubeadm := ""
	for _, a := range fragment.APIServer.ExtraArgs {
		if a.Name == "enable-admission-plugins" {
			kubeadm = a.Value
		}
	}
	systemd := environmentFile(t, filepath.Join(root, "build/deploy/systemd/kube-apiserver.env"))["ENABLE_ADMISSION_PLUGINS"]
	if kubeadm == "" || kubeadm != systemd {
		t.Fatalf("the kubeadm fragment enables %q and the systemd environment file %q: the deploy kit must enable the same plugins", kubeadm, systemd)
	}
	return kubeadm
}

// TestDayOne swaps the deploy kit's configuration (its plugins and admission configuration
// file, with kubeadm's own flags) into a cluster holding ordinary workloads: nothing that
// stock admits is refused; the warnings and the audit log name what would be.
func TestDayOne(t *testing.T) {
	bins := framework.FindBinaries(t)
	etcd := framework.StartEtcd(t, bins.Etcd)
	ctx := context.Background()
	auditLog := filepath.Join(t.TempDir(), "audit.log")
	admissionConfig := filepath.Join(t.TempDir(), "admission-config.yaml")
	data, err := os.ReadFile(filepath.Join(framework.RepoRoot(t), kitAdmission))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(admissionConfig, data, 0o600); err != nil {
		t.Fatal(err)
	}
	server := framework.StartAPIServer(t, bins.APIServer, etcd, "--etcd-prefix=/day-one",
		"--allow-privileged=true", // kubeadm's
		"--enable-admission-plugins="+deployedPlugins(t), "--admission-control-config-file="+admissionConfig,
		"--audit-policy-file="+auditPolicy(t), "--audit-log-path="+auditLog)
	warnings := &framework.WarningRecorder{}
	config := rest.CopyConfig(server.Config)
	config.WarningHandler = warnings
	client := kubernetes.NewForConfigOrDie(config)
	ns := namespace(t, server.Client)
	// The service account kube-controller-manager would have made in kube-system.
	if _, err := server.Client.CoreV1().ServiceAccounts(metav1.NamespaceSystem).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}

	privileged := func(p *corev1.Pod) {
		p.Namespace = metav1.NamespaceSystem
		p.Spec.HostNetwork, p.Spec.HostPID = true, true
		p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr(true)}
	}
	workloads := []struct {
		name   string
		mutate func(*corev1.Pod)
		// wouldDeny names the plugins that would refuse the pod.
		wouldDeny []string
	}{
		{name: "plain"},
		{name: "runs-as-user-with-fs-group", wouldDeny: []string{"SecurityContextDeny"}, mutate: func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr(int64(1000)), FSGroup: ptr(int64(2000)), SupplementalGroups: []int64{3000}}
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: ptr(int64(1000)), RunAsNonRoot: ptr(true)}
		}},
		{name: "selinux", wouldDeny: []string{"SecurityContextDeny"}, mutate: func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{SELinuxOptions: &corev1.SELinuxOptions{Level: "s0:c123,c456"}}
		}},
		{name: "node-agent", mutate: privileged},
	}
	for _, w := range workloads {
		t.Run("create "+w.name, func(t *testing.T) {
			pod := podWith(w.mutate)
			pod.Name = w.name
			namespace := ns
			if pod.Namespace != "" {
				namespace = pod.Namespace
			}
			warnings.Take()
			if _, err := client.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				t.Fatalf("refused on day one: %v", err)
			}
			checkWouldDeny(t, warnings.Take(), w.wouldDeny)
		})
	}

	t.Run("exec into the node agent", func(t *testing.T) {
		warnings.Take()
		err := connect(ctx, client, metav1.NamespaceSystem, "node-agent", "exec")
		// Admission passed; what follows fails because no node runs the pod.
		if err == nil || apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "host assigned") {
			t.Fatalf("want the missing-node error after admission, got %v", err)
		}
		checkWouldDeny(t, warnings.Take(), []string{"DenyEscalatingExec", "DenyExecOnPrivileged"})
	})

	t.Run("the audit log names what would be refused", func(t *testing.T) {
		for _, plugin := range []string{"SecurityContextDeny", "DenyEscalatingExec", "DenyExecOnPrivileged"} {
			framework.WaitForFileContaining(t, auditLog, strings.ToLower(plugin)+".admission.portcullis.io/would-deny")
		}
	})

	// docs/troubleshooting.md's off switch, with the day-one admission config left as it is:
	// its enforcementModes still name the plugin.
	t.Run("taking a plugin's name out of the flags turns it off; its enforcement mode is ignored with a warning", func(t *testing.T) {
		plugins := slices.DeleteFunc(strings.Split(deployedPlugins(t), ","), func(p string) bool { return p == "SecurityContextDeny" })
		off := framework.StartAPIServer(t, bins.APIServer, etcd, "--etcd-prefix=/day-one-off", "--allow-privileged=true",
			"--enable-admission-plugins="+strings.Join(plugins, ","), "--admission-control-config-file="+admissionConfig)
		framework.WaitForFileContaining(t, off.LogFile, `the enforcement mode of plugin "SecurityContextDeny" is ignored: the plugin is not enabled`)
		offWarnings := &framework.WarningRecorder{}
		config := rest.CopyConfig(off.Config)
		config.WarningHandler = offWarnings
		offClient := kubernetes.NewForConfigOrDie(config)
		ns := namespace(t, off.Client)
		pod := podWith(workloads[1].mutate)
		if _, err := offClient.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		checkWouldDeny(t, offWarnings.Take(), nil)
	})
}

// checkWouldDeny holds a request's warnings to the plugins that would have refused it, in
// enforcement mode Warn, and to nothing else of ours.
func checkWouldDeny(t *testing.T, warnings, plugins []string) {
	t.Helper()
	var got []string
	for _, w := range warnings {
		if plugin, _, ok := strings.Cut(w, " would deny this request (enforcement mode Warn"); ok {
			got = append(got, plugin)
		}
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(plugins))
	if !slices.Equal(got, want) {
		t.Errorf("warnings name %q as would-deny, want %q; all warnings: %q", got, want, warnings)
	}
}
