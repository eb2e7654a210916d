package preflight

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/portcullis-k8s/portcullis/cmd/kube-apiserver/app/nodeconfig"
)

// kubeadmManifest is a kube-apiserver manifest as kubeadm writes it (fields in its order),
// with a proxy variable from the shell that rendered it and the command line %s.
const kubeadmManifest = `apiVersion: v1
kind: Pod
metadata:
  annotations:
    kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint: 10.0.0.5:6443
  labels:
    component: kube-apiserver
    tier: control-plane
  name: kube-apiserver
  namespace: kube-system
spec:
  containers:
  - command: %s
    env:
    - name: NO_PROXY
      value: 10.0.0.0/8,.svc
    - name: GOMAXPROCS
      value: "2"
    image: registry.k8s.io/kube-apiserver:v1.37.2
    imagePullPolicy: IfNotPresent
    livenessProbe:
      failureThreshold: 8
      httpGet:
        host: 10.0.0.5
        path: /livez
        port: probe-port
        scheme: HTTPS
      initialDelaySeconds: 10
      periodSeconds: 10
      timeoutSeconds: 15
    name: kube-apiserver
    ports:
    - containerPort: 6443
      name: probe-port
      protocol: TCP
    readinessProbe:
      failureThreshold: 3
      httpGet:
        host: 10.0.0.5
        path: /readyz
        port: probe-port
        scheme: HTTPS
      periodSeconds: 1
      timeoutSeconds: 15
    resources:
      requests:
        cpu: 250m
    volumeMounts:
    - mountPath: /etc/ssl/certs
      name: ca-certs
      readOnly: true
    - mountPath: /etc/kubernetes/pki
      name: k8s-certs
      readOnly: true
  hostNetwork: true
  priority: 2000001000
  priorityClassName: system-node-critical
  securityContext:
    seccompProfile:
      type: RuntimeDefault
  tolerations:
  - effect: NoSchedule
    key: node-role.kubernetes.io/control-plane
  - effect: NoExecute
    operator: Exists
  volumes:
  - hostPath:
      path: /etc/ssl/certs
      type: DirectoryOrCreate
    name: ca-certs
  - hostPath:
      path: /etc/kubernetes/pki
      type: DirectoryOrCreate
    name: k8s-certs
status: {}
`

const kubeadmCommand = "[kube-apiserver, --advertise-address=10.0.0.5, --secure-port=6443]"

// manifestEdit replaces old, which must be in the manifest, by new.
type manifestEdit struct{ old, new string }

func editManifest(t *testing.T, manifest string, edits []manifestEdit) string {
	t.Helper()
	for _, e := range edits {
		if !strings.Contains(manifest, e.old) {
			t.Fatalf("the manifest has no %q to edit", e.old)
		}
		manifest = strings.Replace(manifest, e.old, e.new, 1)
	}
	return manifest
}

