package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/portcullis-k8s/portcullis/test/integration/framework"
)

// maxHeaderValueCount is k8s.io/apiserver's limit on the header values of one request
// (pkg/server/header_value_count_go127.go), compiled in only with Go 1.27 or newer.
const maxHeaderValueCount = 16384

// TestBuiltWithTheMinorsToolchain holds both binaries to the toolchain the minor's go.mod
// names, and shows what it compiles in: built with Go 1.27 or newer, secure serving refuses a
// request with more header values than upstream allows (431); built with an older Go, as
// upstream builds the older minors, the request goes through, as it does in upstream's own
// release.
func TestBuiltWithTheMinorsToolchain(t *testing.T) {
	bins := framework.FindBinaries(t)
	want := goModToolchain(t)
	for _, binary := range []string{bins.APIServer, bins.StockAPIServer} {
		out, err := exec.Command("go", "version", binary).CombinedOutput()
		if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), ": "+want) {
			t.Errorf("go version %s: %q (%v), want %s", binary, out, err, want)
		}
	}
	flooded := http.StatusOK
	if goAtLeast(want, 1, 27) {
		flooded = http.StatusRequestHeaderFieldsTooLarge
	}

	etcd := framework.StartEtcd(t, bins.Etcd)
	server := framework.StartAPIServer(t, bins.APIServer, etcd, "--etcd-prefix=/toolchain")
	transport, err := rest.TransportFor(server.Config)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: transport}
	readyz := func(values int) int {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, server.Config.Host+"/readyz", nil)
		if err != nil {
			t.Fatal(err)
		}
		for range values {
			req.Header.Add("X-Flood", "1")
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%d header values: %v", values, err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	if got := readyz(100); got != http.StatusOK {
		t.Errorf("100 header values: %d, want 200", got)
	}
	if got := readyz(maxHeaderValueCount + 100); got != flooded {
		t.Errorf("%d header values: %d, want %d (built with %s; Go 1.27 compiles the limit in)", maxHeaderValueCount+100, got, flooded, want)
	}
}

// goAtLeast reports whether toolchain (go1.N.P) is Go major.minor or newer.
func goAtLeast(toolchain string, major, minor int) bool {
	var ma, mi int
	if _, err := fmt.Sscanf(strings.TrimPrefix(toolchain, "go"), "%d.%d", &ma, &mi); err != nil {
		return false
	}
	return ma > major || (ma == major && mi >= minor)
}

// goModToolchain is the minor's go.mod toolchain line (go mod edit reads GOFLAGS' -modfile),
// the Go every binary of the minor is built with.
func goModToolchain(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "mod", "edit", "-json").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), `"Toolchain": "`); ok {
			return strings.TrimSuffix(v, `",`)
		}
	}
	t.Fatal("go.mod has no toolchain line")
	return ""
}
