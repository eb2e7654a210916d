package install

import api "k8s.io/kubernetes/pkg/apis/core"

type (
	coreCapability     = api.Capability
	coreSELinuxOptions = api.SELinuxOptions
	coreProcMountType  = api.ProcMountType
)
