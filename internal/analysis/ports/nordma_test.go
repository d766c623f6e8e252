package ports

import (
	"errors"
	"fmt"
	"testing"
)

// WithoutNoRDMA finds ErrNoRDMA deep in Gather's joined error and keeps
// the rest; an error without it passes as it is.
func TestWithoutNoRDMAKeepsTheRest(t *testing.T) {
	sock := errors.New("sock_diag: no permission")
	no, rest := WithoutNoRDMA(errors.Join(sock, fmt.Errorf("%w: %v", ErrNoRDMA, errors.New("ENOENT"))))
	if !no || rest == nil || rest.Error() != sock.Error() {
		t.Errorf("got %v, %v; want true and the socket error alone", no, rest)
	}
	if no, rest := WithoutNoRDMA(fmt.Errorf("%w: x", ErrNoRDMA)); !no || rest != nil {
		t.Errorf("ErrNoRDMA alone: got %v, %v; want true, nil", no, rest)
	}
	if no, rest := WithoutNoRDMA(sock); no || rest != sock {
		t.Errorf("no ErrNoRDMA: got %v, %v", no, rest)
	}
}
