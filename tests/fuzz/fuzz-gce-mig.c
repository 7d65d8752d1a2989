/* The GCE managed instance group driver end to end: metadata token,
 * instanceGroupManagers get, listManagedInstances pages, resize,
 * deleteInstances and operation polling, all replies from the input (see
 * driver-harness.c). */
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
		{ .key = "project", .value = "p" },
		{ .key = "zone", .value = "europe-west1-b" },
		{ .key = "name", .value = "web" },
		{ .key = "page_size", .value = "2" },
		{ .key = "operation_timeout", .value = "5m" },
	};

	fuzz_driver_run(autoscaled_driver_info(), o, sizeof(o) / sizeof(o[0]), data, size);
	return 0;
}
