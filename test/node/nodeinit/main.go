// Command nodeinit is the real node's PID 1 and its systemctl.
//
// The node is a set of namespaces of its own - mount, UTS, network and PID - made by
// `unshare --mount --uts --net --pid --fork --mount-proc` around nodeinit: the paths it is
// given (the node's /etc/kubernetes, /var/lib/kubelet, /var/lib/etcd, the container runtime's
// directories, /root) are directories of the test's, bind-mounted over the host's paths inside
// the node only; /run is a tmpfs of its own. Killing nodeinit kills every process of the node,
// containers included (the kernel kills a PID namespace's members when its init exits), and
// with the last of them the node's mounts, network devices and iptables rules go. What stays
// on the host (the cgroups the kubelet made, the kernel settings it changed) the harness
// removes and restores (test/node).
//
// Run as systemctl (a symlink named so, first on the node's PATH), it asks PID 1 to do what
// systemd does for kubeadm: start, stop and restart the kubelet and containerd units, and
// answer is-active, is-enabled and status. The kubelet unit does what kubeadm's drop-in
// (10-kubeadm.conf) does: it reads /var/lib/kubelet/kubeadm-flags.env and
// /etc/default/kubelet, then runs the kubelet with the drop-in's flags and theirs, and
// restarts it when it exits, as Restart=always does.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// controlSocket is where PID 1 takes systemctl's requests (on the node's own /run).
const controlSocket = "/run/portcullis-node/systemctl.sock"

// restartDelay is Restart=always's pause before a unit that exited is started again
// (kubeadm's kubelet unit waits 10 s; the node is a test's).
const restartDelay = 2 * time.Second

func main() {
	if filepath.Base(os.Args[0]) == "systemctl" {
		os.Exit(systemctl(os.Args[1:]))
	}
	dir := flag.String("dir", "", "the node's directory: one directory per node path, logs/ and bin/")
	hostname := flag.String("hostname", "", "the node's host name")
	prepareHost := flag.Bool("prepare", false, "record, on the host, what a node is about to change (the kernel's settings, the mount points PATH... need, created), then exit")
	cleanHost := flag.Bool("clean", false, "end every node of the machine and remove what nodes left on the host, then exit (hold "+Lock+")")
	veth := flag.String("veth", DefaultVeth, "with -clean: the host's end of the nodes' veth pair")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: nodeinit -dir DIR -hostname NAME PATH...  (PID 1 of a node: each PATH bind-mounted from DIR's directory named after it)")
		fmt.Fprintln(os.Stderr, "       nodeinit -prepare PATH...")
		fmt.Fprintln(os.Stderr, "       nodeinit -clean [-veth NAME]")
		flag.PrintDefaults()
	}
	flag.Parse()
	switch {
	case *prepareHost:
		if err := prepare(flag.Args()); err != nil {
			fmt.Fprintf(os.Stderr, "nodeinit -prepare: %v\n", err)
			os.Exit(1)
		}
	case *cleanHost:
		errs := clean(*veth)
		for _, err := range errs {
			fmt.Fprintf(os.Stderr, "nodeinit -clean: %v\n", err)
		}
		if len(errs) > 0 {
			os.Exit(1)
		}
	default:
		if err := run(*dir, *hostname, flag.Args()); err != nil {
			fmt.Fprintf(os.Stderr, "nodeinit: %v\n", err)
			os.Exit(1)
		}
	}
}

// source is the directory of dir that stands in for a node path.
func source(dir, path string) string {
	return filepath.Join(dir, strings.ReplaceAll(strings.TrimPrefix(path, "/"), "/", "-"))
}

