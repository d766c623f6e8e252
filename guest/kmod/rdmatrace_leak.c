// SPDX-License-Identifier: GPL-2.0
/*
 * rdmatrace_leak: a kernel RDMA client for rdmatrace's leak tests. On the
 * device named by dev= it allocates a PD, a CQ and an RC QP; with leak=1
 * (the default) its remove() does not free them, so the device's
 * unregistration leaves them behind, which the kernel reports only as
 * bare WARNINGs (restrack.c, rxe_pool.c) without names.
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <rdma/ib_verbs.h>

static char *dev = "rxe1";
module_param(dev, charp, 0444);
MODULE_PARM_DESC(dev, "the device to allocate on");
static int leak = 1;
module_param(leak, int, 0444);
MODULE_PARM_DESC(leak, "do not free on remove");

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

static int __init leak_init(void)
{
	return ib_register_client(&client);
}

static void __exit leak_exit(void)
{
	ib_unregister_client(&client);
}

module_init(leak_init);
module_exit(leak_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("rdmatrace test: an RDMA client that leaks a PD, CQ and QP");
