/* A structure-aware mutation for JSON inputs. A byte-level fuzzer rarely
 * turns an object into an array or a number into a string without breaking
 * the syntax around it, yet such type confusion is what a hostile or buggy
 * peer sends. This mutator parses the input with cJSON, changes the tree
 * and prints it back, so every mutant is valid JSON of a different shape.
 *
 * Inputs may hold several JSON documents separated by FUZZ_RS (the ASCII
 * record separator; the driver targets feed one reply per record), and each
 * record may start with fuzz_json_header_lines lines of parameters that are
 * kept as they are. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "fuzz.h"

/* Targets that put parameter lines before their JSON set this. */
int fuzz_json_header_lines __attribute__((weak)) = 0;

struct rng {
	uint64_t s;
};

static unsigned int rnd(struct rng *r, unsigned int n)
{
	/* xorshift64*: cheap and reproducible from libFuzzer's seed. */
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return n ? (unsigned int)((r->s * UINT64_C(2685821657736338717)) >> 33) % n : 0;
}

struct pick {
	unsigned int want, seen;
	cJSON *node, *parent;
};

static void walk(cJSON *node, cJSON *parent, struct pick *p)
{
	for (; node; node = node->next) {
		if (p->seen++ == p->want) {
			p->node = node;
			p->parent = parent;
		}
		walk(node->child, node, p);
	}
}

static unsigned int count(const cJSON *node)
{
	unsigned int n = 0;

	for (; node; node = node->next)
		n += 1 + count(node->child);
	return n;
}

/* Numbers at the edges of what a parser converts: beyond int, int64 and
 * double, negative zero, the smallest subnormal, and integers that doubles
 * cannot hold exactly. */
static const double extremes[] = {
	0.0, -0.0, -1.0, 1.0, 0.5, 2147483647.0, 2147483648.0, -2147483649.0, 4294967296.0,
	9007199254740993.0, 9223372036854775807.0, 18446744073709551616.0, -9223372036854775808.0,
	1e308, -1e308, 4.9e-324, 1e-300,
};
static const char *const strings[] = {
	"", "0", "-1", "1e999", "NaN", "inf", "99999999999999999999", "0x10", " 1", "1 ", "true", "null",
	"2024-05-01T10:00:00Z", "9999-12-31T23:59:59.999999999+14:00", "%s%n", "../..", "a/b~1c",
	"RUNNING", "DONE", "Succeeded", "Failed", "PROVISIONING", "STOPPING", "DELETING",
};

static cJSON *replacement(struct rng *r, cJSON *old)
{
	cJSON *n;

	switch (rnd(r, 9)) {
	case 0:
		return cJSON_CreateNull();
	case 1:
		return cJSON_CreateBool(rnd(r, 2));
	case 2:
		return cJSON_CreateNumber(extremes[rnd(r, sizeof(extremes) / sizeof(extremes[0]))]);
	case 3:
		return cJSON_CreateString(strings[rnd(r, sizeof(strings) / sizeof(strings[0]))]);
	case 4:
		return cJSON_CreateObject();
	case 5:
		return cJSON_CreateArray();
	case 6:
		/* The same value one level deeper: [x]. */
		n = cJSON_CreateArray();
		if (n)
			cJSON_AddItemToArray(n, cJSON_Duplicate(old, true));
		return n;
	case 7:
		/* A number as a string or a string as a number, as peers mix. */
		if (cJSON_IsNumber(old)) {
			char buf[64];

			snprintf(buf, sizeof(buf), "%.17g", old->valuedouble);
			return cJSON_CreateString(buf);
		}
		if (cJSON_IsString(old))
			return cJSON_CreateNumber(strtod(old->valuestring, NULL));
		return cJSON_CreateNumber(1e308);
	default:
		/* An object's members as an array, or an array's elements as an
		 * object's, keeping the contents. */
		n = cJSON_Duplicate(old, true);
		if (n && cJSON_IsObject(n))
			n->type = (n->type & ~0xFF) | cJSON_Array;
		else if (n && cJSON_IsArray(n)) {
			int i = 0;

			n->type = (n->type & ~0xFF) | cJSON_Object;
			for (cJSON *c = n->child; c; c = c->next) {
				char key[16];

				if (c->string && !(c->type & cJSON_StringIsConst))
					free(c->string);
				snprintf(key, sizeof(key), "k%d", i++);
				c->string = strdup(key);
				c->type &= ~cJSON_StringIsConst;
			}
		}
		return n;
	}
}

