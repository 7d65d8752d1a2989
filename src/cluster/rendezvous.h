/* Which agent manages a group: weighted rendezvous (highest random weight)
 * hashing, a pure function of the group's name, its pin and the members.
 *
 * Each member scores each group with a hash of the pair; the highest score
 * wins. A member that joins takes from each other member only the groups
 * where it scores highest, and one that leaves hands over only its own
 * groups, spread over the rest: nothing else moves. Weights scale the
 * scores as in Schindelhauer and Schomaker's weighted distributed hash
 * tables: score = -weight / ln(h), h uniform in (0, 1), which gives each
 * member a share of the groups proportional to its weight. */
#ifndef AUTOSCALED_CLUSTER_RENDEZVOUS_H
#define AUTOSCALED_CLUSTER_RENDEZVOUS_H

#include <stddef.h>

struct rendezvous_member {
	const char *name;
	double weight; /* > 0; anything else counts as 1 */
};

/* Member i's score for GROUP. */
double rendezvous_score(const char *member, double weight, const char *group);

/* The index in m of the member that manages GROUP: the one named PIN when
 * pin is not NULL and is a member, else the highest score (ties, which
 * need equal hashes, go to the smaller name, so that the answer does not
 * depend on the members' order). -1 when n is 0. */
int rendezvous_owner(const char *group, const char *pin, const struct rendezvous_member *m, size_t n);

#endif
