/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target for the web UI's request parsing (controlplane/loomd/webui.c):
 * the input's first line is "METHOD URL", the rest a policy switch's body.
 *
 * loomd_webui_route() must always decide: an error with one of its statuses
 * and a message, an embedded file, an API call naming an admin command (a
 * job id argument only for "job", and then all digits), or the policy
 * switch (POST /api/v1/policy only). loomd_webui_policy_body() must take
 * exactly a JSON object whose only member "policy" is a string without NUL,
 * and say why otherwise. Anything else (crash, sanitizer report, leak,
 * abort) is a bug.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "controlplane/loomd/webui.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_route(const char *method, const char *url)
{
	struct loomd_webui_route r;

	memset(&r, 0xa5, sizeof(r));
	if (loomd_webui_route(method, url, &r) != 0)
		abort();
	switch (r.kind) {
	case LOOMD_WEBUI_ERROR:
		if (r.status != 400 && r.status != 404 && r.status != 405 && r.status != 414)
			abort();
		if (!r.error || !r.error[0])
			abort();
		break;
	case LOOMD_WEBUI_ASSET:
		if (!r.asset || r.status != 200 || strncmp(url, "/", 1) != 0)
			abort();
		break;
	case LOOMD_WEBUI_API:
		if (!r.cmd || strncmp(url, "/api/v1/", 8) != 0)
			abort();
		if (strcmp(r.cmd, "job") == 0 ?
			    !r.arg[0] || strspn(r.arg, "0123456789") != strlen(r.arg) :
			    r.arg[0] != 0)
			abort();
		break;
	case LOOMD_WEBUI_POST:
		if (strcmp(method, "POST") != 0 || strcmp(url, "/api/v1/policy") != 0)
			abort();
		break;
	default:
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nl = memchr(data, '\n', size);
	size_t line = nl ? (size_t)(nl - data) : size;
	char *head = malloc(line + 1), *sp, spec[256];
	struct loom_err err = {{0}};
	int r;

	if (!head)
		return 0;
	memcpy(head, data, line);
	head[line] = 0;
	sp = strchr(head, ' ');
	if (sp) {
		*sp = 0;
		check_route(head, sp + 1);
	} else {
		check_route("GET", head);
	}
	free(head);
	if (nl) {
		const char *body = (const char *)nl + 1;
		size_t n = size - line - 1;

		r = loomd_webui_policy_body(body, n, spec, sizeof(spec), &err);
		if (r == 0 && (!memchr(spec, 0, sizeof(spec)) || strlen(spec) >= sizeof(spec)))
			abort();
		if (r != 0 && (r != -EINVAL || strncmp(err.msg, "body: ", 6) != 0))
			abort();
	}
	return 0;
}
