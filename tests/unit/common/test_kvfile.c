/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for common/kvfile: the "KEY = VALUE" reader (comments, blank
 * lines, CRLF, quotes, the line limit, NUL bytes, errors naming file:line,
 * a callback's error, files that cannot be opened) and the snake_case
 * spelling of keys.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/kvfile.h"

/* What the callback saw: "line:key=value;" per pair. */
struct seen {
	char text[16384];
	unsigned int stop_at; /* line whose key the callback refuses; 0 = none */
};

static int collect(void *ctx, const struct loom_kv *kv, struct loom_err *err)
{
	struct seen *s = ctx;
	size_t n = strlen(s->text);

	if (kv->line == s->stop_at)
		return loom_err_set(err, ENOENT, "unknown key '%s'", kv->key);
	snprintf(s->text + n, sizeof(s->text) - n, "%u:%s=%s;", kv->line, kv->key, kv->value);
	return 0;
}

/* Reads text (len bytes, NULs allowed) as "t.conf"; returns what the reader returned. */
static int read_text(const char *text, size_t len, struct seen *s, struct loom_err *err)
{
	FILE *f = fmemopen((void *)text, len, "r");
	int r;

	assert_non_null(f);
	r = loom_kv_read(f, "t.conf", collect, s, err);
	fclose(f);
	return r;
}

static void expect_read(const char *text, const char *want)
{
	struct seen s = {{0}, 0};
	struct loom_err err = {{0}};
	int r = read_text(text, strlen(text), &s, &err);

	if (r != 0)
		fail_msg("'%s': refused (%d): %s", text, r, err.msg);
	if (strcmp(s.text, want) != 0)
		fail_msg("'%s': read '%s', want '%s'", text, s.text, want);
}

static void expect_error(const char *text, size_t len, int code, const char *want)
{
	struct seen s = {{0}, 0};
	struct loom_err err = {{0}};
	int r = read_text(text, len, &s, &err);

	if (r != -code)
		fail_msg("got %d, want %d (%s)", r, -code, err.msg);
	if (strcmp(err.msg, want) != 0)
		fail_msg("message '%s', want '%s'", err.msg, want);
}

static void test_lines(void **state)
{
	(void)state;
	expect_read("", "");
	expect_read("\n\n   \n\t\n", "");
	expect_read("# only a comment\n   # indented\n", "");
	expect_read("a = 1\n", "1:a=1;");
	expect_read("a=1", "1:a=1;"); /* no final newline */
	expect_read("\ta  =  x y  \n", "1:a=x y;");
	expect_read("a = 1 # comment\nb = 2#c\n", "1:a=1;2:b=2;");
	expect_read("a =\nb = # nothing\n", "1:a=;2:b=;");
	expect_read("a = x=y\n", "1:a=x=y;");
	expect_read("a = 1\na = 2\n", "1:a=1;2:a=2;"); /* repeats are the caller's */
	expect_read("host-id = 3\n", "1:host-id=3;");
	/* CRLF reads as LF; a carriage return elsewhere is space */
	expect_read("# c\r\n\r\na = 1\r\nb = \"x\"\r\nc = 2 # c\r\n", "3:a=1;4:b=x;5:c=2;");
	expect_read("a = 1\r", "1:a=1;");
}

static void test_quotes(void **state)
{
	(void)state;
	expect_read("a = \"\"\n", "1:a=;");
	expect_read("a = \"x y \"\n", "1:a=x y ;");
	expect_read("a = \"/tmp/a # b\"  # comment\n", "1:a=/tmp/a # b;");
	expect_read("a = \"x\"#c\n", "1:a=x;");
	expect_read("a = \"\n", "1:a=\";"); /* one quote alone is kept */
	expect_read("a = \"x\n", "1:a=\"x;");
	expect_read("a = x\"y\"\n", "1:a=x\"y\";");
	expect_read("a = \"x\" y\n", "1:a=\"x\" y;"); /* not wholly quoted: kept */
	expect_read("a = \"x\"y\"\n", "1:a=x\"y;");
	expect_read("a = \"x # y\n", "1:a=\"x;"); /* an unclosed quote does not hide '#' */
}

static void test_errors(void **state)
{
	static char big[LOOM_KV_LINE_MAX + 64];
	struct seen s = {{0}, 2};
	struct loom_err err = {{0}};

	(void)state;
	expect_error("a = 1\njust words\n", 11 + 6, EINVAL, "t.conf:2: expected 'key = value'");
	expect_error("# x = 1\nkey # = 1\n", 18, EINVAL, "t.conf:2: expected 'key = value'");
	expect_error("\n = 3\n", 6, EINVAL, "t.conf:2: expected 'key = value': no key before '='");
	expect_error("a = 1\nb = x\0y\n", 13, EINVAL, "t.conf:2: NUL byte in the line");

	/* the longest line, with LF or CRLF, and one more character */
	memcpy(big, "k = ", 4);
	memset(big + 4, 'x', LOOM_KV_LINE_MAX - 4);
	strcpy(big + LOOM_KV_LINE_MAX, "\r\n");
	assert_int_equal(read_text(big, strlen(big), &s, &err), 0);
	assert_int_equal(strlen(s.text), 2 + 2 + LOOM_KV_LINE_MAX - 4 + 1);
	strcpy(big + LOOM_KV_LINE_MAX, "\n");
	s.text[0] = '\0';
	assert_int_equal(read_text(big, strlen(big), &s, &err), 0);
	strcpy(big + LOOM_KV_LINE_MAX, "x\n");
	expect_error(big, strlen(big), EINVAL, "t.conf:1: line longer than 4096 characters");
	memset(big + LOOM_KV_LINE_MAX, 'x', 40);
	strcpy(big + LOOM_KV_LINE_MAX + 40, "\n");
	expect_error(big, strlen(big), EINVAL, "t.conf:1: line longer than 4096 characters");

	/* the callback's error stops the reading, with file:line in front */
	s.text[0] = '\0';
	assert_int_equal(read_text("a = 1\nb = 2\nc = 3\n", 18, &s, &err), -ENOENT);
	assert_string_equal(err.msg, "t.conf:2: unknown key 'b'");
	assert_string_equal(s.text, "1:a=1;");
}

static void test_load(void **state)
{
	char dir[] = "/tmp/loom-kvfile-XXXXXX", path[64];
	struct seen s = {{0}, 0};
	struct loom_err err = {{0}};
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/a.conf", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("# a file\nx = \"1\"\n", f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(loom_kv_load(path, collect, &s, &err), 0);
	assert_string_equal(s.text, "2:x=1;");
	s.stop_at = 2;
	assert_int_equal(loom_kv_load(path, collect, &s, &err), -ENOENT);
	assert_non_null(strstr(err.msg, path));
	assert_non_null(strstr(err.msg, ":2: unknown key 'x'"));
	/* a folder opens but does not read */
	assert_int_equal(loom_kv_load(dir, collect, &s, &err), -EISDIR);
	assert_non_null(strstr(err.msg, dir));
	assert_int_equal(unlink(path), 0);
	assert_int_equal(loom_kv_load(path, collect, &s, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "No such file"));
	assert_int_equal(rmdir(dir), 0);
}

static void test_snake(void **state)
{
	char buf[16];

	(void)state;
	assert_true(loom_kv_key_snake("host-id", buf, sizeof(buf)));
	assert_string_equal(buf, "host_id");
	assert_false(loom_kv_key_snake("host_id", buf, sizeof(buf)));
	assert_string_equal(buf, "host_id");
	assert_false(loom_kv_key_snake("", buf, sizeof(buf)));
	assert_string_equal(buf, "");
	assert_false(loom_kv_key_snake("a-very-long-key-name", buf, sizeof(buf)));
	assert_string_equal(buf, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lines),  cmocka_unit_test(test_quotes),
		cmocka_unit_test(test_errors), cmocka_unit_test(test_load),
		cmocka_unit_test(test_snake),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
