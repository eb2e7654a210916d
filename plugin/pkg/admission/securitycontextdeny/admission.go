// Package securitycontextdeny restores the SecurityContextDeny admission controller that
// upstream removed in Kubernetes 1.30. It rejects pods that set the security-context fields
// that would let a workload pick its own user, groups or SELinux labels. Clusters that cannot
// run PodSecurity's "restricted" profile still use it as a blunt, easy-to-audit guard.
//
// Unlike the old upstream plugin it also checks ephemeral containers added through the
// pods/ephemeralcontainers subresource, which used to slip past it.
package securitycontextdeny

import (
	"context"
	"errors"
	"io"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	api "k8s.io/kubernetes/pkg/apis/core"
)

// PluginName is the name of this admission controller, as given to --enable-admission-plugins.
const PluginName = "SecurityContextDeny"

// Register registers the plugin. It takes no configuration.
func Register(plugins *admission.Plugins) {
	plugins.Register(PluginName, func(io.Reader) (admission.Interface, error) {
		return New(), nil
	})
}

// Plugin rejects pods that set forbidden security-context fields.
type Plugin struct {
	*admission.Handler
}

var _ admission.ValidationInterface = &Plugin{}

// New returns a SecurityContextDeny plugin handling CREATE and UPDATE.
func New() *Plugin {
	return &Plugin{Handler: admission.NewHandler(admission.Create, admission.Update)}
}

var (
	podsResource           = api.Resource("pods")
	ephemeralContainersSub = "ephemeralcontainers"
)

// Validate rejects a pod, or an ephemeral-container update, that sets a forbidden field.
func (p *Plugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetResource().GroupResource() != podsResource {
		return nil
	}
	subresource := a.GetSubresource()
	if subresource != "" && subresource != ephemeralContainersSub {
		return nil
	}
	pod, ok := a.GetObject().(*api.Pod)
	if !ok {
		return apierrors.NewBadRequest("SecurityContextDeny: the object of a pods request is not a Pod")
	}

	var forbidden []string
	if subresource == ephemeralContainersSub {
		// Only ephemeral containers can change through this subresource, and only by being
		// added: judge the new ones, so that a pod holding a non-compliant one from before the
		// plugin was enabled can still take a compliant one.
		oldPod, _ := a.GetOldObject().(*api.Pod)
		forbidden = addedEphemeralContainerViolations(pod, oldPod, nil)
	} else {
		forbidden = podViolations(pod, nil)
	}
	if len(forbidden) == 0 {
		return nil
	}
	return admission.NewForbidden(a, errors.New(strings.Join(forbidden, "; ")))
}

// podViolations appends a message for each forbidden field set in the pod's own security
// context or in any init or regular container. It allocates nothing when there is none.
//
// The pod-level messages keep the old plugin's wording, which operators may match on.
func podViolations(pod *api.Pod, out []string) []string {
	if sc := pod.Spec.SecurityContext; sc != nil {
		if sc.SupplementalGroups != nil {
			out = append(out, "pod.Spec.SecurityContext.SupplementalGroups is forbidden")
		}
		if sc.SELinuxOptions != nil {
			out = append(out, "pod.Spec.SecurityContext.SELinuxOptions is forbidden")
		}
		if sc.RunAsUser != nil {
			out = append(out, "pod.Spec.SecurityContext.RunAsUser is forbidden")
		}
		if sc.FSGroup != nil {
			out = append(out, "pod.Spec.SecurityContext.FSGroup is forbidden")
		}
	}
	for i := range pod.Spec.InitContainers {
		out = containerViolations(pod.Spec.InitContainers[i].SecurityContext, "initContainers", i, out)
	}
	for i := range pod.Spec.Containers {
		out = containerViolations(pod.Spec.Containers[i].SecurityContext, "containers", i, out)
	}
	return out
}

// addedEphemeralContainerViolations appends a message for each forbidden field set in an
// ephemeral container of pod that oldPod does not have (by name: the API server refuses any
// change to an existing ephemeral container). With no old pod, every one is new.
func addedEphemeralContainerViolations(pod, oldPod *api.Pod, out []string) []string {
	for i := range pod.Spec.EphemeralContainers {
		ec := &pod.Spec.EphemeralContainers[i]
		if oldPod != nil && hasEphemeralContainer(oldPod, ec.Name) {
			continue
		}
		out = containerViolations(ec.SecurityContext, "ephemeralContainers", i, out)
	}
	return out
}

func hasEphemeralContainer(pod *api.Pod, name string) bool {
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].Name == name {
			return true
		}
	}
	return false
}

func containerViolations(sc *api.SecurityContext, list string, index int, out []string) []string {
	if sc == nil {
		return out
	}
	if sc.SELinuxOptions != nil {
		out = append(out, forbiddenField(list, index, "seLinuxOptions"))
	}
	if sc.RunAsUser != nil {
		out = append(out, forbiddenField(list, index, "runAsUser"))
	}
	return out
}

func forbiddenField(list string, index int, name string) string {
	return field.NewPath("spec", list).Index(index).Child("securityContext", name).String() + " is forbidden"
}
