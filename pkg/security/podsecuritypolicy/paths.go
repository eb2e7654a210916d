package podsecuritypolicy

import "k8s.io/apimachinery/pkg/util/validation/field"

// Field paths are built ahead of time because a *field.Path costs an allocation per segment
// and ValidatePod runs for every policy on every pod; building them only for errors would
// mean threading lazy paths through every strategy. The tables are immutable after init.

var (
	specPath               = field.NewPath("spec")
	podSCPath              = specPath.Child("securityContext")
	podFSGroupPath         = podSCPath.Child("fsGroup")
	podSupplementalPath    = podSCPath.Child("supplementalGroups")
	podSELinuxPath         = podSCPath.Child("seLinuxOptions")
	hostNetworkPath        = specPath.Child("hostNetwork")
	hostPIDPath            = specPath.Child("hostPID")
	hostIPCPath            = specPath.Child("hostIPC")
	runtimeClassNamePath   = specPath.Child("runtimeClassName")
	volumesPath            = specPath.Child("volumes")
	containerKindFieldName = [...]string{"initContainers", "containers", "ephemeralContainers"}
)

// containerKind orders the kinds as pod validation visits them.
type containerKind int

const (
	initContainer containerKind = iota
	regularContainer
	ephemeralContainer
)

// containerPaths are the paths validation needs for one container.
type containerPaths struct {
	container, sc, runAsGroup, seLinux, capabilities *field.Path
}

// cachedContainerPaths covers the containers almost every pod has; beyond it paths are
// built per call.
const cachedContainerPaths = 16

var containerPathTable = func() (t [3][cachedContainerPaths]containerPaths) {
	for k := range t {
		for i := range t[k] {
			t[k][i] = newContainerPaths(containerKind(k), i)
		}
	}
	return t
}()

func newContainerPaths(kind containerKind, i int) containerPaths {
	c := specPath.Child(containerKindFieldName[kind]).Index(i)
	sc := c.Child("securityContext")
	return containerPaths{
		container:    c,
		sc:           sc,
		runAsGroup:   sc.Child("runAsGroup"),
		seLinux:      sc.Child("seLinuxOptions"),
		capabilities: sc.Child("capabilities"),
	}
}

func pathsFor(kind containerKind, i int) *containerPaths {
	if i < cachedContainerPaths {
		return &containerPathTable[kind][i]
	}
	p := newContainerPaths(kind, i)
	return &p
}
