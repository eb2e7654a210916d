package app

import (
	"context"
	"strings"
	"testing"

	"github.com/portcullis-k8s/portcullis/cmd/kube-apiserver/app/preflight"
)

// TestPreflightUnderTheServerCommand runs preflight as the binary does, a subcommand of the
// server's command (its persistent hooks first): its exit codes reach main's context.
func TestPreflightUnderTheServerCommand(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		{name: "a flag preflight does not know", args: []string{"preflight", "--no-such-flag"}, want: preflight.ExitUsage},
		{name: "nothing to check", args: []string{"preflight"}, want: preflight.ExitUsage},
		{name: "--image-release alone", args: []string{"preflight", "--image-release=v1.37.2", "--", "--etcd-servers=https://127.0.0.1:2379"}, want: preflight.ExitUsage},
		{name: "--image-release that is no release", args: []string{"preflight", "--image-release=latest", "--kubeadm-patches=/nonexistent"}, want: preflight.ExitUsage},
		{name: "--kubeconfig without what to read", args: []string{"preflight", "--kubeconfig=/nonexistent"}, want: preflight.ExitUsage},
		{name: "--rollback alone", args: []string{"preflight", "--rollback"}, want: preflight.ExitUsage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var code int
			cmd, err := NewAPIServerCommand(preflight.WithExitCode(context.Background(), &code))
			if err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			cmd.SetOut(&out)
			cmd.SetErr(&out)
			cmd.SetArgs(tc.args)
			if err := cmd.Execute(); err == nil || code != tc.want {
				t.Errorf("kube-apiserver %q: error %v, exit code %d; want an error and exit code %d\n%s", tc.args, err, code, tc.want, out.String())
			}
		})
	}
}
