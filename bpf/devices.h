/* SPDX-License-Identifier: GPL-2.0 */
/* ==== Devices: registration and unregistration ====
 * ib_register_device and __ib_unregister_device (whose return says the
 * device is gone: what a blocked unregistration waits for lies between),
 * and the count of iWARP devices that ports.h's failed binds depend on. */
#ifndef RDMATRACE_DEVICES_H
#define RDMATRACE_DEVICES_H

#include "common.h"

/* EV_DEV_*: a device registered or unregistered. */
struct dev_event {
	struct event_hdr h;
	struct ev_dev dev;
};

const struct dev_event *unused_dev_event __attribute__((unused));

static __always_inline int emit_dev(__u32 kind, struct ib_device *dev)
{
	struct dev_event *e = reserve(struct dev_event, kind);
	if (!e)
		return 0;
	e->h.obj = (__u64)dev;
	set_dev(&e->h, &e->dev, dev);
	submit(&e->h);
	return 0;
}

/* iWARP devices (node type RNIC) that exist: a process's TCP bind can clash
 * with RDMA only through one (iWARP's listens and connections are host TCP
 * sockets; RoCE's and InfiniBand's rdma_cm ports are not), so a failed bind
 * is reported only while devs is not 0. at_start is how many existed when
 * the tracer started, as user space counted them in sysfs before attaching;
 * iwarp_devs holds those registered since, by address, so that the
 * unregister of either kind is counted once. */
#define RDMA_NODE_RNIC 4 /* enum rdma_node_type, UAPI */

struct iwarp_state {
	__s64 devs;
	__s64 at_start;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct iwarp_state);
} iwarp SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64); /* struct ib_device * */
	__type(value, __u8);
} iwarp_devs SEC(".maps");

static __always_inline void iwarp_registered(struct ib_device *dev)
{
	__u32 zero = 0;
	__u64 key = (__u64)dev;
	__u8 one = 1;
	struct iwarp_state *s = bpf_map_lookup_elem(&iwarp, &zero);
	if (!s || BPF_CORE_READ(dev, node_type) != RDMA_NODE_RNIC)
		return;
	/* A full map (1024 RNICs) counts the device anyway: a failed bind
	 * too many reported rather than a clash missed. */
	if (bpf_map_update_elem(&iwarp_devs, &key, &one, BPF_NOEXIST) != -17 /* EEXIST */)
		__sync_fetch_and_add(&s->devs, 1);
}

static __always_inline void iwarp_unregistering(struct ib_device *dev)
{
	__u32 zero = 0;
	__u64 key = (__u64)dev;
	struct iwarp_state *s = bpf_map_lookup_elem(&iwarp, &zero);
	if (!s || BPF_CORE_READ(dev, node_type) != RDMA_NODE_RNIC)
		return;
	if (bpf_map_delete_elem(&iwarp_devs, &key) == 0) {
		__sync_fetch_and_add(&s->devs, -1);
	} else if (s->at_start > 0) {
		__sync_fetch_and_add(&s->at_start, -1);
		__sync_fetch_and_add(&s->devs, -1);
	}
}

static __always_inline int iwarp_present(void)
{
	__u32 zero = 0;
	struct iwarp_state *s = bpf_map_lookup_elem(&iwarp, &zero);
	return s && s->devs != 0;
}

SEC("fexit/ib_register_device")
int BPF_PROG(fexit_register_device, struct ib_device *dev, const char *name, void *dma_device, int ret)
{
	if (ret)
		return 0;
	iwarp_registered(dev);
	return emit_dev(EV_DEV_REGISTER, dev);
}

SEC("fexit/__ib_unregister_device")
int BPF_PROG(fexit_unregister_device, struct ib_device *dev)
{
	return emit_dev(EV_DEV_UNREGISTERED, dev);
}

ENTRY_HOOK(__ib_unregister_device, unregister_device, (iwarp_unregistering(dev), emit_dev(EV_DEV_UNREGISTER, dev)), struct ib_device *dev)

#endif /* RDMATRACE_DEVICES_H */
