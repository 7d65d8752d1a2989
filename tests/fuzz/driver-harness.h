/* The fake transport that drives a cloud driver from fuzz input; see
 * driver-harness.c. */
#ifndef AUTOSCALED_FUZZ_DRIVER_HARNESS_H
#define AUTOSCALED_FUZZ_DRIVER_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include "autoscaled/driver.h"
#include "cloud/rest.h"

void fuzz_driver_run(const struct autoscaled_driver *d, const struct autoscaled_option *o, size_t n,
		     const uint8_t *data, size_t size);

#endif
