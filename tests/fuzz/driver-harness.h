/* The fake transport that drives a cloud driver from fuzz input; see
 * driver-harness.c. */
#ifndef AUTOSCALED_FUZZ_DRIVER_HARNESS_H
#define AUTOSCALED_FUZZ_DRIVER_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include "autoscaled/driver.h"
#include "cloud/rest.h"

/* Answers the following requests from data (one reply per record) and
 * resets the fake clock to 2026-01-01T00:00:00Z. */
void fuzz_transport_start(const uint8_t *data, size_t size);

/* Opens driver d with options o and drives it through observe,
 * set_capacity, remove_instances and close, answering from data. */
void fuzz_driver_run(const struct autoscaled_driver *d, const struct autoscaled_option *o, size_t n,
		     const uint8_t *data, size_t size);

#endif
