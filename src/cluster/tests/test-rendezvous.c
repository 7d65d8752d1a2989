/* Weighted rendezvous hashing: shares follow weights, a member joining or
 * leaving moves only its own share, pins win while their agent is up, and
 * the answer depends on neither the members' order nor the process. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cluster/rendezvous.h"

#define N_GROUPS 3000

static char names[N_GROUPS][32];

static int setup(void **state)
{
	(void)state;
	for (int i = 0; i < N_GROUPS; i++)
		snprintf(names[i], sizeof(names[i]), "group-%d", i);
	return 0;
}

/* Owners of every group by name, for comparisons across member sets. */
static void owners(const struct rendezvous_member *m, size_t n, const char **out)
{
	for (int i = 0; i < N_GROUPS; i++) {
		int k = rendezvous_owner(names[i], NULL, m, n);

		assert_true(k >= 0 && (size_t)k < n);
		out[i] = m[k].name;
	}
}

static int count(const char **o, const char *name)
{
	int c = 0;

	for (int i = 0; i < N_GROUPS; i++)
		c += strcmp(o[i], name) == 0;
	return c;
}

static void test_equal_shares(void **state)
{
	const struct rendezvous_member m[] = { { "a", 1 }, { "b", 1 }, { "c", 1 } };
	static const char *o[N_GROUPS];

	(void)state;
	owners(m, 3, o);
	/* 1000 each expected; a binomial's sd is ~26, so +-10% is > 3 sd. */
	for (int i = 0; i < 3; i++) {
		int c = count(o, m[i].name);

		assert_in_range(c, 900, 1100);
	}
}

static void test_weights(void **state)
{
	const struct rendezvous_member m[] = { { "a", 2 }, { "b", 1 }, { "c", 1 } };
	static const char *o[N_GROUPS];

	(void)state;
	owners(m, 3, o);
	/* 1500 / 750 / 750 expected. */
	assert_in_range(count(o, "a"), 1380, 1620);
	assert_in_range(count(o, "b"), 660, 840);
	assert_in_range(count(o, "c"), 660, 840);
}

/* A fourth member takes about a quarter, all of it from the others, and
 * nothing moves between the three. Its leaving gives back exactly that. */
static void test_join_and_leave_move_only_their_share(void **state)
{
	const struct rendezvous_member three[] = { { "a", 1 }, { "b", 1 }, { "c", 1 } };
	const struct rendezvous_member four[] = { { "a", 1 }, { "b", 1 }, { "c", 1 }, { "d", 1 } };
	static const char *o3[N_GROUPS], *o4[N_GROUPS];
	int moved = 0;

	(void)state;
	owners(three, 3, o3);
	owners(four, 4, o4);
	for (int i = 0; i < N_GROUPS; i++) {
		if (strcmp(o3[i], o4[i]) != 0) {
			moved++;
			assert_string_equal(o4[i], "d");
		}
	}
	assert_int_equal(moved, count(o4, "d"));
	assert_in_range(moved, 650, 850);

	/* b leaves the four: only b's groups move. */
	{
		const struct rendezvous_member acd[] = { { "a", 1 }, { "c", 1 }, { "d", 1 } };
		static const char *o[N_GROUPS];

		owners(acd, 3, o);
		for (int i = 0; i < N_GROUPS; i++)
			if (strcmp(o4[i], "b") != 0)
				assert_string_equal(o[i], o4[i]);
	}
}

static void test_order_independent(void **state)
{
	const struct rendezvous_member m1[] = { { "a", 1 }, { "b", 2 }, { "c", 1 } };
	const struct rendezvous_member m2[] = { { "c", 1 }, { "a", 1 }, { "b", 2 } };

	(void)state;
	for (int i = 0; i < N_GROUPS; i++)
		assert_string_equal(m1[rendezvous_owner(names[i], NULL, m1, 3)].name,
				    m2[rendezvous_owner(names[i], NULL, m2, 3)].name);
}

static void test_pin(void **state)
{
	const struct rendezvous_member m[] = { { "a", 1 }, { "b", 1 }, { "c", 1 } };

	(void)state;
	for (int i = 0; i < 100; i++) {
		assert_int_equal(rendezvous_owner(names[i], "c", m, 3), 2);
		/* A pin to an agent that is not a member: hashing decides. */
		assert_int_equal(rendezvous_owner(names[i], "z", m, 3), rendezvous_owner(names[i], NULL, m, 3));
	}
	assert_int_equal(rendezvous_owner("g", NULL, m, 0), -1);
	assert_int_equal(rendezvous_owner("g", "a", m, 0), -1);
}

/* The hash is part of the protocol between agents: every version of the
 * daemon must compute the same owners, so these values are fixed. */
static void test_stable_values(void **state)
{
	const struct rendezvous_member m[] = { { "agent-a", 1 }, { "agent-b", 1 }, { "agent-c", 1 } };
	double s1 = rendezvous_score("agent-a", 1, "web"), s2 = rendezvous_score("agent-a", 1, "web");

	(void)state;
	assert_true(s1 == s2);
	assert_true(s1 > 0);
	/* Weight scales the score. */
	assert_true(rendezvous_score("agent-a", 2, "web") == 2 * s1);
	/* A bad weight counts as 1. */
	assert_true(rendezvous_score("agent-a", 0, "web") == s1);
	assert_true(rendezvous_score("agent-a", -3, "web") == s1);
	/* Names concatenating alike are different pairs. */
	assert_true(rendezvous_score("ab", 1, "c") != rendezvous_score("a", 1, "bc"));
	assert_string_equal(m[rendezvous_owner("web", NULL, m, 3)].name, "agent-a");
	assert_string_equal(m[rendezvous_owner("db", NULL, m, 3)].name, "agent-b");
	assert_string_equal(m[rendezvous_owner("queue", NULL, m, 3)].name, "agent-b");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_equal_shares),
		cmocka_unit_test(test_weights),
		cmocka_unit_test(test_join_and_leave_move_only_their_share),
		cmocka_unit_test(test_order_independent),
		cmocka_unit_test(test_pin),
		cmocka_unit_test(test_stable_values),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
