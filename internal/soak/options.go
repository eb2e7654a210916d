package soak

import (
	"errors"
	"fmt"
	"io"
	"time"

	admissionv1alpha1 "github.com/portcullis-k8s/portcullis/pkg/apis/admission/v1alpha1"
)

// Binary names, as the report and the results call the servers compared.
const (
	Ours  = "ours"
	Stock = "stock"
)

// Options say what to run and how much.
type Options struct {
	// BinDir holds kube-apiserver (ours), kube-apiserver-stock and etcd.
	BinDir string
	// WorkDir receives PKI, etcd data and every server's log. It must exist.
	WorkDir string
	// Progress receives a line per step; nil discards them.
	Progress io.Writer

	// Binaries are the servers each scenario runs on, among Ours and Stock, in order.
	Binaries []string
	// Load sizes every run's pod creates.
	Load LoadOptions
	// Faults are the faults to inject, each in a run of its own, in order.
	Faults []FaultKind
	// Timings of the faults.
	WebhookDown time.Duration
	// EtcdDown is how long etcd stays dead after its SIGKILL before it is restarted.
	EtcdDown time.Duration
	// SlowDelay is what the proxy between kube-apiserver and etcd adds to every chunk of
	// data, either way, for SlowFor.
	SlowDelay, SlowFor time.Duration
	// FaultAt is the fraction of the run's creates answered before the fault starts, so
	// that the load is in full swing and has creates left for the recovery.
	FaultAt float64

	// HA runs the pair of ours behind a TCP balancer on one etcd and kills one under load.
	HA bool
	// HAKillDown is how long the killed server of the pair stays down before it restarts.
	HAKillDown time.Duration
	// HACluster runs two of ours on a three-member etcd over TLS through a rolling restart
	// under load (with HA).
	HACluster bool

	// BadInputs runs the malformed-request table against ours and stock.
	BadInputs bool
	// FuzzReport is the TSV report hack/fuzz.sh wrote; empty or missing: "not run".
	FuzzReport string

	// IRFlood sizes the InitialResources flood (ours only); no images: not run.
	IRFlood IRFloodOptions
}

// LoadOptions size the pod creates of one run.
type LoadOptions struct {
	// Pods is how many pod creates the run sends, each under a name of its own, once.
	Pods int
	// Clients is how many client-go clients send them concurrently, each on its own
	// connection, in a closed loop.
	Clients int
	// RefuseEvery marks every n-th pod with the label the failing validating webhook
	// refuses, so that every run has refusals to check for in etcd.
	RefuseEvery int
	// Timeout bounds the run's creates; creates still unsent when it passes are not sent.
	Timeout time.Duration
	// Backoff is a client's pause after a failed create, doubled after each further
	// failure up to MaxBackoff and reset by a success: clients as real ones behave, which
	// also keeps an outage from using up the run's names.
	Backoff, MaxBackoff time.Duration
	// EtcdFsync keeps etcd's fsync: the loss check then holds against a machine crash too.
	// Off (--unsafe-no-fsync) still keeps every write through a process kill, which is what
	// the faults inject, since the kernel keeps the page cache.
	EtcdFsync bool
}

// FaultKind names a fault.
type FaultKind string

const (
	// FaultWebhookKill kills the webhook server (all four webhooks) and restarts it on the
	// same port after WebhookDown.
	FaultWebhookKill FaultKind = "webhook-kill"
	// FaultEtcdKill SIGKILLs etcd and restarts it, on the same data dir and ports, after
	// EtcdDown.
	FaultEtcdKill FaultKind = "etcd-kill"
	// FaultSlowEtcd delays every chunk between kube-apiserver and etcd by SlowDelay for
	// SlowFor, through a proxy on loopback.
	FaultSlowEtcd FaultKind = "slow-etcd"
)

// AllFaults are the single-server faults, in the order the report lists them.
var AllFaults = []FaultKind{FaultWebhookKill, FaultEtcdKill, FaultSlowEtcd}

// DefaultOptions are `make soak`'s sizes: the 10,000 creates from 16 clients, every
// fault on both servers, and the HA pair; about 15 minutes on two cores.
func DefaultOptions() Options {
	return Options{
		Binaries: []string{Ours, Stock},
		Load: LoadOptions{
			Pods: 10000, Clients: 16, RefuseEvery: 50, Timeout: 5 * time.Minute,
			Backoff: 100 * time.Millisecond, MaxBackoff: time.Second, EtcdFsync: true,
		},
		Faults:      AllFaults,
		WebhookDown: 5 * time.Second,
		EtcdDown:    5 * time.Second,
		SlowDelay:   100 * time.Millisecond,
		SlowFor:     10 * time.Second,
		FaultAt:     0.2,
		HA:          true,
		HAKillDown:  5 * time.Second,
		HACluster:   true,
		BadInputs:   true,
		// A control pass of 60,000 images, and two passes of at most as many from 6
		// namespaces, half from the greedy namespace (which keeps at most a quarter): each
		// sends until the default caches reach 10,000 entries (short references) or 4 MiB
		// (long: about 8,300 entries), and 2,000 more. The plugin sheds most lookups of a
		// flood faster than its two running lookups, so filling takes several times the
		// entries.
		IRFlood: IRFloodOptions{Images: 60000, Namespaces: 6, Clients: 12, Timeout: 5 * time.Minute,
			CacheEntries: int(admissionv1alpha1.DefaultCacheEntries), CacheBytes: 4 << 20},
	}
}

