/* A test module that exports a function under another name than the ABI's
 * one symbol, as a collectd-style plugin or a misspelled driver would. */
#include "autoscaled/driver.h"

int module_register(void);

__attribute__((visibility("default"))) int module_register(void)
{
	return 0;
}
