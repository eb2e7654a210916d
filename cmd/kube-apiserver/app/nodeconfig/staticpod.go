// Package nodeconfig reads how a control-plane node runs kube-apiserver: the command line
// of a static pod manifest's container, or of a systemd unit's ExecStart (after its drop-ins
// and environment files), and the unit's sandbox, as far as it decides which files the server
// may read and write. kube-apiserver preflight checks what it reads; the package itself
// needs nothing of the server, so its fuzz targets build in seconds.
package nodeconfig

import (
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// StaticPod is a static pod manifest's kube-apiserver container, as the kubelet runs it,
// and the whole pod, for comparing two manifests of a node.
type StaticPod struct {
	// Args are the server's arguments: the container's command after the program name,
	// then its args.
	Args []string
	// HostPathMounts are the mount paths of the container's hostPath volumes.
	HostPathMounts []string
	// Image is the container's image.
	Image string
	// Pod is the manifest as decoded, without the kubelet's defaults.
	Pod *corev1.Pod
	// Container is the name of Pod's container that runs kube-apiserver.
	Container string
}

// ReadStaticPod reads the kube-apiserver container of the static pod manifest at path.
// Errors name the file.
func ReadStaticPod(path string) (*StaticPod, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var pod corev1.Pod
	if err := yaml.UnmarshalStrict(data, &pod); err != nil {
		return nil, fmt.Errorf("%s: not a Pod manifest: %w", path, err)
	}
	hostPaths := map[string]bool{}
	for _, v := range pod.Spec.Volumes {
		hostPaths[v.Name] = v.HostPath != nil
	}
	for _, c := range pod.Spec.Containers {
		argv := append(append([]string{}, c.Command...), c.Args...)
		if len(argv) == 0 {
			continue
		}
		if c.Name == "kube-apiserver" || filepath.Base(argv[0]) == "kube-apiserver" {
			if filepath.Base(argv[0]) != "kube-apiserver" {
				return nil, fmt.Errorf("%s: container %q runs %q, not kube-apiserver", path, c.Name, argv[0])
			}
			static := &StaticPod{Args: argv[1:], HostPathMounts: []string{}, Image: c.Image, Pod: &pod, Container: c.Name}
			for _, m := range c.VolumeMounts {
				if hostPaths[m.Name] {
					static.HostPathMounts = append(static.HostPathMounts, m.MountPath)
				}
			}
			return static, nil
		}
	}
	return nil, fmt.Errorf("%s: no container runs kube-apiserver", path)
}

// systemdDropInRoots are the directories, besides the unit's own, whose <unit>.d/*.conf
// drop-ins systemd applies to a unit, highest priority first. Tests replace them.
