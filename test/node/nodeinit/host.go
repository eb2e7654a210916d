package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// What a node changes on the host, outside its namespaces, is recorded in HostStateDir on the
// host's /run (a reboot resets what it would restore, and empties it): machine-wide, whichever
// clone's suite ran the node.
const (
	HostStateDir = "/run/portcullis-node-host"
	// Lock is held by the suite for as long as its node lives: one node per machine.
	Lock = HostStateDir + "/lock"
	// kernelSettingsFile holds the kernel's settings before the first node changed them.
	kernelSettingsFile = HostStateDir + "/kernel-settings"
	// mountPointsFile lists the mount points nodes created on the host, one a line.
	mountPointsFile = HostStateDir + "/mount-points"
	// CgroupRoot is the node's kubelet's cgroupRoot: every cgroup of the node's pods is
	// beneath it, in each hierarchy, and only it is removed.
	CgroupRoot = "portcullis-node"
	// DefaultVeth is the host's end of the node's veth pair (test/node's hostVeth).
	DefaultVeth = "portcullis0"
)

// kernelSettings are the host-wide settings the kubelet writes (it sets the values its
// container manager wants unless protectKernelDefaults).
var kernelSettings = []string{"kernel/panic", "kernel/panic_on_oops", "vm/overcommit_memory", "kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes"}

// prepare records what a node is about to change on the host: the kernel's settings (unless
// recorded already: those are the machine's own, a node that was not cleaned up changed the
// live ones) and the mount points paths need, created.
func prepare(paths []string) error {
	if err := os.MkdirAll(HostStateDir, 0o700); err != nil {
		return err
	}
	if _, err := os.Stat(kernelSettingsFile); errors.Is(err, os.ErrNotExist) {
		var b strings.Builder
		for _, s := range kernelSettings {
			v, err := os.ReadFile(filepath.Join("/proc/sys", s))
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, "%s=%s\n", s, strings.TrimSpace(string(v)))
		}
		if err := os.WriteFile(kernelSettingsFile, []byte(b.String()), 0o600); err != nil {
			return err
		}
	}
	record, err := os.OpenFile(mountPointsFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer record.Close()
	for _, path := range paths {
		var missing []string
		for p := path; p != "/"; p = filepath.Dir(p) {
			if _, err := os.Lstat(p); err == nil {
				break
			}
			missing = append(missing, p)
		}
		// Recorded before it is made, deepest last, so that a crash leaves nothing unrecorded.
		for i := len(missing) - 1; i >= 0; i-- {
			if _, err := fmt.Fprintln(record, missing[i]); err != nil {
				return err
			}
		}
		if err := os.MkdirAll(path, 0o755); err != nil {
			return err
		}
	}
	return nil
}

// clean ends every node of the machine and removes what nodes left on the host: the host's
// end of the veth, the cgroups beneath CgroupRoot, the kernel settings (put back as
// recorded) and the mount points nodes created. Its caller holds Lock.
func clean(veth string) []error {
	var errs []error
	for _, pid := range nodeInits() {
		if err := killAndWait(pid); err != nil {
			errs = append(errs, err)
		}
	}
	if out, err := exec.Command("ip", "link", "del", veth).CombinedOutput(); err != nil && !strings.Contains(string(out), "Cannot find device") {
		errs = append(errs, fmt.Errorf("ip link del %s: %v: %s", veth, err, out))
	}
	hierarchies, _ := filepath.Glob("/sys/fs/cgroup/*")
	for _, h := range append(hierarchies, "/sys/fs/cgroup") {
		if err := removeCgroup(filepath.Join(h, CgroupRoot)); err != nil {
			errs = append(errs, err)
		}
	}
	if err := restoreKernelSettings(); err != nil {
		errs = append(errs, err)
	}
	if err := removeMountPoints(); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// nodeInits are the PIDs of the machine's node inits (nodeinit -dir ...), as the host sees
// them.
func nodeInits() []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		args := strings.Split(string(cmdline), "\x00")
		if len(args) > 1 && filepath.Base(args[0]) == "nodeinit" && args[1] == "-dir" {
			pids = append(pids, pid)
		}
	}
	return pids
}

// killAndWait kills a node's init, and so its PID namespace, and waits until it is gone (or a
// zombie its parent, unshare, has not reaped yet).
func killAndWait(pid int) error {
	_ = syscall.Kill(pid, syscall.SIGKILL)
	for range 600 {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil || strings.Contains(string(stat), ") Z ") {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("the node's init (PID %d) did not die within 60 s of SIGKILL", pid)
}

// removeCgroup removes a cgroup and its children, deepest first, retrying while the killed
// node's processes are still leaving them.
func removeCgroup(dir string) error {
	if _, err := os.Stat(dir); err != nil {
		return nil
	}
	var last error
	for range 100 {
		var dirs []string
		_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		last = nil
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := syscall.Rmdir(dirs[i]); err != nil && !errors.Is(err, syscall.ENOENT) {
				last = fmt.Errorf("removing the cgroup %s: %w", dirs[i], err)
			}
		}
		if last == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return last
}

func restoreKernelSettings() error {
	data, err := os.ReadFile(kernelSettingsFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		setting, value, _ := strings.Cut(line, "=")
		if err := os.WriteFile(filepath.Join("/proc/sys", setting), []byte(value), 0o644); err != nil {
			return fmt.Errorf("putting back %s=%s: %w", setting, value, err)
		}
	}
	return os.Remove(kernelSettingsFile)
}

// removeMountPoints removes the recorded mount points, deepest first, each only when empty
// (nothing is written into a mount point outside the node).
func removeMountPoints() error {
	f, err := os.Open(mountPointsFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	var paths []string
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		paths = append(paths, scanner.Text())
	}
	f.Close()
	if err := scanner.Err(); err != nil {
		return err
	}
	slices.Reverse(paths)
	var kept []string
	for _, p := range paths {
		if err := syscall.Rmdir(p); err != nil && !errors.Is(err, syscall.ENOENT) {
			kept = append(kept, fmt.Sprintf("%s (%v)", p, err))
		}
	}
	if len(kept) > 0 {
		return fmt.Errorf("mount points a node created that are not empty, left in place: %s", strings.Join(kept, ", "))
	}
	return os.Remove(mountPointsFile)
}