/* Mutates the tree; returns the (possibly new) root. */
static cJSON *mutate_tree(struct rng *r, cJSON *root)
{
	struct pick p = { .want = rnd(r, count(root)) };
	cJSON *rep;

	walk(root, NULL, &p);
	if (!p.node)
		return root;
	switch (rnd(r, 4)) {
	case 0:
		/* Drop a member or an element. */
		if (p.parent) {
			cJSON_Delete(cJSON_DetachItemViaPointer(p.parent, p.node));
			return root;
		}
		break;
	case 1:
		/* Duplicate it: an object with the key twice, or an extra element. */
		if (p.parent) {
			cJSON *d = cJSON_Duplicate(p.node, true);

			if (d && cJSON_IsObject(p.parent))
				cJSON_AddItemToObject(p.parent, p.node->string ? p.node->string : "k", d);
			else if (d)
				cJSON_AddItemToArray(p.parent, d);
			return root;
		}
		break;
	default:
		break;
	}
	rep = replacement(r, p.node);
	if (!rep)
		return root;
	if (!p.parent) {
		cJSON_Delete(root);
		return rep;
	}
	if (rep->string && !(rep->type & cJSON_StringIsConst))
		free(rep->string);
	rep->string = NULL;
	if (p.node->string) {
		rep->string = strdup(p.node->string);
		rep->type &= ~cJSON_StringIsConst;
	}
	cJSON_ReplaceItemViaPointer(p.parent, p.node, rep);
	return root;
}

/* The [start, end) of one record and of its JSON after the header lines. */
static bool pick_record(struct rng *r, const uint8_t *data, size_t size, size_t *js, size_t *je)
{
	size_t n = 1, k, start = 0, end = size;

	for (size_t i = 0; i < size; i++)
		n += data[i] == 0x1e;
	k = rnd(r, (unsigned int)n);
	for (size_t i = 0, rec = 0; i <= size; i++) {
		if (i == size || data[i] == 0x1e) {
			if (rec == k) {
				end = i;
				break;
			}
			rec++;
			start = i + 1;
		}
	}
	for (int h = 0; h < fuzz_json_header_lines && start < end; h++) {
		const uint8_t *nl = memchr(data + start, '\n', end - start);

		if (!nl)
			return false;
		start = (size_t)(nl - data) + 1;
	}
	*js = start;
	*je = end;
	return true;
}

size_t fuzz_json_mutate(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
	struct rng r = { .s = (uint64_t)seed * 0x9E3779B97F4A7C15u + 1 };
	size_t js, je, out_len;
	cJSON *root;
	char *text, *out;

	if (rnd(&r, 2) == 0 || !pick_record(&r, data, size, &js, &je))
		return LLVMFuzzerMutate(data, size, max_size);
	text = fuzz_strndup(data + js, je - js);
	root = cJSON_Parse(text);
	free(text);
	if (!root)
		return LLVMFuzzerMutate(data, size, max_size);
	for (unsigned int i = 0, n = 1 + rnd(&r, 3); i < n; i++)
		root = mutate_tree(&r, root);
	out = root ? cJSON_PrintUnformatted(root) : NULL;
	cJSON_Delete(root);
	if (!out)
		return LLVMFuzzerMutate(data, size, max_size);
	out_len = strlen(out);
	if (js + out_len + (size - je) > max_size) {
		free(out);
		return LLVMFuzzerMutate(data, size, max_size);
	}
	memmove(data + js + out_len, data + je, size - je);
	memcpy(data + js, out, out_len);
	free(out);
	return js + out_len + (size - je);
}