// TestComparePodSpecs renders two manifests of a node and checks the exact problems and
// notes; RUNNING in them stands for the running manifest's path.
func TestComparePodSpecs(t *testing.T) {
	const (
		envLine        = "    env:\n"
		volumes        = "  volumes:\n"
		mounts         = "    volumeMounts:\n"
		ourVolume      = "  - hostPath:\n      path: /etc/kubernetes/portcullis\n      type: Directory\n    name: portcullis-config\n"
		proxyAdded     = "kubeadm copies the proxy variables (HTTP_PROXY, HTTPS_PROXY, NO_PROXY, any name ending in _proxy, any case) from the shell that renders the manifest: render again from a shell with the same proxy variables as when the running manifest was rendered"
		followsAddress = "it follows --advertise-address, which changes from 10.0.0.5 to 192.168.1.5: render from the node's own configuration (docs/operating.md, 2a)"
		otherRender    = "the running manifest was rendered with other patches or by another kubeadm release, or edited by hand: put the setting the node needs in its patches (/etc/kubernetes/patches) or the ClusterConfiguration, and render again"
	)
	tests := []struct {
		name              string
		running, rendered []manifestEdit
		wantProblems      []string
		wantNotes         []string
	}{
		{name: "identical pods"},
		{
			name: "env and volumes reordered, a quantity and a default written otherwise",
			rendered: []manifestEdit{
				{"    - name: NO_PROXY\n      value: 10.0.0.0/8,.svc\n    - name: GOMAXPROCS\n      value: \"2\"\n", "    - name: GOMAXPROCS\n      value: \"2\"\n    - name: NO_PROXY\n      value: 10.0.0.0/8,.svc\n"},
				{"  - hostPath:\n      path: /etc/ssl/certs\n      type: DirectoryOrCreate\n    name: ca-certs\n", ""},
				{"    name: k8s-certs\nstatus", "    name: k8s-certs\n  - hostPath:\n      path: /etc/ssl/certs\n      type: DirectoryOrCreate\n    name: ca-certs\nstatus"},
				{"cpu: 250m", "cpu: \"0.25\""},
				{"    imagePullPolicy: IfNotPresent\n", "    imagePullPolicy: IfNotPresent\n    terminationMessagePath: /dev/termination-log\n"},
				{"  - effect: NoSchedule\n    key: node-role.kubernetes.io/control-plane\n  - effect: NoExecute\n    operator: Exists\n", "  - effect: NoExecute\n    operator: Exists\n  - effect: NoSchedule\n    key: node-role.kubernetes.io/control-plane\n"},
			},
		},
		{
			name:     "HTTPS_PROXY from the shell that renders",
			rendered: []manifestEdit{{envLine, envLine + "    - name: HTTPS_PROXY\n      value: http://user:pass@proxy.example.com:3128\n"}},
			wantProblems: []string{"spec.containers[kube-apiserver].env[HTTPS_PROXY] is added (http://***@proxy.example.com:3128), which the running manifest RUNNING does not have: " +
				proxyAdded + " (unset HTTPS_PROXY)"},
		},
		{
			name:     "a proxy variable changed, without a scheme, and one gone",
			running:  []manifestEdit{{envLine, envLine + "    - name: http_proxy\n      value: alice:s3cret@proxy.example.com:3128\n"}},
			rendered: []manifestEdit{{envLine, envLine + "    - name: http_proxy\n      value: bob:hunter2@proxy.example.com:8080\n"}, {"    - name: NO_PROXY\n      value: 10.0.0.0/8,.svc\n", ""}},
			wantProblems: []string{
				"spec.containers[kube-apiserver].env[NO_PROXY], which the running manifest RUNNING has (10.0.0.0/8,.svc), is gone: " + proxyAdded + " (export NO_PROXY as the running manifest has it)",
				"spec.containers[kube-apiserver].env[http_proxy] changes from ***@proxy.example.com:3128 (the running manifest's) to ***@proxy.example.com:8080: " + proxyAdded + " (set http_proxy to the running manifest's value)",
			},
		},
		{
			name:         "another environment variable added",
			rendered:     []manifestEdit{{envLine, envLine + "    - name: ETCD_PASSWORD\n      value: hunter2\n    - name: GODEBUG\n      value: http2debug=1\n"}},
			wantProblems: []string{"spec.containers[kube-apiserver].env[ETCD_PASSWORD] is added (a value not shown, as its name suggests a secret), which the running manifest RUNNING does not have: " + otherRender, "spec.containers[kube-apiserver].env[GODEBUG] is added (http2debug=1), which the running manifest RUNNING does not have: " + otherRender},
		},
		{
			name:         "resources changed",
			rendered:     []manifestEdit{{"cpu: 250m", "cpu: 500m"}},
			wantProblems: []string{"spec.containers[kube-apiserver].resources.requests.cpu changes from 250m (the running manifest's) to 500m: " + otherRender},
		},
		{
			name:         "livenessProbe removed",
			rendered:     []manifestEdit{{"    livenessProbe:\n      failureThreshold: 8\n      httpGet:\n        host: 10.0.0.5\n        path: /livez\n        port: probe-port\n        scheme: HTTPS\n      initialDelaySeconds: 10\n      periodSeconds: 10\n      timeoutSeconds: 15\n", ""}},
			wantProblems: []string{`spec.containers[kube-apiserver].livenessProbe, which the running manifest RUNNING has ({"failureThreshold":8,"httpGet":{"host":"10.0.0.5","path":"/livez","port":"probe-port","scheme":"HTTPS"},"initialDelaySeconds":10,"periodSeconds":10,"successThreshold":1,"timeoutSeconds":15}), is gone: ` + otherRender},
		},
		{
			name:         "securityContext added",
			rendered:     []manifestEdit{{"    resources:\n", "    securityContext:\n      allowPrivilegeEscalation: false\n    resources:\n"}},
			wantProblems: []string{`spec.containers[kube-apiserver].securityContext is added ({"allowPrivilegeEscalation":false}), which the running manifest RUNNING does not have: ` + otherRender},
		},
		{
			name:      "Portcullis's hostPath volume, mounted read-only",
			rendered:  []manifestEdit{{volumes, volumes + ourVolume}, {mounts, mounts + "    - mountPath: /etc/kubernetes/portcullis\n      name: portcullis-config\n      readOnly: true\n"}},
			wantNotes: []string{"adds the hostPath volume portcullis-config (/etc/kubernetes/portcullis) mounted read-only at /etc/kubernetes/portcullis"},
		},
		{
			name:         "a hostPath volume mounted writable",
			rendered:     []manifestEdit{{volumes, volumes + ourVolume}, {mounts, mounts + "    - mountPath: /etc/kubernetes/portcullis\n      name: portcullis-config\n"}},
			wantProblems: []string{`spec.containers[kube-apiserver].volumeMounts[/etc/kubernetes/portcullis] is added ({"mountPath":"/etc/kubernetes/portcullis","name":"portcullis-config"}), which the running manifest RUNNING does not have: ` + otherRender},
			wantNotes:    []string{"adds the hostPath volume portcullis-config (/etc/kubernetes/portcullis)"},
		},
		{
			name:         "a label changed",
			rendered:     []manifestEdit{{"tier: control-plane", "tier: apiserver"}},
			wantProblems: []string{"metadata.labels[tier] changes from control-plane (the running manifest's) to apiserver: " + otherRender},
		},
		{
			name:         "an annotation removed",
			rendered:     []manifestEdit{{"    kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint: 10.0.0.5:6443\n", "    example.com/owner: platform\n"}},
			wantProblems: []string{"metadata.annotations[example.com/owner] is added (platform), which the running manifest RUNNING does not have: " + otherRender, "metadata.annotations[kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint], which the running manifest RUNNING has (10.0.0.5:6443), is gone: " + otherRender},
		},
		{
			name:         "the pod's settings: priority class, DNS policy, tolerations",
			rendered:     []manifestEdit{{"  priorityClassName: system-node-critical\n", "  dnsPolicy: Default\n"}, {"  - effect: NoExecute\n    operator: Exists\n", ""}},
			wantProblems: []string{"spec.dnsPolicy changes from ClusterFirst (the running manifest's) to Default: " + otherRender, "spec.priorityClassName, which the running manifest RUNNING has (system-node-critical), is gone: " + otherRender, `spec.tolerations changes from [{"effect":"NoSchedule","key":"node-role.kubernetes.io/control-plane"},{"effect":"NoExecute","operator":"Exists"}] (the running manifest's) to [{"effect":"NoSchedule","key":"node-role.kubernetes.io/control-plane"}]: ` + otherRender},
		},
		{
			name:     "the advertise address changed: the annotation and probes follow",
			rendered: []manifestEdit{{"--advertise-address=10.0.0.5", "--advertise-address=192.168.1.5"}, {"endpoint: 10.0.0.5:6443", "endpoint: 192.168.1.5:6443"}, {"host: 10.0.0.5\n        path: /livez", "host: 192.168.1.5\n        path: /livez"}},
			wantProblems: []string{
				"metadata.annotations[kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint] changes from 10.0.0.5:6443 (the running manifest's) to 192.168.1.5:6443: " + followsAddress,
				"spec.containers[kube-apiserver].livenessProbe.httpGet.host changes from 10.0.0.5 (the running manifest's) to 192.168.1.5: " + followsAddress,
			},
		},
		{
			name:     "image and command changed only: theirs to check",
			rendered: []manifestEdit{{"registry.k8s.io/kube-apiserver:v1.37.2", "registry.example.com/portcullis/kube-apiserver:latest"}, {"--secure-port=6443]", "--secure-port=6443, --enable-admission-plugins=NodeRestriction,PodPreset]"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			base := fmt.Sprintf(kubeadmManifest, kubeadmCommand)
			runningPath := writeFile(t, dir, "running.yaml", editManifest(t, base, tc.running))
			renderedPath := writeFile(t, dir, "rendered.yaml", editManifest(t, base, tc.rendered))
			running, err := nodeconfig.ReadStaticPod(runningPath)
			if err != nil {
				t.Fatal(err)
			}
			rendered, err := nodeconfig.ReadStaticPod(renderedPath)
			if err != nil {
				t.Fatal(err)
			}
			r := &PreflightReport{}
			r.comparePodSpecs(runningPath, running, rendered)
			var want []string
			for _, p := range tc.wantProblems {
				want = append(want, strings.ReplaceAll(p, "RUNNING", runningPath))
			}
			if diff := cmp.Diff(want, r.Problems, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantNotes, r.Notes, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("notes (-want +got):\n%s", diff)
			}
			for _, secret := range []string{"user:pass", "s3cret", "hunter2"} {
				if strings.Contains(strings.Join(r.Problems, "\n"), secret) {
					t.Errorf("the report shows %q", secret)
				}
			}
		})
	}
}

// TestPreflightComparesRunningPod runs `preflight -o json --manifest NEW --running-manifest
// LIVE` on two manifests of one node whose command lines are the same and valid: the proxy
// variable the render took from its shell alone makes the swap unsafe.
func TestPreflightComparesRunningPod(t *testing.T) {
	node := newPreflightNode(t)
	command, err := json.Marshal(append([]string{"kube-apiserver"}, node.args...))
	if err != nil {
		t.Fatal(err)
	}
	live := fmt.Sprintf(kubeadmManifest, command)
	live = editManifest(t, live, []manifestEdit{
		{"  volumes:\n", "  volumes:\n  - hostPath:\n      path: " + node.dir + "\n    name: node\n"},
		{"    volumeMounts:\n", "    volumeMounts:\n    - mountPath: " + node.dir + "\n      name: node\n      readOnly: true\n"},
	})
	dir := t.TempDir()
	livePath := writeFile(t, dir, "live.yaml", live)
	newPath := writeFile(t, dir, "new.yaml", editManifest(t, live, []manifestEdit{{"    env:\n", "    env:\n    - name: HTTPS_PROXY\n      value: http://user:pass@proxy.example.com:3128\n"}}))

	var code int
	cmd := commandWithExitCode(&code)
	var stdout, stderr strings.Builder
	cmd.SetOut(&stdout)
	cmd.SetErr(&stderr)
	cmd.SetArgs([]string{"-o", "json", "--manifest", newPath, "--running-manifest", livePath})
	err = cmd.Execute()
	var report PreflightReport
	if jsonErr := json.Unmarshal([]byte(stdout.String()), &report); jsonErr != nil {
		t.Fatalf("no JSON report: %v\n%s\n%s", jsonErr, stdout.String(), stderr.String())
	}
	// cli.Run exits 1 on the error; the report says so itself.
	if err == nil || code != 0 || report.ExitCode != ExitUnsafe || report.Verdict != "unsafe" {
		t.Errorf("preflight: error %v, exit code %d, report's exit code %d (%s); want an error and 1 (unsafe)", err, code, report.ExitCode, report.Verdict)
	}
	want := []string{"spec.containers[kube-apiserver].env[HTTPS_PROXY] is added (http://***@proxy.example.com:3128), which the running manifest " + livePath + " does not have: kubeadm copies the proxy variables (HTTP_PROXY, HTTPS_PROXY, NO_PROXY, any name ending in _proxy, any case) from the shell that renders the manifest: render again from a shell with the same proxy variables as when the running manifest was rendered (unset HTTPS_PROXY)"}
	if diff := cmp.Diff(want, report.Problems); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	if strings.Contains(stdout.String(), "user:pass") {
		t.Errorf("the report shows the proxy's password:\n%s", stdout.String())
	}
}
