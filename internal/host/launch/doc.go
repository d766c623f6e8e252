// Package launch starts the program that `rdmatrace leaks -- CMD` and
// `trace -- CMD` trace: in a cgroup v2 of its own, so that the tracer can
// tell at each event whether the resource's owner is the program or one
// of its descendants (the owner's cgroup id is in every event); as the
// user who invoked rdmatrace rather than as root; killed if rdmatrace
// dies; stopped with SIGTERM, then SIGKILL, when rdmatrace stops it, with
// everything in its cgroup.
package launch
