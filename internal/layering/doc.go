// Package layering holds no code: its test keeps the import rules between
// rdmatrace's packages (see layering_test.go), checked with go list.
package layering
