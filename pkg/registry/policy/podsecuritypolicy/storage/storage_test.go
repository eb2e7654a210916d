package storage

import (
	"context"
	"reflect"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	api "k8s.io/kubernetes/pkg/apis/core"

	"github.com/portcullis-k8s/portcullis/pkg/apis/policy"
)

// TestTableIs124s: kubectl get psp shows 1.24's columns and cells, for one policy and for a
// list, and no header with noHeaders.
func TestTableIs124s(t *testing.T) {
	psp := policy.PodSecurityPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "restricted"},
		Spec: policy.PodSecurityPolicySpec{
			Privileged:             false,
			AllowedCapabilities:    []api.Capability{"NET_BIND_SERVICE", "SYS_TIME"},
			SELinux:                policy.SELinuxStrategyOptions{Rule: policy.SELinuxStrategyRunAsAny},
			RunAsUser:              policy.RunAsUserStrategyOptions{Rule: policy.RunAsUserStrategyMustRunAsNonRoot},
			FSGroup:                policy.FSGroupStrategyOptions{Rule: policy.FSGroupStrategyMustRunAs},
			SupplementalGroups:     policy.SupplementalGroupsStrategyOptions{Rule: policy.SupplementalGroupsStrategyMayRunAs},
			ReadOnlyRootFilesystem: true,
			Volumes:                []policy.FSType{policy.ConfigMap, policy.Secret},
		},
	}
	wantColumns := []string{"Name", "Priv", "Caps", "SELinux", "RunAsUser", "FsGroup", "SupGroup", "ReadOnlyRootFs", "Volumes"}
	wantCells := []any{"restricted", "false", "NET_BIND_SERVICE,SYS_TIME", "RunAsAny", "MustRunAsNonRoot", "MustRunAs", "MayRunAs", true, "configMap,secret"}

	tc := tableConvertor{}
	for _, in := range []struct {
		name string
		obj  runtime.Object
		rows int
	}{
		{"one policy", &psp, 1},
		{"a list", &policy.PodSecurityPolicyList{Items: []policy.PodSecurityPolicy{psp, psp}}, 2},
	} {
		t.Run(in.name, func(t *testing.T) {
			table, err := tc.ConvertToTable(context.Background(), in.obj, nil)
			if err != nil {
				t.Fatal(err)
			}
			var columns []string
			for _, c := range table.ColumnDefinitions {
				columns = append(columns, c.Name)
			}
			if !slices.Equal(columns, wantColumns) {
				t.Errorf("columns %v, want %v", columns, wantColumns)
			}
			if len(table.Rows) != in.rows {
				t.Fatalf("%d rows, want %d", len(table.Rows), in.rows)
			}
			for _, row := range table.Rows {
				if !reflect.DeepEqual(row.Cells, wantCells) {
					t.Errorf("cells %#v, want %#v", row.Cells, wantCells)
				}
			}
		})
	}
	table, err := tc.ConvertToTable(context.Background(), &psp, &metav1.TableOptions{NoHeaders: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(table.ColumnDefinitions) != 0 {
		t.Errorf("noHeaders: %d column definitions, want none", len(table.ColumnDefinitions))
	}
}
