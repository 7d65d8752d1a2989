/* The simulator as a program of its own, for bench/evaluate and for runs
 * against a build whose daemon does not dispatch `simulate` yet:
 *   bench/simulate-bench -c FILE --group NAME --trace FILE --format F ... */
#include "log/log.h"
#include "simulation/simulate.h"

int main(int argc, char **argv)
{
	log_init(true, false);
	return simulate_main(argc, argv);
}