func run(dir, hostname string, nodePaths []string) error {
	if os.Getpid() != 1 {
		return errors.New("not PID 1: run under unshare --mount --uts --net --pid --fork --mount-proc")
	}
	if dir == "" || hostname == "" {
		return errors.New("-dir and -hostname are required")
	}
	// The node dies with the harness: when unshare, its parent, dies (the test was killed;
	// unshare dies with it, Pdeathsig), the kernel kills nodeinit, and with it the node.
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0); errno != 0 {
		return fmt.Errorf("prctl(PR_SET_PDEATHSIG): %w", errno)
	}
	if err := syscall.Sethostname([]byte(hostname)); err != nil {
		return fmt.Errorf("sethostname: %w", err)
	}
	for _, path := range nodePaths {
		src := source(dir, path)
		if err := os.MkdirAll(src, 0o755); err != nil {
			return err
		}
		if err := syscall.Mount(src, path, "", syscall.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind %s on %s: %w", src, path, err)
		}
	}
	// The kubelet's cgroupRoot, in every hierarchy (the kubelet requires it to exist).
	hierarchies, _ := filepath.Glob("/sys/fs/cgroup/*")
	for _, h := range append(hierarchies, "/sys/fs/cgroup") {
		if info, err := os.Stat(filepath.Join(h, "cgroup.procs")); err == nil && !info.IsDir() {
			if err := os.MkdirAll(filepath.Join(h, CgroupRoot), 0o755); err != nil {
				return err
			}
		}
	}
	if err := syscall.Mount("tmpfs", "/run", "tmpfs", 0, "mode=0755"); err != nil {
		return fmt.Errorf("tmpfs on /run: %w", err)
	}
	// The new network namespace's own settings: forwarding, which kubeadm's preflight
	// requires and the bridge plugin would set, and the loopback device.
	if err := os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1"), 0o644); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(controlSocket), 0o755); err != nil {
		return err
	}
	logs := filepath.Join(dir, "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return err
	}
	bin := filepath.Join(dir, "bin")
	env := []string{"PATH=" + bin + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root"}
	s := &supervisor{units: map[string]*unit{
		"containerd": {argv: []string{filepath.Join(bin, "containerd"), "--config", "/etc/containerd/config.toml"}, enabled: true, log: filepath.Join(logs, "containerd.log")},
		"kubelet":    {argv: []string{"/bin/bash", "-c", kubeletUnit, "kubelet"}, enabled: true, log: filepath.Join(logs, "kubelet.log")},
	}, env: env}
	return s.serve()
}

// kubeletUnit is kubeadm's drop-in for the kubelet unit, as a shell command: systemd reads
// the EnvironmentFile= lines (each optional), then runs ExecStart, splitting each unquoted
// $VARIABLE on white space (and, as systemd, expanding no pattern in it: set -f).
const kubeletUnit = `
set -f
KUBELET_KUBECONFIG_ARGS="--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf"
KUBELET_CONFIG_ARGS="--config=/var/lib/kubelet/config.yaml"
set -a
[ ! -r /var/lib/kubelet/kubeadm-flags.env ] || . /var/lib/kubelet/kubeadm-flags.env
[ ! -r /etc/default/kubelet ] || . /etc/default/kubelet
set +a
exec kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS ${KUBELET_KUBEADM_ARGS:-} ${KUBELET_EXTRA_ARGS:-}
`

// unit is a service PID 1 runs.
type unit struct {
	argv    []string
	log     string
	enabled bool
	// wanted is whether the unit should run (start, restart); pid is its process, 0 when none.
	wanted bool
	pid    int
	// restartAt is when a wanted unit that exited starts again.
	restartAt time.Time
	// stopped is closed when the process the unit waits for exits.
	stopped chan struct{}
}

type supervisor struct {
	mu    sync.Mutex
	units map[string]*unit
	env   []string
}

func (s *supervisor) serve() error {
	signals := make(chan os.Signal, 16)
	signal.Notify(signals, syscall.SIGCHLD, syscall.SIGTERM, syscall.SIGINT)
	listener, err := net.Listen("unix", controlSocket)
	if err != nil {
		return err
	}
	go func() {
		for {
			conn, err := listener.Accept()
			if err != nil {
				return
			}
			go s.answer(conn)
		}
	}()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case sig := <-signals:
			if sig != syscall.SIGCHLD {
				// Exiting kills every process of the PID namespace.
				return nil
			}
			s.reap()
		case <-tick.C:
			s.reap()
			s.restart()
		}
	}
}

// reap collects every exited child, PID 1's orphans included (container shims daemonize).
func (s *supervisor) reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
		s.mu.Lock()
		for _, u := range s.units {
			if u.pid == pid {
				u.pid = 0
				u.restartAt = time.Now().Add(restartDelay)
				close(u.stopped)
			}
		}
		s.mu.Unlock()
	}
}

// restart starts every wanted unit that does not run and whose delay has passed.
func (s *supervisor) restart() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, u := range s.units {
		if u.wanted && u.pid == 0 && !time.Now().Before(u.restartAt) {
			if err := s.start(u); err != nil {
				fmt.Fprintf(os.Stderr, "nodeinit: %s: %v\n", name, err)
				u.restartAt = time.Now().Add(restartDelay)
			}
		}
	}
}

// start runs u's process, its output appended to its log. Called with s.mu held.
func (s *supervisor) start(u *unit) error {
	log, err := os.OpenFile(u.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		return err
	}
	defer devNull.Close()
	p, err := os.StartProcess(u.argv[0], u.argv, &os.ProcAttr{Dir: "/", Env: s.env, Files: []*os.File{devNull, log, log}})
	if err != nil {
		return err
	}
	u.pid, u.stopped = p.Pid, make(chan struct{})
	// The process is reaped by reap, never through p.
	return p.Release()
}

