package apiserver

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/portcullis-k8s/portcullis/internal/soak"
	"github.com/portcullis-k8s/portcullis/pkg/admission"
	"github.com/portcullis-k8s/portcullis/test/integration/framework"
)

// TestBadInput sends the table of malformed requests (internal/soak) to our server with
// every plugin of ours enabled, and to stock with its default chain and the PodPreset CRD
// installed (so the custom-resource cases take the same path there): ours must refuse each
// with a clear 4xx and never panic, except where upstream's own code answers 5xx or panics,
// in stock too; there ours must answer as stock does.
func TestBadInput(t *testing.T) {
	bins := framework.FindBinaries(t)
	etcd := framework.StartEtcd(t, bins.Etcd)
	var plugins []string
	for _, p := range admission.Plugins() {
		plugins = append(plugins, p.Name)
	}
	// Our webhook dispatch replaces upstream's, and is on by default.
	ours := framework.StartAPIServer(t, bins.APIServer, etcd, "--etcd-prefix=/badinput",
		"--allow-privileged=true", "--enable-admission-plugins="+strings.Join(plugins, ","))
	stock := framework.StartAPIServer(t, bins.StockAPIServer, etcd, "--etcd-prefix=/badinput-stock", "--allow-privileged=true")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := soak.InstallPodPresetCRD(ctx, stock.Config); err != nil {
		t.Fatal(err)
	}

	const namespace = "badinput"
	cases := soak.BadInputs(namespace)
	run := func(server *framework.APIServer) map[string]soak.BadInputResult {
		t.Helper()
		if err := soak.PrepareBadInputs(ctx, server.Client, namespace); err != nil {
			t.Fatal(err)
		}
		if err := soak.WaitForBadInputWebhooks(ctx, server.Client, namespace); err != nil {
			t.Fatal(err)
		}
		results, err := soak.RunBadInputs(ctx, server.Config, cases)
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]soak.BadInputResult{}
		for _, r := range results {
			byName[r.Case.Name] = r
		}
		return byName
	}
	start := time.Now()
	oursResults := run(ours)
	t.Logf("preparing and running the table against ours took %v", time.Since(start).Round(time.Millisecond))
	stockResults := run(stock)

	var table strings.Builder
	for _, c := range cases {
		o, s := oursResults[c.Name], stockResults[c.Name]
		if c.Twin != "" {
			s = stockResults[c.Twin]
		}
		fmt.Fprintf(&table, "%-100s %-26s ours %3d %-21s stock %3d %s\n", c.Name, c.Plugin, o.Status, o.Reason, s.Status, s.Reason)
		t.Run(c.Name, func(t *testing.T) {
			if o.SameFailureAs(s) {
				t.Logf("upstream's own answer, stock's too: %d %s", s.Status, s.Message)
				return
			}
			if !o.Clear() {
				t.Errorf("ours: %d %s: %q; want a clear 4xx (stock: %d %s: %q)", o.Status, o.Reason, o.Message, s.Status, s.Reason, s.Message)
				return
			}
			if c.Want != 0 && o.Status != c.Want {
				t.Errorf("ours: %d %s: %q; want %d", o.Status, o.Reason, o.Message, c.Want)
			}
		})
	}
	t.Logf("case, plugin, our status and reason, stock's:\n%s", table.String())

	t.Run("CleanupBadInputs removes what the table needed", func(t *testing.T) {
		for _, server := range []*framework.APIServer{ours, stock} {
			if err := soak.CleanupBadInputs(ctx, server.Client, namespace); err != nil {
				t.Error(err)
			}
		}
	})

	t.Run("our server panicked on no request stock did not panic on, and nowhere else", func(t *testing.T) {
		oursPanics, err := soak.FindPanics(ours.LogFile)
		if err != nil {
			t.Fatal(err)
		}
		stockPanics, err := soak.FindPanics(stock.LogFile)
		if err != nil {
			t.Fatal(err)
		}
		total := 0
		for request, n := range oursPanics.Requests {
			total += n
			if stockPanics.Requests[request] == 0 {
				t.Errorf("ours panicked serving %s, stock did not (%s)", request, ours.LogFile)
			} else {
				t.Logf("upstream's panic, stock's too: %d× %s", n, request)
			}
		}
		if oursPanics.Count != total {
			t.Errorf("%s reports %d panics, %d of them serving requests; the first reports: %q", ours.LogFile, oursPanics.Count, total, oursPanics.First)
		}
	})
}
