package filter

import "net/netip"

// parseAddr normalises an address so "::FFFF:10.0.0.1" and "::ffff:10.0.0.1"
// compare equal.
func parseAddr(s string) (string, error) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return "", err
	}
	return a.String(), nil
}
