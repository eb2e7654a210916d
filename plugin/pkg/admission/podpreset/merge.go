package podpreset

import (
	"fmt"
	"slices"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	api "k8s.io/kubernetes/pkg/apis/core"
)

// origin names where an item came from, for conflict messages: the pod itself (or one of
// its containers), or a preset.
type origin struct {
	preset string // empty when the item is the pod's own
}

func (o origin) String() string {
	if o.preset == "" {
		return "the pod's own"
	}
	return fmt.Sprintf("podpreset %q's", o.preset)
}

type seen[T any] struct {
	value T
	from  origin
}

// findConflicts reports every conflict among the pod and its matching presets, in a stable
// order, without changing the pod:
//   - a volume with the same name but different content (pod vs preset, preset vs preset);
//   - in any init or regular container, an env var or a volumeMount with the same name but
//     different content, or a volumeMount on the same mountPath with different content.
func findConflicts(pod *api.Pod, presets []*preset) []string {
	var conflicts []string
	report := func(msg string) {
		if !slices.Contains(conflicts, msg) {
			conflicts = append(conflicts, msg)
		}
	}

	volumes := map[string]seen[api.Volume]{}
	for _, v := range pod.Spec.Volumes {
		volumes[v.Name] = seen[api.Volume]{v, origin{}}
	}
	for _, pp := range presets {
		for _, v := range pp.volumes {
			if prior, ok := volumes[v.Name]; ok && !apiequality.Semantic.DeepEqual(prior.value, v) {
				report(fmt.Sprintf("podpreset %q: volume %q differs from %s", pp.Name, v.Name, prior.from))
				continue
			}
			volumes[v.Name] = seen[api.Volume]{v, origin{pp.Name}}
		}
	}

	forEachContainer(pod, func(c *api.Container) {
		env := map[string]seen[api.EnvVar]{}
		for _, e := range c.Env {
			env[e.Name] = seen[api.EnvVar]{e, origin{}}
		}
		mountsByName := map[string]seen[api.VolumeMount]{}
		mountsByPath := map[string]seen[api.VolumeMount]{}
		for _, m := range c.VolumeMounts {
			mountsByName[m.Name] = seen[api.VolumeMount]{m, origin{}}
			mountsByPath[m.MountPath] = seen[api.VolumeMount]{m, origin{}}
		}
		where := func(o origin) string {
			if o.preset == "" {
				return fmt.Sprintf("container %q's own", c.Name)
			}
			return o.String()
		}
		for _, pp := range presets {
			for _, e := range pp.env {
				if prior, ok := env[e.Name]; ok && !apiequality.Semantic.DeepEqual(prior.value, e) {
					report(fmt.Sprintf("podpreset %q: env var %q differs from %s", pp.Name, e.Name, where(prior.from)))
					continue
				}
				env[e.Name] = seen[api.EnvVar]{e, origin{pp.Name}}
			}
			for _, m := range pp.volumeMounts {
				byName, nameTaken := mountsByName[m.Name]
				byPath, pathTaken := mountsByPath[m.MountPath]
				switch {
				case nameTaken && !apiequality.Semantic.DeepEqual(byName.value, m):
					report(fmt.Sprintf("podpreset %q: volumeMount %q differs from %s", pp.Name, m.Name, where(byName.from)))
				case pathTaken && !apiequality.Semantic.DeepEqual(byPath.value, m):
					report(fmt.Sprintf("podpreset %q: volumeMount at %q differs from %s", pp.Name, m.MountPath, where(byPath.from)))
				default:
					mountsByName[m.Name] = seen[api.VolumeMount]{m, origin{pp.Name}}
					mountsByPath[m.MountPath] = seen[api.VolumeMount]{m, origin{pp.Name}}
				}
			}
		}
	})
	return conflicts
}

// apply merges every preset into the pod: env, envFrom and volumeMounts into each init and
// regular container (not ephemeral ones), volumes into the pod, skipping identical
// duplicates, and records each preset in an annotation. Call it only when findConflicts
// found none.
func apply(pod *api.Pod, presets []*preset) {
	for _, pp := range presets {
		for _, v := range pp.volumes {
			pod.Spec.Volumes = appendUnlessPresent(pod.Spec.Volumes, v)
		}
	}
	forEachContainer(pod, func(c *api.Container) {
		for _, pp := range presets {
			for _, e := range pp.env {
				c.Env = appendUnlessPresent(c.Env, e)
			}
			for _, e := range pp.envFrom {
				c.EnvFrom = appendUnlessPresent(c.EnvFrom, e)
			}
			for _, m := range pp.volumeMounts {
				c.VolumeMounts = appendUnlessPresent(c.VolumeMounts, m)
			}
		}
	})
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	for _, pp := range presets {
		pod.Annotations[AppliedAnnotationPrefix+pp.Name] = pp.ResourceVersion
	}
}

func appendUnlessPresent[T any](list []T, item T) []T {
	for i := range list {
		if apiequality.Semantic.DeepEqual(list[i], item) {
			return list
		}
	}
	return append(list, item)
}

func forEachContainer(pod *api.Pod, f func(*api.Container)) {
	for i := range pod.Spec.InitContainers {
		f(&pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		f(&pod.Spec.Containers[i])
	}
}
