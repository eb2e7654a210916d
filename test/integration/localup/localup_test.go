// Package localup tests `make run`'s program: a whole local control plane, started,
// used through its admin.kubeconfig, interrupted and started again.
package localup

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/portcullis-k8s/portcullis/test/integration/framework"
)

// readyBanner is the line local-up prints once everything serves, and summaryEnd the start
// of the last line of the summary it prints after it: a test reads the summary once that is
// there (the chains come from the server's log, read after the banner is written).
const (
	readyBanner = "Portcullis is running."
	summaryEnd  = "Press Ctrl-C to stop;"
)

// localUp is one run of the program.
type localUp struct {
	cmd    *exec.Cmd
	output *syncBuffer
	done   chan error
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type ports struct{ api, etcd, etcdPeer, kcm int }

func freePorts(t *testing.T) ports {
	return ports{framework.FreePort(t), framework.FreePort(t), framework.FreePort(t), framework.FreePort(t)}
}

func (p ports) env(runDir, binDir string) []string {
	return append(os.Environ(),
		"RUN_DIR="+runDir,
		"PORTCULLIS_BIN_DIR="+binDir,
		"API_PORT="+strconv.Itoa(p.api),
		"ETCD_PORT="+strconv.Itoa(p.etcd),
		"ETCD_PEER_PORT="+strconv.Itoa(p.etcdPeer),
		"KCM_PORT="+strconv.Itoa(p.kcm),
	)
}

func start(t *testing.T, bins framework.Binaries, env []string) *localUp {
	t.Helper()
	l := &localUp{cmd: exec.Command(bins.LocalUp), output: &syncBuffer{}, done: make(chan error, 1)}
	l.cmd.Env = env
	l.cmd.Stdout, l.cmd.Stderr = l.output, l.output
	if err := l.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { l.done <- l.cmd.Wait() }()
	t.Cleanup(func() {
		if l.cmd.ProcessState == nil {
			_ = l.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-l.done:
			case <-time.After(2 * time.Minute):
				_ = l.cmd.Process.Kill()
			}
		}
	})
	return l
}

// waitReady waits for the banner and the summary after it, failing if the program exits first.
func (l *localUp) waitReady(t *testing.T) {
	t.Helper()
	deadline := time.After(5 * time.Minute)
	for out := l.output.String(); !strings.Contains(out, readyBanner) || !strings.Contains(out, summaryEnd); out = l.output.String() {
		select {
		case err := <-l.done:
			l.done <- err
			t.Fatalf("local-up exited before it was ready (%v):\n%s", err, l.output.String())
		case <-deadline:
			t.Fatalf("local-up not ready within 5 minutes:\n%s", l.output.String())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// interrupt sends SIGINT, as Ctrl-C does, and waits for a clean exit.
func (l *localUp) interrupt(t *testing.T) {
	t.Helper()
	if err := l.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-l.done:
		if err != nil {
			t.Fatalf("local-up exited with %v after SIGINT:\n%s", err, l.output.String())
		}
	case <-time.After(3 * time.Minute):
		t.Fatalf("local-up did not exit within 3 minutes of SIGINT:\n%s", l.output.String())
	}
}

// processesUsing lists the processes whose command line mentions dir.
func processesUsing(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue // gone meanwhile
		}
		if strings.Contains(string(cmdline), dir) {
			found = append(found, e.Name()+": "+strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	return found
}

func client(t *testing.T, kubeconfig string) kubernetes.Interface {
	t.Helper()
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestLocalUp(t *testing.T) {
	bins := framework.FindBinaries(t)
	runDir := filepath.Join(t.TempDir(), "local")
	env := freePorts(t).env(runDir, bins.Dir)
	kubeconfig := filepath.Join(runDir, "admin.kubeconfig")
	ctx := context.Background()
	const namespace = "make-run-test"

	first := start(t, bins, env)
	first.waitReady(t)

	t.Run("prints how to use it", func(t *testing.T) {
		out := first.output.String()
		for _, want := range []string{
			"kubectl --kubeconfig " + kubeconfig + " get ns",
			filepath.Join(runDir, "logs") + "/",
			"SecurityContextDeny",
			"mutating:", "validating:",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("output does not show %q:\n%s", want, out)
			}
		}
	})

	t.Run("keys are private", func(t *testing.T) {
		keys, _ := filepath.Glob(filepath.Join(runDir, "pki", "*.key"))
		if len(keys) < 4 {
			t.Fatalf("found only %d keys: %v", len(keys), keys)
		}
		for _, key := range append(keys, kubeconfig) {
			info, err := os.Stat(key)
			if err != nil {
				t.Fatal(err)
			}
			if info.Mode().Perm() != 0o600 {
				t.Errorf("%s has mode %o, want 600", key, info.Mode().Perm())
			}
		}
	})

	t.Run("a namespace gets its default ServiceAccount and admits a pod", func(t *testing.T) {
		c := client(t, kubeconfig)
		if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// kube-controller-manager creates it; poll, as a client would.
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := c.CoreV1().ServiceAccounts(namespace).Get(ctx, "default", metav1.GetOptions{})
			return err == nil, nil
		})
		if err != nil {
			t.Fatalf("the default ServiceAccount never appeared: %v", err)
		}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.k8s.io/pause:3.10"}}},
		}
		if _, err := c.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("pod rejected: %v", err)
		}
	})

	// PodSecurityPolicy is enabled: the example policies and grants make run creates let the
	// pods that controllers create through, under the policy their namespace's service
	// accounts may use.
	t.Run("a deployment's pod is admitted under the example policies", func(t *testing.T) {
		c := client(t, kubeconfig)
		// baseline admits a plain pod unchanged, and comes first by name; a node agent on the
		// host network needs privileged, which only kube-system's service accounts may use.
		for _, tc := range []struct {
			namespace   string
			hostNetwork bool
			policy      string
		}{
			{namespace, false, "baseline"},
			{"kube-system", false, "baseline"},
			{"kube-system", true, "privileged"},
		} {
			labels := map[string]string{"app": fmt.Sprintf("first-deployment-%t", tc.hostNetwork)}
			deployment := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: labels["app"]}, Spec: appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
					HostNetwork: tc.hostNetwork,
					Containers:  []corev1.Container{{Name: "web", Image: "registry.k8s.io/pause:3.10"}}}},
			}}
			if _, err := c.AppsV1().Deployments(tc.namespace).Create(ctx, deployment, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			var pods *corev1.PodList
			err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
				var err error
				pods, err = c.CoreV1().Pods(tc.namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + labels["app"]})
				return err == nil && len(pods.Items) == 1, nil
			})
			if err != nil {
				t.Errorf("%s: the deployment's pod was never created: %v", tc.namespace, err)
				continue
			}
			if got := pods.Items[0].Annotations["kubernetes.io/psp"]; got != tc.policy {
				t.Errorf("%s (host network %t): the deployment's pod was admitted under %q, want %s", tc.namespace, tc.hostNetwork, got, tc.policy)
			}
		}
	})

	first.interrupt(t)
	if left := processesUsing(t, runDir); len(left) != 0 {
		t.Fatalf("processes left behind after SIGINT:\n%s", strings.Join(left, "\n"))
	}
	if !strings.Contains(first.output.String(), "Stopped.") {
		t.Errorf("no orderly stop reported:\n%s", first.output.String())
	}

	second := start(t, bins, env)
	second.waitReady(t)
	t.Run("a second run keeps the objects", func(t *testing.T) {
		c := client(t, kubeconfig)
		if _, err := c.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{}); err != nil {
			t.Fatalf("namespace lost across restarts: %v", err)
		}
		if _, err := c.CoreV1().Pods(namespace).Get(ctx, "web", metav1.GetOptions{}); err != nil {
			t.Fatalf("pod lost across restarts: %v", err)
		}
	})
	second.interrupt(t)
	if left := processesUsing(t, runDir); len(left) != 0 {
		t.Fatalf("processes left behind after the second SIGINT:\n%s", strings.Join(left, "\n"))
	}
}

