/* A test module built as against an older <autoscaled/driver.h>: its ABI
 * version is one the host no longer speaks. The loader must refuse it before
 * it touches any operation, so it has none. */
#include "autoscaled/driver.h"

static const struct autoscaled_driver old_abi = {
	.abi_version = AUTOSCALED_DRIVER_ABI_VERSION - 1,
	.struct_size = sizeof(struct autoscaled_driver),
	.name = "old-abi",
	.description = "test module with an old ABI version",
};

AUTOSCALED_DRIVER_EXPORT const struct autoscaled_driver *autoscaled_driver_info(void)
{
	return &old_abi;
}
