// Package suggest finds what a mistyped word was meant to be: "did you
// mean" for an unknown command.
package suggest

import "strings"

// Nearest returns the candidate nearest to s by edit distance, when it is
// near enough to be a typo (at most a third of its letters, and at least
// one), or one that s is a prefix of.
func Nearest(s string, candidates []string) string {
	best, bestD := "", 0
	for _, c := range candidates {
		d := editDistance(s, c)
		if strings.HasPrefix(c, s) && s != "" {
			d = 1
		}
		if best == "" || d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" || bestD > max(1, len(best)/3) {
		return ""
	}
	return best
}

// editDistance counts the insertions, deletions, substitutions and swaps
// of neighbours that turn a into b (optimal string alignment): "tarce" is
// one from "trace", as a typist sees it.
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
