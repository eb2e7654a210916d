// Package storage is the REST storage of policy/v1beta1 PodSecurityPolicy.
package storage

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metatable "k8s.io/apimachinery/pkg/api/meta/table"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/portcullis-k8s/portcullis/pkg/apis/policy"
	"github.com/portcullis-k8s/portcullis/pkg/registry/policy/podsecuritypolicy"
)

// REST stores PodSecurityPolicies.
type REST struct {
	*genericregistry.Store
}

var (
	_ rest.ShortNamesProvider = &REST{}
	_ rest.CategoriesProvider = &REST{}
)

// NewREST returns the storage of PodSecurityPolicies.
func NewREST(optsGetter generic.RESTOptionsGetter) (*REST, error) {
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &policy.PodSecurityPolicy{} },
		NewListFunc:               func() runtime.Object { return &policy.PodSecurityPolicyList{} },
		DefaultQualifiedResource:  policy.Resource("podsecuritypolicies"),
		SingularQualifiedResource: policy.Resource("podsecuritypolicy"),

		CreateStrategy: podsecuritypolicy.Strategy,
		UpdateStrategy: podsecuritypolicy.Strategy,
		DeleteStrategy: podsecuritypolicy.Strategy,
		// DELETE answers with the deleted policy, as 1.24 did, not with a Status.
		ReturnDeletedObject: true,

		TableConvertor: tableConvertor{},
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter}); err != nil {
		return nil, err
	}
	return &REST{store}, nil
}

// ShortNames is what kubectl accepts for the resource: kubectl get psp.
func (r *REST) ShortNames() []string { return []string{"psp"} }

// Categories: PodSecurityPolicy was in no category in 1.24.
func (r *REST) Categories() []string { return nil }

// tableConvertor prints the columns kubectl get psp printed in 1.24: their names, and the
// cells as 1.24 formatted them (Priv as text); 1.24 printed no age.
type tableConvertor struct{}

var columns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
	{Name: "Priv", Type: "string", Description: "Whether privileged containers are allowed."},
	{Name: "Caps", Type: "string", Description: "Capabilities containers may add."},
	{Name: "SELinux", Type: "string", Description: "The SELinux context strategy."},
	{Name: "RunAsUser", Type: "string", Description: "The user ID strategy."},
	{Name: "FsGroup", Type: "string", Description: "The fsGroup strategy."},
	{Name: "SupGroup", Type: "string", Description: "The supplemental groups strategy."},
	{Name: "ReadOnlyRootFs", Type: "string", Description: "Whether containers must run with a read-only root filesystem."},
	{Name: "Volumes", Type: "string", Description: "The volume types pods may use."},
}

func (tableConvertor) ConvertToTable(_ context.Context, obj runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	table := &metav1.Table{}
	if opt, ok := tableOptions.(*metav1.TableOptions); !ok || !opt.NoHeaders {
		table.ColumnDefinitions = columns
	}
	fn := func(obj runtime.Object, m metav1.Object, name, _ string) ([]interface{}, error) {
		psp, ok := obj.(*policy.PodSecurityPolicy)
		if !ok {
			return nil, fmt.Errorf("not a PodSecurityPolicy: %T", obj)
		}
		s := psp.Spec
		caps := make([]string, len(s.AllowedCapabilities))
		for i, c := range s.AllowedCapabilities {
			caps[i] = string(c)
		}
		volumes := make([]string, len(s.Volumes))
		for i, v := range s.Volumes {
			volumes[i] = string(v)
		}
		return []interface{}{name, strconv.FormatBool(s.Privileged), strings.Join(caps, ","), string(s.SELinux.Rule), string(s.RunAsUser.Rule),
			string(s.FSGroup.Rule), string(s.SupplementalGroups.Rule), s.ReadOnlyRootFilesystem, strings.Join(volumes, ",")}, nil
	}
	var err error
	table.Rows, err = metatable.MetaToTableRow(obj, fn)
	if err != nil {
		return nil, err
	}
	if m, err := meta.ListAccessor(obj); err == nil {
		table.ResourceVersion = m.GetResourceVersion()
		table.Continue = m.GetContinue()
		table.RemainingItemCount = m.GetRemainingItemCount()
	} else if m, err := meta.CommonAccessor(obj); err == nil {
		table.ResourceVersion = m.GetResourceVersion()
	}
	return table, nil
}
