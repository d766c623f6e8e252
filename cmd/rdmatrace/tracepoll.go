package main

import (
	"time"

	"github.com/urfave/cli/v2"
)

// netlinkFlag makes trace use no BPF at all.
var netlinkFlag = &cli.BoolFlag{Name: "netlink", Usage: "trace without BPF, through RDMA netlink alone (what trace does by itself where BPF cannot be used): device events from the kernel's monitor group, resources compared every --poll (1s unless given)"}

// defaultNetlinkPoll is the interval between two dumps without BPF
// when --poll is not given.
const defaultNetlinkPoll = time.Second

// bpfFlag refuses the fallback: a caller that needs what only BPF sees
// (rdmabench's spans and off-CPU spells) gets the BPF problem as an error.
var bpfFlag = &cli.BoolFlag{Name: "bpf", Usage: "trace with BPF or fail, saying why: no fallback to RDMA netlink"}
