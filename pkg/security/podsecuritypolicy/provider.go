package podsecuritypolicy

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
	api "k8s.io/kubernetes/pkg/apis/core"

	"github.com/portcullis-k8s/portcullis/pkg/apis/policy"
	"github.com/portcullis-k8s/portcullis/pkg/kubecompat"
	psputil "github.com/portcullis-k8s/portcullis/pkg/security/podsecuritypolicy/util"
)

// simpleProvider is the Provider built from one policy and its strategies.
type simpleProvider struct {
	psp        *policy.PodSecurityPolicy
	strategies *ProviderStrategies
}

var _ Provider = &simpleProvider{}

// NewSimpleProvider builds a Provider for psp. The provider reads psp but never writes it
// and never hands pointers into it to a pod, so psp may be a shared informer-cache object.
func NewSimpleProvider(psp *policy.PodSecurityPolicy, namespace string, strategyFactory StrategyFactory) (Provider, error) {
	if psp == nil {
		return nil, fmt.Errorf("NewSimpleProvider requires a PodSecurityPolicy")
	}
	if strategyFactory == nil {
		return nil, fmt.Errorf("NewSimpleProvider requires a StrategyFactory")
	}
	strategies, err := strategyFactory.CreateStrategies(psp, namespace)
	if err != nil {
		return nil, err
	}
	return &simpleProvider{psp: psp, strategies: strategies}, nil
}

// GetPSPName returns the name of the policy.
func (s *simpleProvider) GetPSPName() string {
	return s.psp.Name
}

