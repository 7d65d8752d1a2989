/* A test module whose descriptor is shorter than the mandatory part of the
 * ABI, as a truncated or hand-rolled struct would be. */
#include "autoscaled/driver.h"

static const struct autoscaled_driver short_struct = {
	.abi_version = AUTOSCALED_DRIVER_ABI_VERSION,
	.struct_size = offsetof(struct autoscaled_driver, open),
	.name = "short-struct",
	.description = "test module with a truncated descriptor",
};

AUTOSCALED_DRIVER_EXPORT const struct autoscaled_driver *autoscaled_driver_info(void)
{
	return &short_struct;
}
