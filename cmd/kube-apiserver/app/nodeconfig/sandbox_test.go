package nodeconfig

import (
	"strings"
	"testing"
)

func TestSandbox(t *testing.T) {
	// The shipped unit's sandbox (build/deploy/systemd/kube-apiserver.service).
	shipped := map[string][]string{
		"ProtectSystem": {"strict"},
		"LogsDirectory": {"kube-apiserver"},
		"ProtectHome":   {"yes"},
		"PrivateTmp":    {"yes"},
	}
	with := func(extra map[string][]string) map[string][]string {
		out := map[string][]string{}
		for k, v := range shipped {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	tests := []struct {
		name          string
		settings      map[string][]string
		path          string
		write         bool
		wantReasonHas string // "" for no reason
	}{
		{name: "the audit log in LogsDirectory", settings: shipped, path: "/var/log/kube-apiserver/audit.log", write: true},
		{name: "the audit log elsewhere under strict", settings: shipped, path: "/var/log/audit/kube-apiserver.log", write: true,
			wantReasonHas: "ProtectSystem=strict makes / read-only (the service may write only under /var/log/kube-apiserver): add ReadWritePaths=/var/log/audit/kube-apiserver.log"},
		{name: "made writable by ReadWritePaths", settings: with(map[string][]string{"ReadWritePaths": {"-/var/log/audit"}}), path: "/var/log/audit/kube-apiserver.log", write: true},
		{name: "ReadOnlyPaths under a writable directory", settings: with(map[string][]string{"ReadOnlyPaths": {"/var/log/kube-apiserver/archive"}}), path: "/var/log/kube-apiserver/archive/a.log", write: true,
			wantReasonHas: "ReadOnlyPaths=/var/log/kube-apiserver/archive makes /var/log/kube-apiserver/archive read-only"},
		{name: "reading under strict", settings: shipped, path: "/etc/kubernetes/pki/apiserver.crt"},
		{name: "reading root's home", settings: shipped, path: "/root/pki/apiserver.crt", wantReasonHas: "ProtectHome=yes hides /root"},
		{name: "reading the host's /tmp", settings: shipped, path: "/tmp/audit-policy.yaml", wantReasonHas: "PrivateTmp=yes gives the service a /tmp of its own"},
		{name: "writing the host's /var/tmp", settings: shipped, path: "/var/tmp/audit.log", write: true, wantReasonHas: "PrivateTmp=yes"},
		{name: "InaccessiblePaths", settings: map[string][]string{"InaccessiblePaths": {"-/srv /opt/secret"}}, path: "/opt/secret/key", wantReasonHas: "InaccessiblePaths=/opt/secret hides it"},
		{name: "ProtectSystem=full keeps /var writable", settings: map[string][]string{"ProtectSystem": {"full"}}, path: "/var/lib/kube-apiserver/x", write: true},
		{name: "ProtectSystem=full protects /etc", settings: map[string][]string{"ProtectSystem": {"full"}}, path: "/etc/kubernetes/audit.log", write: true, wantReasonHas: "ProtectSystem=full makes /etc read-only"},
		{name: "ProtectSystem=yes leaves /etc writable", settings: map[string][]string{"ProtectSystem": {"yes"}}, path: "/etc/kubernetes/audit.log", write: true},
		{name: "ProtectHome=read-only: reading", settings: map[string][]string{"ProtectHome": {"read-only"}}, path: "/home/ops/policy.yaml"},
		{name: "ProtectHome=read-only: writing", settings: map[string][]string{"ProtectHome": {"read-only"}}, path: "/home/ops/audit.log", write: true, wantReasonHas: "ProtectHome=read-only makes /home read-only"},
		{name: "the last assignment wins", settings: map[string][]string{"ProtectSystem": {"strict", "no"}}, path: "/var/log/audit.log", write: true},
		{name: "no sandbox", settings: map[string][]string{}, path: "/tmp/x", write: true},
		{name: "StateDirectory", settings: with(map[string][]string{"StateDirectory": {"kube-apiserver:0750"}}), path: "/var/lib/kube-apiserver/certs", write: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &SystemdService{Settings: tc.settings}
			got := s.CannotRead(tc.path)
			if tc.write {
				got = s.CannotWrite(tc.path)
			}
			switch {
			case tc.wantReasonHas == "" && got != "":
				t.Errorf("want no reason, got %q", got)
			case tc.wantReasonHas != "" && !strings.Contains(got, tc.wantReasonHas):
				t.Errorf("want a reason saying %q, got %q", tc.wantReasonHas, got)
			}
		})
	}
}
