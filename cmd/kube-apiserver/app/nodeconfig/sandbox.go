package nodeconfig

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// The sandboxing settings of systemd.exec(5) that decide whether the service sees a path of
// the host, and may write it. A path under a more specific setting follows that one, as
// systemd's mounts nest.

// homeDirectories are what ProtectHome= covers.
var homeDirectories = []string{"/home", "/root", "/run/user"}

// temporaryDirectories are what PrivateTmp= replaces with the service's own.
var temporaryDirectories = []string{"/tmp", "/var/tmp"}

// CannotRead says why the service could not read the host's file at path under its sandbox,
// or "" when nothing in the unit stands in the way.
func (s *SystemdService) CannotRead(path string) string {
	path = filepath.Clean(path)
	if setting, ok := s.hiding(path); ok {
		return setting
	}
	return ""
}

// CannotWrite says why the service could not write path (create it, or a file in it, for a
// directory) so that the host sees it, or "" when nothing in the unit stands in the way.
func (s *SystemdService) CannotWrite(path string) string {
	path = filepath.Clean(path)
	if setting, ok := s.hiding(path); ok {
		return setting
	}
	writable, _ := s.longestMatch(path, s.writablePaths())
	readOnly, readOnlySetting := s.longestMatch(path, s.readOnlyPaths())
	if readOnly != "" && len(readOnly) >= len(writable) {
		return fmt.Sprintf("%s makes %s read-only%s", readOnlySetting, readOnly, s.writableHint(path))
	}
	return ""
}

// hiding reports the setting that keeps the host's path from the service.
func (s *SystemdService) hiding(path string) (string, bool) {
	for _, entry := range s.list("InaccessiblePaths") {
		if within(path, entry) {
			return fmt.Sprintf("InaccessiblePaths=%s hides it from the service", entry), true
		}
	}
	switch home := s.value("ProtectHome"); {
	case isTrue(home) || home == "tmpfs":
		for _, dir := range homeDirectories {
			if within(path, dir) {
				return fmt.Sprintf("ProtectHome=%s hides %s from the service", home, dir), true
			}
		}
	}
	if isTrue(s.value("PrivateTmp")) {
		for _, dir := range temporaryDirectories {
			if within(path, dir) {
				return fmt.Sprintf("PrivateTmp=%s gives the service a %s of its own, not the host's", s.value("PrivateTmp"), dir), true
			}
		}
	}
	return "", false
}

// writablePaths are the paths the unit makes writable, by the setting that does.
func (s *SystemdService) writablePaths() map[string]string {
	out := map[string]string{}
	for _, p := range s.list("ReadWritePaths") {
		out[p] = "ReadWritePaths=" + p
	}
	for setting, root := range map[string]string{"LogsDirectory": "/var/log", "StateDirectory": "/var/lib", "CacheDirectory": "/var/cache", "RuntimeDirectory": "/run"} {
		for _, name := range s.list(setting) {
			name, _, _ = strings.Cut(name, ":") // a mode or symlink suffix
			out[filepath.Join(root, name)] = setting + "=" + name
		}
	}
	for _, dir := range []string{"/dev", "/proc", "/sys"} {
		out[dir] = "ProtectSystem= (which never covers " + dir + ")"
	}
	return out
}

// readOnlyPaths are the paths the unit makes read-only, by the setting that does.
func (s *SystemdService) readOnlyPaths() map[string]string {
	out := map[string]string{}
	for _, p := range s.list("ReadOnlyPaths") {
		out[p] = "ReadOnlyPaths=" + p
	}
	protect := s.value("ProtectSystem")
	switch {
	case protect == "strict":
		out["/"] = "ProtectSystem=strict"
	case protect == "full":
		for _, dir := range []string{"/usr", "/boot", "/efi", "/etc"} {
			out[dir] = "ProtectSystem=full"
		}
	case isTrue(protect):
		for _, dir := range []string{"/usr", "/boot", "/efi"} {
			out[dir] = "ProtectSystem=" + protect
		}
	}
	if s.value("ProtectHome") == "read-only" {
		for _, dir := range homeDirectories {
			out[dir] = "ProtectHome=read-only"
		}
	}
	return out
}

// writableHint names what would make path writable, and what is.
func (s *SystemdService) writableHint(path string) string {
	var writable []string
	for p := range s.writablePaths() {
		if p != "/dev" && p != "/proc" && p != "/sys" {
			writable = append(writable, p)
		}
	}
	hint := fmt.Sprintf(": add ReadWritePaths=%s in a drop-in (systemctl edit kube-apiserver)", path)
	if len(writable) > 0 {
		slices.Sort(writable)
		hint = fmt.Sprintf(" (the service may write only under %s)%s", strings.Join(writable, ", "), hint)
	}
	return hint
}

// longestMatch returns the most specific of paths that holds path, and its setting.
func (s *SystemdService) longestMatch(path string, paths map[string]string) (string, string) {
	best, setting := "", ""
	for p, by := range paths {
		if within(path, p) && len(p) > len(best) {
			best, setting = p, by
		}
	}
	return best, setting
}

// value is the last value of a single-valued setting ("" when unset).
func (s *SystemdService) value(name string) string {
	values := s.Settings[name]
	if len(values) == 0 {
		return ""
	}
	return strings.TrimSpace(values[len(values)-1])
}

// list is a list setting's paths, from every assignment, without the "-" (ignore if missing)
// and "+" (relative to RootDirectory=) prefixes.
func (s *SystemdService) list(name string) []string {
	var out []string
	for _, assignment := range s.Settings[name] {
		for _, word := range splitWords(assignment) {
			word = strings.TrimLeft(word, "-+")
			if word != "" {
				if strings.HasPrefix(word, "/") {
					word = filepath.Clean(word)
				}
				out = append(out, word)
			}
		}
	}
	return out
}

func isTrue(v string) bool {
	switch strings.ToLower(v) {
	case "1", "yes", "true", "on":
		return true
	}
	return false
}

// within reports whether path is dir or lies under it.
func within(path, dir string) bool {
	return path == dir || dir == "/" || strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/")
}