func TestPortInUse(t *testing.T) {
	bins := framework.FindBinaries(t)
	for _, variable := range []string{"API_PORT", "ETCD_PORT", "ETCD_PEER_PORT", "KCM_PORT"} {
		t.Run(variable, func(t *testing.T) {
			p := freePorts(t)
			held := map[string]*int{"API_PORT": &p.api, "ETCD_PORT": &p.etcd, "ETCD_PEER_PORT": &p.etcdPeer, "KCM_PORT": &p.kcm}[variable]
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			*held = l.Addr().(*net.TCPAddr).Port

			runDir := filepath.Join(t.TempDir(), "local")
			cmd := exec.Command(bins.LocalUp)
			cmd.Env = p.env(runDir, bins.Dir)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("local-up succeeded with %s=%d held:\n%s", variable, *held, out)
			}
			want := fmt.Sprintf("port %d is already in use (%s)", *held, variable)
			if !strings.Contains(string(out), want) || !strings.Contains(string(out), "set "+variable) {
				t.Errorf("output does not say %q and how to move it:\n%s", want, out)
			}
			if _, err := os.Stat(filepath.Join(runDir, "etcd")); err == nil {
				t.Errorf("etcd was started although a port was taken")
			}
			if left := processesUsing(t, runDir); len(left) != 0 {
				t.Errorf("processes left behind:\n%s", strings.Join(left, "\n"))
			}
		})
	}
}

func TestComponentThatFailsToStart(t *testing.T) {
	bins := framework.FindBinaries(t)
	// A bin directory whose etcd dies at once, as one with a corrupt data dir would.
	binDir := t.TempDir()
	for _, name := range []string{"kube-apiserver", "kube-controller-manager"} {
		if err := os.Symlink(filepath.Join(bins.Dir, name), filepath.Join(binDir, name)); err != nil {
			t.Fatal(err)
		}
	}
	script := "#!/bin/sh\necho 'etcd: fatal: data dir is corrupt' >&2\nexit 3\n"
	if err := os.WriteFile(filepath.Join(binDir, "etcd"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	runDir := filepath.Join(t.TempDir(), "local")
	cmd := exec.Command(bins.LocalUp)
	cmd.Env = freePorts(t).env(runDir, binDir)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("local-up succeeded with a failing etcd:\n%s", out)
	}
	for _, want := range []string{"etcd exited", "data dir is corrupt", filepath.Join(runDir, "logs", "etcd.log")} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output does not show %q:\n%s", want, out)
		}
	}
}
