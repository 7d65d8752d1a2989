/* The bounded reply buffer: pieces appended up to the bound, exactly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/buffer.h"

static void test_append_to_the_bound(void **state)
{
	struct bounded_buf b = { 0 };

	(void)state;
	assert_true(bounded_buf_append(&b, "abc", 3, 8));
	assert_true(bounded_buf_append(&b, "defgh", 5, 8));
	assert_int_equal(b.len, 8);
	assert_string_equal(b.data, "abcdefgh");
	assert_false(b.too_big);
	/* One byte more is refused whole, and what came stays. */
	assert_false(bounded_buf_append(&b, "i", 1, 8));
	assert_true(b.too_big);
	assert_string_equal(b.data, "abcdefgh");
	free(b.data);
}

static void test_no_overflow(void **state)
{
	struct bounded_buf b = { 0 };

	(void)state;
	assert_true(bounded_buf_append(&b, "x", 1, 16));
	/* A piece whose length would wrap the sum around is refused. */
	assert_false(bounded_buf_append(&b, "y", SIZE_MAX, 16));
	assert_true(b.too_big);
	assert_int_equal(b.len, 1);
	free(b.data);
	/* Nothing appended: no text at all. */
	b = (struct bounded_buf){ 0 };
	assert_true(bounded_buf_append(&b, "", 0, 16));
	assert_string_equal(b.data, "");
	free(b.data);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_append_to_the_bound),
		cmocka_unit_test(test_no_overflow),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