// stop ends u's process and waits for it: SIGTERM, then SIGKILL after 30 s (systemd's
// TimeoutStopSec default is 90 s).
func (s *supervisor) stop(u *unit) {
	s.mu.Lock()
	u.wanted = false
	pid, stopped := u.pid, u.stopped
	s.mu.Unlock()
	if pid == 0 {
		return
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	select {
	case <-stopped:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(pid, syscall.SIGKILL)
		<-stopped
	}
}

// answer serves one systemctl request: a line "verb unit"; the reply is the exit code on
// the first line, then the output.
func (s *supervisor) answer(conn net.Conn) {
	defer conn.Close()
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return
	}
	code, out := s.do(strings.Fields(line))
	fmt.Fprintf(conn, "%d\n%s", code, out)
}

func (s *supervisor) do(args []string) (int, string) {
	if len(args) == 0 {
		return 1, "no command\n"
	}
	verb := args[0]
	if verb == "daemon-reload" {
		return 0, ""
	}
	if len(args) != 2 {
		return 1, fmt.Sprintf("%s: want one unit\n", verb)
	}
	name := strings.TrimSuffix(args[1], ".service")
	s.mu.Lock()
	u, ok := s.units[name]
	s.mu.Unlock()
	if !ok {
		if verb == "status" {
			return 4, fmt.Sprintf("Unit %s.service could not be found.\n", name)
		}
		return 5, fmt.Sprintf("Failed to %s %s.service: Unit %s.service not found.\n", verb, name, name)
	}
	switch verb {
	case "start", "restart":
		if verb == "restart" {
			s.stop(u)
		}
		s.mu.Lock()
		u.wanted, u.restartAt = true, time.Time{}
		s.mu.Unlock()
		s.restart()
		return 0, ""
	case "stop":
		s.stop(u)
		return 0, ""
	case "enable", "disable":
		s.mu.Lock()
		u.enabled = verb == "enable"
		s.mu.Unlock()
		return 0, ""
	case "is-enabled":
		s.mu.Lock()
		defer s.mu.Unlock()
		if u.enabled {
			return 0, "enabled\n"
		}
		return 1, "disabled\n"
	case "is-active":
		s.mu.Lock()
		defer s.mu.Unlock()
		if u.pid != 0 {
			return 0, "active\n"
		}
		if u.wanted {
			return 3, "activating\n"
		}
		return 3, "inactive\n"
	case "status":
		s.mu.Lock()
		defer s.mu.Unlock()
		state := "inactive (dead)"
		if u.pid != 0 {
			state = fmt.Sprintf("active (running), main PID %d", u.pid)
		}
		return map[bool]int{true: 0, false: 3}[u.pid != 0], fmt.Sprintf("● %s.service\n     Loaded: loaded (portcullis-node)\n     Active: %s\n", name, state)
	}
	return 1, fmt.Sprintf("systemctl %s: not a verb of this stand-in (%s)\n", verb, strings.Join(knownVerbs, ", "))
}

var knownVerbs = []string{"daemon-reload", "start", "restart", "stop", "enable", "disable", "is-enabled", "is-active", "status"}

// systemctl is the client: it sends its arguments to PID 1 and prints the answer. Options
// (--no-pager, --quiet, ...) are dropped; kubeadm passes none that change an answer.
func systemctl(args []string) int {
	args = slices.DeleteFunc(slices.Clone(args), func(a string) bool { return strings.HasPrefix(a, "-") })
	if len(args) == 0 {
		fmt.Fprintf(os.Stderr, "systemctl (portcullis-node): a verb is required (%s)\n", strings.Join(knownVerbs, ", "))
		return 1
	}
	conn, err := net.Dial("unix", controlSocket)
	if err != nil {
		fmt.Fprintf(os.Stderr, "systemctl (portcullis-node): %v\n", err)
		return 1
	}
	defer conn.Close()
	fmt.Fprintf(conn, "%s\n", strings.Join(args, " "))
	r := bufio.NewReader(conn)
	first, err := r.ReadString('\n')
	if err != nil {
		fmt.Fprintf(os.Stderr, "systemctl (portcullis-node): %v\n", err)
		return 1
	}
	var code int
	if _, err := fmt.Sscanf(first, "%d", &code); err != nil {
		return 1
	}
	rest, _ := r.ReadString(0)
	if code == 0 || strings.HasPrefix(args[0], "is-") || args[0] == "status" {
		fmt.Print(rest)
	} else {
		fmt.Fprint(os.Stderr, rest)
	}
	return code
}
