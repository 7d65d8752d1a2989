/* A test module built against the <autoscaled/driver.h> of ABI 1, whose
 * descriptor had reload and read_cpu after the mandatory operations and no
 * sources: this host speaks ABI 2 and must refuse it on its version alone,
 * before it reads any member whose place moved. Its operations are all
 * NULL, so that touching one would crash the test. */
#include <stdint.h>

#include "autoscaled/driver.h"

/* The descriptor as ABI 1 laid it out. */
struct abi1_driver {
	uint32_t abi_version;
	uint32_t struct_size;
	const char *name;
	const char *description;
	const char *config_help;
	void *open, *close, *observe, *set_capacity, *remove_instances, *reload, *read_cpu, *check;
};

static const struct abi1_driver old_abi = {
	.abi_version = 1,
	.struct_size = sizeof(struct abi1_driver),
	.name = "old-abi",
	.description = "test module built for driver ABI 1",
};

AUTOSCALED_DRIVER_EXPORT const struct autoscaled_driver *autoscaled_driver_info(void)
{
	return (const struct autoscaled_driver *)&old_abi;
}
