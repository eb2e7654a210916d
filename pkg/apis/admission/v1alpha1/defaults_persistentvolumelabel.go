package v1alpha1

import (
	admissionv1alpha1 "github.com/portcullis-k8s/api/admission/v1alpha1"
)

// SetDefaults_PersistentVolumeLabelConfiguration fills what the configuration leaves out:
// the resolvers that need no configuration (and Rules after them when rules are given), GA
// label keys, upstream's node affinity rule, and unresolved volumes admitted.
func SetDefaults_PersistentVolumeLabelConfiguration(cfg *admissionv1alpha1.PersistentVolumeLabelConfiguration) {
	if cfg.Resolvers == nil {
		cfg.Resolvers = []admissionv1alpha1.PersistentVolumeLabelResolverName{
			admissionv1alpha1.PersistentVolumeLabelResolverCSITopology,
			admissionv1alpha1.PersistentVolumeLabelResolverNodes,
			admissionv1alpha1.PersistentVolumeLabelResolverVolumeID,
		}
		if len(cfg.Rules) > 0 {
			cfg.Resolvers = append(cfg.Resolvers, admissionv1alpha1.PersistentVolumeLabelResolverRules)
		}
	}
	if cfg.LabelKeys == "" {
		cfg.LabelKeys = admissionv1alpha1.PersistentVolumeLabelKeysGA
	}
	if cfg.NodeAffinity == "" {
		cfg.NodeAffinity = admissionv1alpha1.PersistentVolumeLabelNodeAffinityAdd
	}
	if cfg.Unresolved == "" {
		cfg.Unresolved = admissionv1alpha1.PersistentVolumeLabelUnresolvedAdmit
	}
}
