// Package podsecuritypolicy is the PodSecurityPolicy engine the admission plugin uses: a
// Provider built from one policy defaults a pod (MutatePod) and reports every violation
// (ValidatePod). Its behaviour is Kubernetes 1.24's, carried onto 1.37 pods.
//
// Where it differs from 1.24, and why:
//
//   - Containers: init, regular and ephemeral containers are all defaulted and validated
//     (ephemeral ones under spec.ephemeralContainers[i]); a debug container is a container.
//   - Volumes: every 1.37 volume source maps to an FSType, including "ephemeral" (generic
//     ephemeral volumes) and "image" (OCI image volumes, new in this distribution's types).
//     Volume types removed since 1.24 never occur in a 1.37 pod. A source this code does not
//     know is denied. HostPath mounts that must be read-only are checked in every container
//     kind; paths are cleaned before prefix matching ("/foo/../etc" is judged as "/etc",
//     which 1.24 let through under a "/foo" prefix). As in 1.24, a projected volume holding
//     only the service-account token sources counts as a secret volume.
//   - hostNetwork, hostPID and hostIPC are reported at spec.hostNetwork etc., where users
//     write them (1.24's internal types kept them under spec.securityContext).
//   - Host ports are reported at spec.containers[i].ports[j].hostPort; runAsGroup errors at
//     ...securityContext.runAsGroup; group errors at the offending index; flex drivers at
//     spec.volumes[i].flexVolume.driver; sysctls at spec.securityContext.sysctls[i].
//   - Sysctls: names written with slashes ("net/ipv4/tcp_syncookies", which 1.37 pods may
//     use) are normalised as the kubelet does before matching, so that a slash spelling
//     cannot slip past a dotted forbiddenSysctls entry. The safe list is 1.24's five.
//   - Seccomp: the policy keeps 1.24's annotations (allowedProfileNames, defaultProfileName;
//     names "runtime/default", "docker/default" (the same profile), "unconfined",
//     "localhost/<path>", "*"). They are applied to the 1.37 fields: a pod's profile is
//     spec.securityContext.seccompProfile, else its legacy
//     seccomp.security.alpha.kubernetes.io/pod annotation; a container's is its own field,
//     else its container.seccomp.security.alpha.kubernetes.io/<name> annotation, else the
//     pod's. Where a field and its annotation both exist they must name the same profile, as
//     pod validation requires. As in 1.24, a policy without allowedProfileNames forbids
//     setting any profile.
//   - AppArmor: likewise from 1.24's annotations (names "runtime/default", "unconfined",
//     "localhost/<profile>") onto securityContext.appArmorProfile (pod and container), with
//     the legacy container.apparmor.security.beta.kubernetes.io/<name> annotation counting
//     for a container without its own field (the pod registry syncs it into the field). As
//     in 1.24, a policy without allowedProfileNames allows any profile.
//   - Windows pods (spec.os.name windows) get no seccomp or AppArmor defaults and are not
//     required to carry a profile: pod validation forbids those fields on them.
//
// How defaults are applied: always as fields, never as annotations, and only where the pod
// has nothing. The seccomp default becomes spec.securityContext.seccompProfile when the pod
// has neither the field nor the legacy pod annotation; when it has only the annotation,
// the field is set from the annotation (as 1.2x's version-skew defaulting did), so the two
// agree and the profile takes effect on 1.37 nodes, which ignore the annotation. The
// AppArmor default becomes spec.securityContext.appArmorProfile when the pod has no
// pod-level profile and some container has no profile of its own. Legacy annotations are
// never added. Defaults are copies: nothing the pod points to afterwards belongs to the
// policy, so policies from a shared informer cache are safe.
//
// The engine is allocation-free for a pod that already complies (see
// BenchmarkProviderValidate): field paths are precomputed, strategies scan small slices
// instead of building sets, and annotation keys are looked up without building strings.
package podsecuritypolicy
