// SPDX-License-Identifier: GPL-2.0
/*
 * rdmatrace_leak: a kernel RDMA client for rdmatrace's leak tests. On the
 * device named by dev= it allocates a PD, a CQ and an RC QP; with leak=1
 * (the default) its remove() does not free them, so the device's
 * unregistration leaves them behind, which the kernel reports only as
 * bare WARNINGs (restrack.c, rxe_pool.c) without names.
 *
 * With listen=ADDR it is instead an rdma_cm listener bound to the IPv4
 * address ADDR, which ignores its device's removal and is destroyed only
 * at rmmod: rdma_cm's cma_remove_one waits for it, so the device's
 * unregistration blocks until the module is removed.
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/inet.h>
#include <net/net_namespace.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

static char *dev = "rxe1";
module_param(dev, charp, 0444);
MODULE_PARM_DESC(dev, "the device to allocate on");
static int leak = 1;
module_param(leak, int, 0444);
MODULE_PARM_DESC(leak, "do not free on remove");
static char *listen;
module_param(listen, charp, 0444);
MODULE_PARM_DESC(listen, "only listen with rdma_cm on this IPv4 address, and hold the listener through its device's removal");

static struct rdma_cm_id *listener;

struct held {
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_qp *qp;
};

static int add_one(struct ib_device *ibdev);
static void remove_one(struct ib_device *ibdev, void *data);

static struct ib_client client = {
	.name = "rdmatrace_leak",
	.add = add_one,
	.remove = remove_one,
};

static int add_one(struct ib_device *ibdev)
{
	struct ib_qp_init_attr attr = {};
	struct held *h;

	if (strcmp(dev_name(&ibdev->dev), dev))
		return -EOPNOTSUPP;
	h = kzalloc(sizeof(*h), GFP_KERNEL);
	if (!h)
		return -ENOMEM;
	h->pd = ib_alloc_pd(ibdev, 0);
	if (IS_ERR(h->pd))
		goto free;
	h->cq = ib_alloc_cq(ibdev, h, 16, 0, IB_POLL_DIRECT);
	if (IS_ERR(h->cq))
		goto free_pd;
	attr.send_cq = h->cq;
	attr.recv_cq = h->cq;
	attr.qp_type = IB_QPT_RC;
	attr.cap.max_send_wr = 4;
	attr.cap.max_recv_wr = 4;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 1;
	h->qp = ib_create_qp(h->pd, &attr);
	if (IS_ERR(h->qp))
		goto free_cq;
	ib_set_client_data(ibdev, &client, h);
	pr_info("rdmatrace_leak: %s: holding pd, cq and qp %u\n", dev, h->qp->qp_num);
	return 0;
free_cq:
	ib_free_cq(h->cq);
free_pd:
	ib_dealloc_pd(h->pd);
free:
	kfree(h);
	return -ENOMEM;
}

static void remove_one(struct ib_device *ibdev, void *data)
{
	struct held *h = data;

	if (leak) {
		pr_info("rdmatrace_leak: %s: remove(): NOT freeing pd, cq and qp (leak=1)\n", dev);
		kfree(h);
		return;
	}
	ib_destroy_qp(h->qp);
	ib_free_cq(h->cq);
	ib_dealloc_pd(h->pd);
	kfree(h);
	pr_info("rdmatrace_leak: %s: remove(): freed\n", dev);
}

/*
 * A consumer's event handler returns nonzero to have rdma_cm destroy the
 * ID. On DEVICE_REMOVAL this one returns 0 and keeps the listener: the
 * bug whose effect the tests look at.
 */
static int listen_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	if (ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL) {
		pr_info("rdmatrace_leak: %s: device removal: NOT destroying the listener until rmmod\n", listen);
		return 0;
	}
	/* A connect request's new ID: refused, and destroyed by rdma_cm. */
	return id != listener;
}

static int start_listener(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	int err;

	if (!in4_pton(listen, -1, (u8 *)&sin.sin_addr.s_addr, -1, NULL)) {
		pr_err("rdmatrace_leak: listen=%s is not an IPv4 address\n", listen);
		return -EINVAL;
	}
	sin.sin_port = htons(7471);
	listener = rdma_create_id(&init_net, listen_handler, NULL, RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(listener))
		return PTR_ERR(listener);
	err = rdma_bind_addr(listener, (struct sockaddr *)&sin);
	if (!err)
		err = rdma_listen(listener, 1);
	if (err) {
		pr_err("rdmatrace_leak: listen on %s:7471: %d\n", listen, err);
		rdma_destroy_id(listener);
		return err;
	}
	pr_info("rdmatrace_leak: listening on %s:7471 (device %s)\n", listen,
		listener->device ? dev_name(&listener->device->dev) : "none");
	return 0;
}

static int __init leak_init(void)
{
	if (listen)
		return start_listener();
	return ib_register_client(&client);
}

static void __exit leak_exit(void)
{
	if (listen) {
		rdma_destroy_id(listener);
		pr_info("rdmatrace_leak: %s: listener destroyed\n", listen);
		return;
	}
	ib_unregister_client(&client);
}

module_init(leak_init);
module_exit(leak_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("rdmatrace test: an RDMA client that leaks a PD, CQ and QP, or holds a listener through a device removal");
