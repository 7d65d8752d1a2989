/* `autoscaled explain`: one evaluation of one group from a clean state,
 * printed as the decision record in JSON. */
#ifndef AUTOSCALED_EXPLAIN_H
#define AUTOSCALED_EXPLAIN_H

/* Runs `explain -c FILE --group NAME --current N [--ready N]
 * [--value SIGNAL=NUMBER]... [--at ISO8601]`. argv[0] is the subcommand's
 * name; options start at argv[1]. Prints the record on stdout and returns
 * 0, or prints why on stderr and returns 1 (bad configuration) or 2 (bad
 * command line). */
int explain_main(int argc, char **argv);

#endif
