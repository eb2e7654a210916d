package podpreset

import (
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	api "k8s.io/kubernetes/pkg/apis/core"
)

// merged is what a pod's matching presets add to it: each item once, in preset order, with
// every conflict among the presets and with the pod. It is computed once per pod, so its cost
// is linear in the size of the presets and of the pod, whatever the number of containers.
type merged struct {
	volumes []*api.Volume
	env     []*api.EnvVar
	envFrom []*api.EnvFromSource
	mounts  []*api.VolumeMount

	conflicts []string
	reported  map[string]bool
}

// from records which preset an item came from, for conflict messages.
type from[T any] struct {
	item   *T
	preset string
}

func (m *merged) conflict(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if m.reported[msg] {
		return
	}
	if m.reported == nil {
		m.reported = map[string]bool{}
	}
	m.reported[msg] = true
	m.conflicts = append(m.conflicts, msg)
}

// mergePresets merges the presets, in order, and checks them against the pod. A conflict is:
//   - a volume with the same name but different content (pod vs preset, preset vs preset);
//   - an env var or a volumeMount with the same name but different content, or a volumeMount
//     on the same mountPath with different content, between two presets or between a preset
//     and any init or regular container;
//   - a preset's volumeMount whose name or mountPath is a volumeDevice's of any init or
//     regular container (the merged pod would be invalid).
//
// Identical duplicates are not conflicts: they are merged once.
func mergePresets(pod *api.Pod, presets []*preset) *merged {
	m := &merged{}
	var volumeCount, envCount, envFromCount, mountCount int
	for _, pp := range presets {
		volumeCount += len(pp.volumes)
		envCount += len(pp.env)
		envFromCount += len(pp.envFrom)
		mountCount += len(pp.volumeMounts)
	}

	podVolumes := make(map[string]*api.Volume, len(pod.Spec.Volumes))
	for i := range pod.Spec.Volumes {
		podVolumes[pod.Spec.Volumes[i].Name] = &pod.Spec.Volumes[i]
	}
	volumes := make(map[string]from[api.Volume], volumeCount)
	env := make(map[string]from[api.EnvVar], envCount)
	envFrom := make(map[envFromKey]bool, envFromCount)
	mountsByName := make(map[string]from[api.VolumeMount], mountCount)
	mountsByPath := make(map[string]from[api.VolumeMount], mountCount)
	for _, pp := range presets {
		for i := range pp.volumes {
			v := &pp.volumes[i]
			if own, ok := podVolumes[v.Name]; ok {
				if !apiequality.Semantic.DeepEqual(*own, *v) {
					m.conflict("podpreset %q: volume %q differs from the pod's own", pp.Name, v.Name)
				}
				continue
			}
			if prior, ok := volumes[v.Name]; ok {
				if !apiequality.Semantic.DeepEqual(*prior.item, *v) {
					m.conflict("podpreset %q: volume %q differs from podpreset %q's", pp.Name, v.Name, prior.preset)
				}
				continue
			}
			volumes[v.Name] = from[api.Volume]{v, pp.Name}
			m.volumes = append(m.volumes, v)
		}
		for i := range pp.env {
			e := &pp.env[i]
			if prior, ok := env[e.Name]; ok {
				if !apiequality.Semantic.DeepEqual(*prior.item, *e) {
					m.conflict("podpreset %q: env var %q differs from podpreset %q's", pp.Name, e.Name, prior.preset)
				}
				continue
			}
			env[e.Name] = from[api.EnvVar]{e, pp.Name}
			m.env = append(m.env, e)
		}
		for i := range pp.envFrom {
			e := &pp.envFrom[i]
			if key := keyOfEnvFrom(e); !envFrom[key] {
				envFrom[key] = true
				m.envFrom = append(m.envFrom, e)
			}
		}
		for i := range pp.volumeMounts {
			mount := &pp.volumeMounts[i]
			byName, nameTaken := mountsByName[mount.Name]
			byPath, pathTaken := mountsByPath[mount.MountPath]
			switch {
			case nameTaken && !apiequality.Semantic.DeepEqual(*byName.item, *mount):
				m.conflict("podpreset %q: volumeMount %q differs from podpreset %q's", pp.Name, mount.Name, byName.preset)
			case pathTaken && !apiequality.Semantic.DeepEqual(*byPath.item, *mount):
				m.conflict("podpreset %q: volumeMount at %q differs from podpreset %q's", pp.Name, mount.MountPath, byPath.preset)
			case !nameTaken && !pathTaken:
				mountsByName[mount.Name] = from[api.VolumeMount]{mount, pp.Name}
				mountsByPath[mount.MountPath] = from[api.VolumeMount]{mount, pp.Name}
				m.mounts = append(m.mounts, mount)
			}
		}
	}

	forEachContainer(pod, func(c *api.Container) {
		for i := range c.Env {
			own := &c.Env[i]
			if p, ok := env[own.Name]; ok && !apiequality.Semantic.DeepEqual(*p.item, *own) {
				m.conflict("podpreset %q: env var %q differs from container %q's own", p.preset, own.Name, c.Name)
			}
		}
		for i := range c.VolumeMounts {
			own := &c.VolumeMounts[i]
			if p, ok := mountsByName[own.Name]; ok && !apiequality.Semantic.DeepEqual(*p.item, *own) {
				m.conflict("podpreset %q: volumeMount %q differs from container %q's own", p.preset, own.Name, c.Name)
			}
			if p, ok := mountsByPath[own.MountPath]; ok && !apiequality.Semantic.DeepEqual(*p.item, *own) {
				m.conflict("podpreset %q: volumeMount at %q differs from container %q's own", p.preset, own.MountPath, c.Name)
			}
		}
		for _, d := range c.VolumeDevices {
			if p, ok := mountsByName[d.Name]; ok {
				m.conflict("podpreset %q: volumeMount %q names a volumeDevice of container %q", p.preset, d.Name, c.Name)
			}
			if p, ok := mountsByPath[d.DevicePath]; ok {
				m.conflict("podpreset %q: volumeMount at %q is a devicePath of container %q", p.preset, d.DevicePath, c.Name)
			}
		}
	})
	return m
}

