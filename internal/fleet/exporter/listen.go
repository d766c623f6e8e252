package exporter

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strings"
	"syscall"
)

// Listen opens addr: "HOST:PORT" for TCP, or "unix:PATH" for a unix
// socket that only root can connect to (mode 0600, owned by us): a way
// in for a proxy beside the exporter that no other user of the node has.
// A unix socket left by an earlier run is replaced; anything else at
// PATH is an error.
func Listen(addr string) (net.Listener, error) {
	path, ok := strings.CutPrefix(addr, "unix:")
	if !ok {
		return net.Listen("tcp", addr)
	}
	if path == "" {
		return nil, errors.New("unix: expected a path after it")
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("%s exists and is not a socket: not replaced", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, err
		}
	}
	// The socket is created without any permission for others: no moment
	// where another user can connect before a chmod.
	old := syscall.Umask(0o177)
	ln, err := net.Listen("unix", path)
	syscall.Umask(old)
	if err != nil {
		return nil, err
	}
	return ln, nil
}