// SmokeOptions are `make test`'s: every fault once per server at a small scale, the HA
// pair's kill included, with short outages, and a small InitialResources flood; no etcd
// cluster, no bad inputs.
func SmokeOptions() Options {
	o := DefaultOptions()
	o.Load.Pods, o.Load.Clients, o.Load.RefuseEvery = 300, 4, 25
	o.Load.Timeout = 2 * time.Minute
	o.Load.EtcdFsync = false
	o.WebhookDown, o.EtcdDown, o.HAKillDown = 2*time.Second, 2*time.Second, 2*time.Second
	o.SlowDelay, o.SlowFor = 50*time.Millisecond, 2*time.Second
	o.HACluster, o.BadInputs = false, false
	// Caches of 400 entries and 160 KiB, which each pass's references fill (half from the
	// greedy namespace, which keeps at most 100): the short ones (about 310 bytes an entry)
	// to their entries, the long ones (about 500) to their bytes; at most 2,400 a pass.
	o.IRFlood = IRFloodOptions{Images: 2400, Namespaces: 6, Clients: 6, Timeout: 2 * time.Minute, CacheEntries: 400, CacheBytes: 160 << 10}
	return o
}

// Validate reports every option that cannot work.
func (o Options) Validate() error {
	var errs []error
	if o.BinDir == "" {
		errs = append(errs, errors.New("the bin dir is not set"))
	}
	if o.WorkDir == "" {
		errs = append(errs, errors.New("the work dir is not set"))
	}
	if len(o.Binaries) == 0 {
		errs = append(errs, errors.New("no binary to run"))
	}
	seen := map[string]bool{}
	for _, b := range o.Binaries {
		if b != Ours && b != Stock {
			errs = append(errs, fmt.Errorf("unknown binary %q (want %q or %q)", b, Ours, Stock))
		}
		if seen[b] {
			errs = append(errs, fmt.Errorf("binary %q listed twice", b))
		}
		seen[b] = true
	}
	l := o.Load
	if l.Pods < 1 || l.Clients < 1 {
		errs = append(errs, fmt.Errorf("the load needs at least one pod and one client (got %d pods, %d clients)", l.Pods, l.Clients))
	}
	if l.RefuseEvery < 2 {
		errs = append(errs, fmt.Errorf("refuse-every must be at least 2, got %d", l.RefuseEvery))
	}
	positive := func(name string, d time.Duration) {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, got %s", name, d))
		}
	}
	positive("load timeout", l.Timeout)
	positive("backoff", l.Backoff)
	if l.MaxBackoff < l.Backoff {
		errs = append(errs, fmt.Errorf("max backoff %s is below the backoff %s", l.MaxBackoff, l.Backoff))
	}
	for _, f := range o.Faults {
		switch f {
		case FaultWebhookKill:
			positive("webhook down time", o.WebhookDown)
		case FaultEtcdKill:
			if o.EtcdDown < 0 {
				errs = append(errs, fmt.Errorf("etcd down time must not be negative, got %s", o.EtcdDown))
			}
		case FaultSlowEtcd:
			positive("slow-etcd delay", o.SlowDelay)
			positive("slow-etcd duration", o.SlowFor)
			if o.SlowDelay > maxProxyDelay {
				errs = append(errs, fmt.Errorf("slow-etcd delay %s is above the proxy's limit %s", o.SlowDelay, maxProxyDelay))
			}
		default:
			errs = append(errs, fmt.Errorf("unknown fault %q", f))
		}
	}
	if len(o.Faults) > 0 || o.HA {
		if !(o.FaultAt > 0 && o.FaultAt < 1) {
			errs = append(errs, fmt.Errorf("fault-at must be a fraction between 0 and 1, got %v", o.FaultAt))
		}
	}
	if o.HA {
		positive("HA kill down time", o.HAKillDown)
	}
	if f := o.IRFlood; f.Images < 0 {
		errs = append(errs, fmt.Errorf("the InitialResources flood's images must not be negative, got %d", f.Images))
	} else if f.Images > 0 {
		if f.Clients < 1 {
			errs = append(errs, fmt.Errorf("the InitialResources flood needs at least one client, got %d", f.Clients))
		}
		if f.Namespaces < 2 {
			errs = append(errs, fmt.Errorf("the InitialResources flood needs at least two namespaces (a greedy one and others), got %d", f.Namespaces))
		}
		if f.CacheEntries < 1 || f.CacheBytes < 1 {
			errs = append(errs, fmt.Errorf("the InitialResources flood needs the caches' sizes, got %d entries and %d bytes", f.CacheEntries, f.CacheBytes))
		} else if others, greedy := f.Images*3/8, min(f.Images*3/8, f.CacheEntries/4); others+greedy < f.CacheEntries*11/10 {
			// Three quarters of the images are references, half of them the greedy
			// namespace's, which keeps at most a quarter of the entries.
			errs = append(errs, fmt.Errorf("the InitialResources flood's %d images cannot fill caches of %d entries with a tenth to spare: %d references from the other namespaces and %d kept of the greedy one's", f.Images, f.CacheEntries, others, greedy))
		}
		positive("InitialResources flood timeout", f.Timeout)
	}
	return errors.Join(errs...)
}