// applyTo merges into the pod what the presets add: env, envFrom and volumeMounts into each
// init and regular container (not ephemeral ones), volumes into the pod, skipping what the
// pod already has, and records each preset in an annotation. Call it only when there is no
// conflict: then an item whose name (a mount's path) the pod already has is identical.
//
// Everything merged is a deep copy: the presets belong to the informer's cache, which a
// later change to the pod must not reach.
func (m *merged) applyTo(pod *api.Pod, presets []*preset) {
	if len(m.volumes) > 0 {
		own := make(map[string]bool, len(pod.Spec.Volumes))
		for _, v := range pod.Spec.Volumes {
			own[v.Name] = true
		}
		pod.Spec.Volumes = growFor(pod.Spec.Volumes, len(m.volumes))
		for _, v := range m.volumes {
			if !own[v.Name] {
				pod.Spec.Volumes = append(pod.Spec.Volumes, *v.DeepCopy())
			}
		}
	}
	forEachContainer(pod, func(c *api.Container) {
		if len(m.env) > 0 {
			own := make(map[string]bool, len(c.Env))
			for _, e := range c.Env {
				own[e.Name] = true
			}
			c.Env = growFor(c.Env, len(m.env))
			for _, e := range m.env {
				if !own[e.Name] {
					c.Env = append(c.Env, *e.DeepCopy())
				}
			}
		}
		if len(m.envFrom) > 0 {
			own := make(map[envFromKey]bool, len(c.EnvFrom))
			for i := range c.EnvFrom {
				own[keyOfEnvFrom(&c.EnvFrom[i])] = true
			}
			c.EnvFrom = growFor(c.EnvFrom, len(m.envFrom))
			for _, e := range m.envFrom {
				if !own[keyOfEnvFrom(e)] {
					c.EnvFrom = append(c.EnvFrom, *e.DeepCopy())
				}
			}
		}
		if len(m.mounts) > 0 {
			own := make(map[string]bool, len(c.VolumeMounts))
			for _, mount := range c.VolumeMounts {
				own[mount.MountPath] = true
			}
			c.VolumeMounts = growFor(c.VolumeMounts, len(m.mounts))
			for _, mount := range m.mounts {
				if !own[mount.MountPath] {
					c.VolumeMounts = append(c.VolumeMounts, *mount.DeepCopy())
				}
			}
		}
	})
	if pod.Annotations == nil {
		pod.Annotations = make(map[string]string, len(presets))
	}
	for _, pp := range presets {
		pod.Annotations[AppliedAnnotationPrefix+pp.Name] = pp.ResourceVersion
	}
}

// growFor makes room for n more items at once, rather than by repeated doubling.
func growFor[T any](list []T, n int) []T {
	if cap(list)-len(list) >= n {
		return list
	}
	grown := make([]T, len(list), len(list)+n)
	copy(grown, list)
	return grown
}

// envFromKey is an envFrom source's identity: two sources with equal keys are identical.
type envFromKey struct {
	prefix                            string
	configMap, secret                 string
	hasConfigMap, hasSecret           bool
	configMapOptional, secretOptional optionalFlag
}

// optionalFlag tells an unset optional from false and true.
type optionalFlag int8

func optional(b *bool) optionalFlag {
	switch {
	case b == nil:
		return 0
	case *b:
		return 1
	default:
		return -1
	}
}

func keyOfEnvFrom(e *api.EnvFromSource) envFromKey {
	k := envFromKey{prefix: e.Prefix}
	if ref := e.ConfigMapRef; ref != nil {
		k.hasConfigMap, k.configMap, k.configMapOptional = true, ref.Name, optional(ref.Optional)
	}
	if ref := e.SecretRef; ref != nil {
		k.hasSecret, k.secret, k.secretOptional = true, ref.Name, optional(ref.Optional)
	}
	return k
}

func forEachContainer(pod *api.Pod, f func(*api.Container)) {
	for i := range pod.Spec.InitContainers {
		f(&pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		f(&pod.Spec.Containers[i])
	}
}
