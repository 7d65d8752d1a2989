/* The Azure scale set driver end to end: IMDS token, scale set get,
 * virtualMachines pages with their instance views, capacity PATCH,
 * delete, and Azure-AsyncOperation polling, all replies from the input
 * (see driver-harness.c). */
#include "driver-harness.h"
#include "fuzz.h"

const struct autoscaled_driver *autoscaled_driver_info(void);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_quiet();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct autoscaled_option o[] = {
		{ .key = "subscription", .value = "00000000-0000-0000-0000-000000000000" },
		{ .key = "resource_group", .value = "rg" },
		{ .key = "name", .value = "web" },
		{ .key = "operation_timeout", .value = "5m" },
		{ .key = "poll_interval", .value = "1s" },
	};

	fuzz_driver_run(autoscaled_driver_info(), o, sizeof(o) / sizeof(o[0]), data, size);
	return 0;
}
