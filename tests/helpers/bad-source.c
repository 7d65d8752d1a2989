/* A test module, otherwise complete, that declares a source not named
 * after itself: a signal could take it for one of the daemon's source
 * types, so the loader refuses the module. */
#include "autoscaled/driver.h"

static int bs_open(const struct autoscaled_host *host, const struct autoscaled_option *options, size_t n_options,
		   struct autoscaled_driver_instance **ret)
{
	(void)host;
	(void)options;
	(void)n_options;
	(void)ret;
	return -ENOTSUP;
}

static void bs_close(struct autoscaled_driver_instance *handle)
{
	(void)handle;
}

static int bs_observe(struct autoscaled_driver_instance *handle, autoscaled_instance_fn fn,
		      autoscaled_sample_fn sample, void *ctx, struct autoscaled_observation *ret)
{
	(void)handle;
	(void)fn;
	(void)sample;
	(void)ctx;
	(void)ret;
	return -ENOTSUP;
}

static int bs_set_capacity(struct autoscaled_driver_instance *handle, int count, autoscaled_instance_fn fn, void *ctx)
{
	(void)handle;
	(void)count;
	(void)fn;
	(void)ctx;
	return -ENOTSUP;
}

static int bs_remove(struct autoscaled_driver_instance *handle, int count, const char *const *ids, size_t n_ids,
		     autoscaled_instance_fn fn, void *ctx)
{
	(void)handle;
	(void)count;
	(void)ids;
	(void)n_ids;
	(void)fn;
	(void)ctx;
	return -ENOTSUP;
}

static const struct autoscaled_source sources[] = {
	{ "bad_source_load", "named after the driver: fine" },
	{ "prometheus", "named after a source type of the daemon" },
};

static const struct autoscaled_driver bad_source = {
	.abi_version = AUTOSCALED_DRIVER_ABI_VERSION,
	.struct_size = sizeof(struct autoscaled_driver),
	.name = "bad_source",
	.description = "test module declaring a source not named after itself",
	.sources = sources,
	.n_sources = 2,
	.open = bs_open,
	.close = bs_close,
	.observe = bs_observe,
	.set_capacity = bs_set_capacity,
	.remove_instances = bs_remove,
};

AUTOSCALED_DRIVER_EXPORT const struct autoscaled_driver *autoscaled_driver_info(void)
{
	return &bad_source;
}