// forEachContainer visits init, regular and ephemeral containers, in pod validation's order.
func forEachContainer(spec *api.PodSpec, fn func(kind containerKind, i int, c *api.Container)) {
	for i := range spec.InitContainers {
		fn(initContainer, i, &spec.InitContainers[i])
	}
	for i := range spec.Containers {
		fn(regularContainer, i, &spec.Containers[i])
	}
	for i := range spec.EphemeralContainers {
		fn(ephemeralContainer, i, (*api.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
}

func boolPtr(b bool) *bool { return &b }

// MutatePod applies the policy's defaults. Only unset values are defaulted; a value the pod
// set is left for ValidatePod to judge. Container defaults consider the pod-level value as
// well, as the kubelet does: a container inheriting runAsUser from the pod needs no default.
func (s *simpleProvider) MutatePod(pod *api.Pod) error {
	sc := pod.Spec.SecurityContext
	ensure := func() *api.PodSecurityContext {
		if sc == nil {
			sc = &api.PodSecurityContext{}
			pod.Spec.SecurityContext = sc
		}
		return sc
	}

	// Only an absent list is defaulted, as in 1.24: an explicit empty list is the pod's own
	// choice, which validation judges (MustRunAs refuses it).
	if sc == nil || sc.SupplementalGroups == nil {
		groups, err := s.strategies.SupplementalGroupStrategy.Generate(pod)
		if err != nil {
			return err
		}
		if groups != nil {
			ensure().SupplementalGroups = groups
		}
	}
	if sc == nil || sc.FSGroup == nil {
		fsGroup, err := s.strategies.FSGroupStrategy.GenerateSingle(pod)
		if err != nil {
			return err
		}
		if fsGroup != nil {
			ensure().FSGroup = fsGroup
		}
	}
	if sc == nil || sc.SELinuxOptions == nil {
		o, err := s.strategies.SELinuxStrategy.Generate(pod, nil)
		if err != nil {
			return err
		}
		if o != nil {
			ensure().SELinuxOptions = o
		}
	}
	// Seccomp and AppArmor defaults go on the pod level only: containers inherit them, and a
	// container that names its own profile is judged by validation.
	seccompProfile, err := s.strategies.SeccompStrategy.Generate(pod)
	if err != nil {
		return err
	}
	if seccompProfile != nil {
		ensure().SeccompProfile = seccompProfile
	}
	appArmorProfile, err := s.strategies.AppArmorStrategy.Generate(pod)
	if err != nil {
		return err
	}
	if appArmorProfile != nil {
		ensure().AppArmorProfile = appArmorProfile
	}

	if rc := s.psp.Spec.RuntimeClass; rc != nil && rc.DefaultRuntimeClassName != nil && pod.Spec.RuntimeClassName == nil {
		name := *rc.DefaultRuntimeClassName
		pod.Spec.RuntimeClassName = &name
	}

	forEachContainer(&pod.Spec, func(_ containerKind, _ int, c *api.Container) {
		if err == nil {
			err = s.mutateContainer(pod, c)
		}
	})
	return err
}

func (s *simpleProvider) mutateContainer(pod *api.Pod, c *api.Container) error {
	psc := pod.Spec.SecurityContext
	if psc == nil {
		psc = &noPodSecurityContext
	}
	csc := c.SecurityContext
	ensure := func() *api.SecurityContext {
		if csc == nil {
			csc = &api.SecurityContext{}
			c.SecurityContext = csc
		}
		return csc
	}
	if (csc == nil || csc.RunAsUser == nil) && psc.RunAsUser == nil {
		uid, err := s.strategies.RunAsUserStrategy.Generate(pod, c)
		if err != nil {
			return err
		}
		if uid != nil {
			ensure().RunAsUser = uid
		}
	}
	if (csc == nil || csc.RunAsGroup == nil) && psc.RunAsGroup == nil {
		gid, err := s.strategies.RunAsGroupStrategy.GenerateSingle(pod)
		if err != nil {
			return err
		}
		if gid != nil {
			ensure().RunAsGroup = gid
		}
	}
	if (csc == nil || csc.SELinuxOptions == nil) && psc.SELinuxOptions == nil {
		o, err := s.strategies.SELinuxStrategy.Generate(pod, c)
		if err != nil {
			return err
		}
		if o != nil {
			ensure().SELinuxOptions = o
		}
	}
	// With MustRunAsNonRoot there is no uid to default to; runAsNonRoot makes the kubelet
	// refuse an image whose user is root.
	if s.psp.Spec.RunAsUser.Rule == policy.RunAsUserStrategyMustRunAsNonRoot &&
		(csc == nil || (csc.RunAsNonRoot == nil && csc.RunAsUser == nil)) &&
		psc.RunAsNonRoot == nil && psc.RunAsUser == nil {
		ensure().RunAsNonRoot = boolPtr(true)
	}

	caps, err := s.strategies.CapabilitiesStrategy.Generate(pod, c)
	if err != nil {
		return err
	}
	if csc == nil {
		if caps != nil {
			ensure().Capabilities = caps
		}
	} else if caps != csc.Capabilities {
		csc.Capabilities = caps
	}

	if s.psp.Spec.ReadOnlyRootFilesystem && (csc == nil || csc.ReadOnlyRootFilesystem == nil) {
		ensure().ReadOnlyRootFilesystem = boolPtr(true)
	}
	if csc == nil || csc.AllowPrivilegeEscalation == nil {
		switch {
		case s.psp.Spec.DefaultAllowPrivilegeEscalation != nil:
			ensure().AllowPrivilegeEscalation = boolPtr(*s.psp.Spec.DefaultAllowPrivilegeEscalation)
		case !s.psp.Spec.AllowPrivilegeEscalation:
			ensure().AllowPrivilegeEscalation = boolPtr(false)
		}
	}
	return nil
}

// noPodSecurityContext stands in for an absent pod security context; it is only read.
var noPodSecurityContext api.PodSecurityContext

// ValidatePod returns every violation of the policy by the pod.
func (s *simpleProvider) ValidatePod(pod *api.Pod) field.ErrorList {
	var errs field.ErrorList
	psc := pod.Spec.SecurityContext
	if psc == nil {
		psc = &noPodSecurityContext
	}

	errs = append(errs, s.strategies.FSGroupStrategy.ValidateSingle(podFSGroupPath, pod, psc.FSGroup)...)
	errs = append(errs, s.strategies.SupplementalGroupStrategy.Validate(podSupplementalPath, pod, psc.SupplementalGroups)...)
	errs = append(errs, s.strategies.SeccompStrategy.ValidatePod(pod)...)
	errs = append(errs, s.strategies.AppArmorStrategy.ValidatePod(pod)...)
	errs = append(errs, s.strategies.SELinuxStrategy.Validate(podSELinuxPath, pod, nil, psc.SELinuxOptions)...)

	host := kubecompat.PodHostNamespaces(&pod.Spec)
	if !s.psp.Spec.HostNetwork && host.Network {
		errs = append(errs, field.Invalid(hostNetworkPath, true, "Host network is not allowed to be used"))
	}
	if !s.psp.Spec.HostPID && host.PID {
		errs = append(errs, field.Invalid(hostPIDPath, true, "Host PID is not allowed to be used"))
	}
	if !s.psp.Spec.HostIPC && host.IPC {
		errs = append(errs, field.Invalid(hostIPCPath, true, "Host IPC is not allowed to be used"))
	}

	errs = append(errs, s.strategies.SysctlsStrategy.Validate(pod)...)
	errs = append(errs, s.validateVolumes(pod)...)

	if rc := s.psp.Spec.RuntimeClass; rc != nil {
		errs = append(errs, validateRuntimeClassName(pod.Spec.RuntimeClassName, rc.AllowedRuntimeClassNames)...)
	}

	forEachContainer(&pod.Spec, func(kind containerKind, i int, c *api.Container) {
		errs = append(errs, s.validateContainer(pod, psc, c, pathsFor(kind, i))...)
	})
	return errs
}

func (s *simpleProvider) validateVolumes(pod *api.Pod) field.ErrorList {
	if len(pod.Spec.Volumes) == 0 {
		return nil
	}
	var errs field.ErrorList
	allowAll := psputil.PSPAllowsAllVolumes(s.psp)
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		fsType, err := psputil.GetVolumeFSType(v)
		if err != nil {
			errs = append(errs, field.Invalid(volumesPath.Index(i), string(fsType), err.Error()))
			continue
		}
		if !allowAll && !s.allowsVolumeType(fsType, v) {
			errs = append(errs, field.Invalid(volumesPath.Index(i), string(fsType),
				fmt.Sprintf("%s volumes are not allowed to be used", fsType)))
			continue
		}
		switch fsType {
		case policy.HostPath:
			allowed, mustBeReadOnly := psputil.AllowsHostVolumePath(s.psp, v.HostPath.Path)
			if !allowed {
				errs = append(errs, field.Invalid(volumesPath.Index(i).Child("hostPath", "pathPrefix"), v.HostPath.Path,
					fmt.Sprintf("is not allowed to be used; allowed host paths: %s", s.allowedHostPaths())))
			} else if mustBeReadOnly {
				errs = append(errs, readOnlyMountErrors(pod, v.Name)...)
			}
		case policy.FlexVolume:
			if len(s.psp.Spec.AllowedFlexVolumes) > 0 && !s.allowsFlexDriver(v.FlexVolume.Driver) {
				errs = append(errs, field.Invalid(volumesPath.Index(i).Child("flexVolume", "driver"), v.FlexVolume.Driver,
					"Flexvolume driver is not allowed to be used"))
			}
		case policy.CSI:
			if len(s.psp.Spec.AllowedCSIDrivers) > 0 && !s.allowsCSIDriver(v.CSI.Driver) {
				errs = append(errs, field.Invalid(volumesPath.Index(i).Child("csi", "driver"), v.CSI.Driver,
					"Inline CSI driver is not allowed to be used"))
			}
		}
	}
	return errs
}

// allowsVolumeType: a projected volume holding only the service-account token sources counts
// as a secret volume, as in 1.24, so a policy allowing secrets admits ordinary pods.
func (s *simpleProvider) allowsVolumeType(fsType policy.FSType, v *api.Volume) bool {
	if psputil.PSPAllowsFSType(s.psp, fsType) {
		return true
	}
	return fsType == policy.Projected && psputil.PSPAllowsFSType(s.psp, policy.Secret) &&
		psputil.IsOnlyServiceAccountTokenSources(v.Projected)
}

// readOnlyMountErrors reports every writable mount of a volume that must be read-only, in
// any kind of container: an ephemeral debug container must not get write access either.
func readOnlyMountErrors(pod *api.Pod, volume string) field.ErrorList {
	var errs field.ErrorList
	forEachContainer(&pod.Spec, func(kind containerKind, i int, c *api.Container) {
		for j, m := range c.VolumeMounts {
			if m.Name == volume && !m.ReadOnly {
				errs = append(errs, field.Invalid(pathsFor(kind, i).container.Child("volumeMounts").Index(j).Child("readOnly"),
					false, "must be read-only"))
			}
		}
	})
	return errs
}

func (s *simpleProvider) allowedHostPaths() string {
	out := make([]string, 0, len(s.psp.Spec.AllowedHostPaths))
	for _, p := range s.psp.Spec.AllowedHostPaths {
		if p.ReadOnly {
			out = append(out, p.PathPrefix+" (read-only)")
		} else {
			out = append(out, p.PathPrefix)
		}
	}
	return fmt.Sprint(out)
}

func (s *simpleProvider) allowsFlexDriver(driver string) bool {
	for _, d := range s.psp.Spec.AllowedFlexVolumes {
		if d.Driver == driver {
			return true
		}
	}
	return false
}

func (s *simpleProvider) allowsCSIDriver(driver string) bool {
	for _, d := range s.psp.Spec.AllowedCSIDrivers {
		if d.Name == driver {
			return true
		}
	}
	return false
}

// validateContainer checks one container. Values the kubelet takes from the pod when the
// container leaves them unset (runAsUser, runAsGroup, runAsNonRoot, seLinuxOptions) are
// judged by their effective value.
func (s *simpleProvider) validateContainer(pod *api.Pod, psc *api.PodSecurityContext, c *api.Container, p *containerPaths) field.ErrorList {
	var errs field.ErrorList
	csc := c.SecurityContext
	if csc == nil {
		csc = &noContainerSecurityContext
	}

	runAsUser := firstInt64(csc.RunAsUser, psc.RunAsUser)
	runAsNonRoot := csc.RunAsNonRoot
	if runAsNonRoot == nil {
		runAsNonRoot = psc.RunAsNonRoot
	}
	errs = append(errs, s.strategies.RunAsUserStrategy.Validate(p.sc, pod, c, runAsNonRoot, runAsUser)...)
	errs = append(errs, s.strategies.RunAsGroupStrategy.ValidateSingle(p.runAsGroup, pod, firstInt64(csc.RunAsGroup, psc.RunAsGroup))...)
	seLinux := csc.SELinuxOptions
	if seLinux == nil {
		seLinux = psc.SELinuxOptions
	}
	errs = append(errs, s.strategies.SELinuxStrategy.Validate(p.seLinux, pod, c, seLinux)...)
	errs = append(errs, s.strategies.AppArmorStrategy.ValidateContainer(pod, c, p.sc)...)
	errs = append(errs, s.strategies.SeccompStrategy.ValidateContainer(pod, c, p.sc)...)

	if !s.psp.Spec.Privileged && csc.Privileged != nil && *csc.Privileged {
		errs = append(errs, field.Invalid(p.sc.Child("privileged"), true, "Privileged containers are not allowed"))
	}

	procMount := api.DefaultProcMount
	if csc.ProcMount != nil {
		procMount = *csc.ProcMount
	}
	if !s.allowsProcMount(procMount) {
		errs = append(errs, field.Invalid(p.sc.Child("procMount"), procMount, "ProcMountType is not allowed"))
	}

	errs = append(errs, s.strategies.CapabilitiesStrategy.Validate(p.capabilities, pod, c, csc.Capabilities)...)

	for j, port := range c.Ports {
		if port.HostPort > 0 && !s.isValidHostPort(port.HostPort) {
			errs = append(errs, field.Invalid(p.container.Child("ports").Index(j).Child("hostPort"), port.HostPort,
				fmt.Sprintf("Host port %d is not allowed to be used. Allowed ports: %s",
					port.HostPort, psputil.FormatHostPortRanges(s.psp.Spec.HostPorts))))
		}
	}

	if s.psp.Spec.ReadOnlyRootFilesystem {
		if ro := csc.ReadOnlyRootFilesystem; ro == nil {
			errs = append(errs, field.Invalid(p.sc.Child("readOnlyRootFilesystem"), ro, "ReadOnlyRootFilesystem may not be nil and must be set to true"))
		} else if !*ro {
			errs = append(errs, field.Invalid(p.sc.Child("readOnlyRootFilesystem"), false, "ReadOnlyRootFilesystem must be set to true"))
		}
	}

	// Unset means allowed (the kernel default), so a policy forbidding escalation needs an
	// explicit false.
	if ape := csc.AllowPrivilegeEscalation; !s.psp.Spec.AllowPrivilegeEscalation && (ape == nil || *ape) {
		errs = append(errs, field.Invalid(p.sc.Child("allowPrivilegeEscalation"), ape, "Allowing privilege escalation for containers is not allowed"))
	}
	return errs
}

// noContainerSecurityContext stands in for an absent container security context; only read.
var noContainerSecurityContext api.SecurityContext

func firstInt64(a, b *int64) *int64 {
	if a != nil {
		return a
	}
	return b
}

// allowsProcMount: an empty allowedProcMountTypes means only Default.
func (s *simpleProvider) allowsProcMount(pm api.ProcMountType) bool {
	if len(s.psp.Spec.AllowedProcMountTypes) == 0 {
		return pm == api.DefaultProcMount
	}
	for _, a := range s.psp.Spec.AllowedProcMountTypes {
		if a == pm {
			return true
		}
	}
	return false
}

func (s *simpleProvider) isValidHostPort(port int32) bool {
	for _, r := range s.psp.Spec.HostPorts {
		if port >= r.Min && port <= r.Max {
			return true
		}
	}
	return false
}

// validateRuntimeClassName: an unset runtimeClassName is always allowed (the policy's
// default, if any, was applied by MutatePod); "*" allows every name.
func validateRuntimeClassName(actual *string, allowed []string) field.ErrorList {
	if actual == nil {
		return nil
	}
	for _, a := range allowed {
		if a == policy.AllowAllRuntimeClassNames || a == *actual {
			return nil
		}
	}
	return field.ErrorList{field.Invalid(runtimeClassNamePath, *actual,
		fmt.Sprintf("RuntimeClass is not allowed; allowed: %v", allowed))}
}
