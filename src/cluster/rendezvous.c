/* Weighted rendezvous hashing: see rendezvous.h. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cluster/rendezvous.h"

/* FNV-1a over the member's name, a NUL, and the group's name, then
 * splitmix64's finalizer, whose avalanche makes scores of names that differ
 * in one character independent. Stable across hosts and versions: every
 * agent must compute the same owner. */
static uint64_t pair_hash(const char *member, const char *group)
{
	uint64_t h = UINT64_C(0xcbf29ce484222325);

	for (const unsigned char *p = (const unsigned char *)member; *p; p++)
		h = (h ^ *p) * UINT64_C(0x100000001b3);
	h = (h ^ 0) * UINT64_C(0x100000001b3);
	for (const unsigned char *p = (const unsigned char *)group; *p; p++)
		h = (h ^ *p) * UINT64_C(0x100000001b3);
	h ^= h >> 30;
	h *= UINT64_C(0xbf58476d1ce4e5b9);
	h ^= h >> 27;
	h *= UINT64_C(0x94d049bb133111eb);
	h ^= h >> 31;
	return h;
}

double rendezvous_score(const char *member, double weight, const char *group)
{
	/* The top 53 bits as a double in (0, 1): never 0 or 1, so the log is
	 * finite and negative. */
	double u = ((double)(pair_hash(member, group) >> 11) + 0.5) / 9007199254740992.0;

	if (!(weight > 0) || !isfinite(weight))
		weight = 1.0;
	return -weight / log(u);
}

int rendezvous_owner(const char *group, const char *pin, const struct rendezvous_member *m, size_t n)
{
	int best = -1;
	double best_score = 0;

	if (pin)
		for (size_t i = 0; i < n; i++)
			if (strcmp(m[i].name, pin) == 0)
				return (int)i;
	for (size_t i = 0; i < n; i++) {
		double s = rendezvous_score(m[i].name, m[i].weight, group);

		if (best < 0 || s > best_score || (s == best_score && strcmp(m[i].name, m[best].name) < 0)) {
			best = (int)i;
			best_score = s;
		}
	}
	return best;
}
