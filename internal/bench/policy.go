package bench

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/portcullis-k8s/portcullis/internal/controlplane"
)

// The ways table 2 runs the policy, in the table's order.
const (
	PolicyBaseline = "none (baseline)"
	PolicyPlugin   = "SecurityContextDeny, compiled in"
	PolicyCEL      = "ValidatingAdmissionPolicy (CEL)"
	PolicyWebhook  = "validating webhook, HTTPS on loopback"
)

// PolicyRuns are one configuration's runs, one per repetition.
type PolicyRuns struct {
	Name string
	Runs []LoadRun
}

// PolicyResult is table 2: the same policy three ways, and no policy.
type PolicyResult struct {
	Options PolicyOptions
	// Configs[0] is the baseline; Configs[i].Runs[r] ran in repetition r, as did the
	// baseline's Runs[r].
	Configs []PolicyRuns
}

// policyApplyTimeout bounds the wait for a policy to come into or go out of force.
const policyApplyTimeout = time.Minute

const policyNamespace = "bench-policy"

// runPolicy measures pod creates on our server with no policy, with SecurityContextDeny
// enabled (a second server: the plugin is chosen by flag), with an equivalent
// ValidatingAdmissionPolicy and with an equivalent webhook. Each repetition measures every
// configuration once, starting with a different one each time; the policy and the webhook
// are installed for their own runs only.
func runPolicy(ctx context.Context, env *environment, opts PolicyOptions) (result *PolicyResult, err error) {
	dir := filepath.Join(env.workDir, "policy")
	etcd, err := startEtcd(ctx, env.etcdBinary, filepath.Join(dir, "etcd"))
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, etcd.stop()) }()
	plain, err := startAPIServer(ctx, env.oursBinary, env.pki, filepath.Join(dir, "default-chain"), etcd.clientURL, "--etcd-prefix=/default-chain")
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, plain.stop()) }()
	withPlugin, err := startAPIServer(ctx, env.oursBinary, env.pki, filepath.Join(dir, "securitycontextdeny"), etcd.clientURL,
		"--etcd-prefix=/securitycontextdeny", "--enable-admission-plugins=SecurityContextDeny")
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, withPlugin.stop()) }()
	webhooks, err := startWebhookServer(filepath.Join(dir, "webhook"), 0)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, webhooks.close()) }()

	for _, s := range []*apiServer{plain, withPlugin} {
		if err := loadNamespace(ctx, s.client, policyNamespace); err != nil {
			return nil, err
		}
		if err := createProbeTarget(ctx, s.client, policyNamespace); err != nil {
			return nil, err
		}
	}
	// The figures mean something only if each way enforces the same rule: the plugin here,
	// the policy and the webhook each time they are installed.
	if err := checkEquivalence(ctx, withPlugin.client, policyNamespace, PolicyPlugin, apierrors.IsForbidden); err != nil {
		return nil, err
	}
	plainClients, err := controlplane.Clients(plain.config, opts.Load.Clients)
	if err != nil {
		return nil, err
	}
	pluginClients, err := controlplane.Clients(withPlugin.config, opts.Load.Clients)
	if err != nil {
		return nil, err
	}

	policy, binding := securityContextDenyPolicy()
	webhookConfig := securityContextDenyWebhook(webhooks)
	admissionAPI := plain.client.AdmissionregistrationV1()
	type configuration struct {
		name    string
		clients []kubernetes.Interface
		// install puts the policy in force on the default-chain server; uninstall removes it.
		install, uninstall func(context.Context) error
	}
	configs := []configuration{
		{name: PolicyBaseline, clients: plainClients},
		{name: PolicyPlugin, clients: pluginClients},
		{
			name: PolicyCEL, clients: plainClients,
			install: func(ctx context.Context) error {
				if _, err := admissionAPI.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
					return err
				}
				_, err := admissionAPI.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{})
				return err
			},
			uninstall: func(ctx context.Context) error {
				return errors.Join(
					admissionAPI.ValidatingAdmissionPolicyBindings().Delete(ctx, binding.Name, metav1.DeleteOptions{}),
					admissionAPI.ValidatingAdmissionPolicies().Delete(ctx, policy.Name, metav1.DeleteOptions{}))
			},
		},
		{
			name: PolicyWebhook, clients: plainClients,
			install: func(ctx context.Context) error {
				_, err := admissionAPI.ValidatingWebhookConfigurations().Create(ctx, webhookConfig, metav1.CreateOptions{})
				return err
			},
			uninstall: func(ctx context.Context) error {
				return admissionAPI.ValidatingWebhookConfigurations().Delete(ctx, webhookConfig.Name, metav1.DeleteOptions{})
			},
		},
	}

	result = &PolicyResult{Options: opts, Configs: make([]PolicyRuns, len(configs))}
	for i, c := range configs {
		result.Configs[i].Name = c.name
	}
	for rep := range opts.Repetitions {
		for k := range configs {
			i := (rep + k) % len(configs)
			c := configs[i]
			if c.install != nil {
				if err := c.install(ctx); err != nil {
					return nil, fmt.Errorf("installing the %s: %w", c.name, err)
				}
				if err := waitForPolicy(ctx, plain.client, true); err != nil {
					return nil, fmt.Errorf("%s: %w", c.name, err)
				}
				if err := checkEquivalence(ctx, plain.client, policyNamespace, c.name, refusedByMarker); err != nil {
					return nil, err
				}
			}
			run, err := timedCreatesThenDelete(ctx, c.clients, policyNamespace, fmt.Sprintf("config-%d-rep-%d", i, rep+1), opts.Load)
			if err != nil {
				return nil, fmt.Errorf("%s, repetition %d: %w", c.name, rep+1, err)
			}
			if c.uninstall != nil {
				if err := c.uninstall(ctx); err != nil {
					return nil, fmt.Errorf("removing the %s: %w", c.name, err)
				}
				if err := waitForPolicy(ctx, plain.client, false); err != nil {
					return nil, fmt.Errorf("%s: %w", c.name, err)
				}
			}
			env.progressf("policy repetition %d/%d, %s: %.0f creates/s, p50 %s, p99 %s", rep+1, opts.Repetitions, c.name,
				run.Throughput(), run.P50().Round(time.Microsecond), run.P99().Round(time.Microsecond))
			result.Configs[i].Runs = append(result.Configs[i].Runs, run)
		}
	}
	return result, nil
}

// waitForPolicy waits until the harness's policy is in force on the server (enforced) or
// no longer is: until a dry-run create of a pod with runAsUser is refused by it, or admitted.
func waitForPolicy(ctx context.Context, client kubernetes.Interface, enforced bool) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, policyApplyTimeout, true, func(ctx context.Context) (bool, error) {
		last = dryRunCreate(ctx, client, policyNamespace, forbiddenPod("probe"))
		switch {
		case last == nil:
			return !enforced, nil
		case strings.Contains(last.Error(), policyMarker):
			return enforced, nil
		default:
			// Neither admitted nor refused by the policy: a failure to report, not to wait out.
			return false, fmt.Errorf("probing the policy: %w", last)
		}
	})
	if err != nil {
		state := "in force"
		if !enforced {
			state = "out of force"
		}
		return fmt.Errorf("the policy did not come %s within %s (last probe: %v): %w", state, policyApplyTimeout, last, err)
	}
	return nil
}
