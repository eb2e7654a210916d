// Package harness holds what the measuring commands (make bench, make soak, make
// pgo-profile) share: where their servers keep their files, how they report progress, and
// how they write what they found.
package harness

import (
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"time"
)

// WorkDir returns dir, created if missing, to be kept afterwards; or, when dir is empty, a
// fresh temporary directory named after pattern, to be removed once the command succeeds.
func WorkDir(dir, pattern string) (path string, keep bool, err error) {
	if dir == "" {
		path, err = os.MkdirTemp("", pattern)
		return path, false, err
	}
	return dir, true, os.MkdirAll(dir, 0o755)
}

// WriteFileAtomic writes data beside path and renames it into place, so that an
// interrupted command never leaves half a file.
func WriteFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Progress writes a line per step, stamped with the time since the command started.
type Progress struct {
	w       io.Writer
	started time.Time
}

// NewProgress starts the clock; a nil w discards the lines.
func NewProgress(w io.Writer) *Progress {
	if w == nil {
		w = io.Discard
	}
	return &Progress{w: w, started: time.Now()}
}

// Started is when the clock started.
func (p *Progress) Started() time.Time { return p.started }

// Printf writes one line.
func (p *Progress) Printf(format string, args ...any) {
	fmt.Fprintf(p.w, "[%6s] %s\n", time.Since(p.started).Round(time.Second), fmt.Sprintf(format, args...))
}

// HTTPSServer is an HTTPS server for handler with cert, as the harnesses' webhooks run:
// bounded header reads, and its error log discarded (the clients' failures are what the
// harnesses measure, not the server's complaints about them).
func HTTPSServer(handler http.Handler, cert tls.Certificate) *http.Server {
	return &http.Server{
		Handler:           handler,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
}

// Writer is where the lines go, for output passed through as it is (a child's).
func (p *Progress) Writer() io.Writer { return p.w }
