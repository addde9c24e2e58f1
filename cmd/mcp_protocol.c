// SPDX-License-Identifier: GPL-2.0
/*
 * The JSON-RPC side of llmprof mcp: one message in, its reply out.  Protocol
 * errors (a line that is not JSON, not a request, an unknown method or
 * tool) are JSON-RPC errors; a tool that ran and failed or refused answers
 * with a result whose isError is true, as the MCP specification asks, so
 * the model reads why.
 */
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp_private.h"

/* The protocol versions this server speaks, newest first. */
static const char *const protocol_versions[] = {
    "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", NULL,
};

#define JSONRPC_PARSE_ERROR -32700
#define JSONRPC_INVALID_REQUEST -32600
#define JSONRPC_METHOD_NOT_FOUND -32601
#define JSONRPC_INVALID_PARAMS -32602
#define JSONRPC_INTERNAL_ERROR -32603

json_t *mcp__text_result(const char *text)
{
	return json_pack("{s:[{s:s,s:s}],s:b}", "content", "type", "text", "text", text, "isError",
			 0);
}

json_t *mcp__tool_error(const char *fmt, ...)
{
	char text[1024];
	va_list args;

	va_start(args, fmt);
	vsnprintf(text, sizeof(text), fmt, args);
	va_end(args);
	return json_pack("{s:[{s:s,s:s}],s:b}", "content", "type", "text", "text", text, "isError",
			 1);
}

static json_t *initialize(json_t *params)
{
	const char *asked = json_string_value(json_object_get(params, "protocolVersion"));
	const char *version = protocol_versions[0];

	for (size_t i = 0; asked && protocol_versions[i]; i++)
		if (!strcmp(asked, protocol_versions[i]))
			version = asked;
	return json_pack("{s:s,s:{s:{s:b}},s:{s:s,s:s},s:s}", "protocolVersion", version,
			 "capabilities", "tools", "listChanged", 0, "serverInfo", "name", "llmprof",
			 "version", LLMPROF_VERSION, "instructions",
			 "llmprof profiles CPU and GPU work of running processes or commands. "
			 "Call profile with a pid or a command, then findings or report on the "
			 "profile path it returns, and diff to compare two profiles.");
}

static int send_message(struct mcp_server *s, json_t *message)
{
	char *text = message ? json_dumps(message, JSON_COMPACT) : NULL;
	int err = 0;

	json_decref(message);
	if (!text)
		return -ENOMEM;
	if (fprintf(s->out, "%s\n", text) < 0 || fflush(s->out))
		err = -EIO;
	free(text);
	return err;
}

int mcp__send_error(struct mcp_server *s, json_t *id, int code, const char *message)
{
	return send_message(s, json_pack("{s:s,s:O,s:{s:i,s:s}}", "jsonrpc", "2.0", "id",
					 id ? id : json_null(), "error", "code", code, "message",
					 message));
}

/* tools/call: a result, or NULL with a protocol error in *code and why. */
static json_t *call_tool(struct mcp_server *s, json_t *params, int *code, char *why, size_t size)
{
	json_t *name = json_object_get(params, "name"),
	       *args = json_object_get(params, "arguments");
	json_t *empty, *result;
	mcp_tool_fn tool;

	*code = JSONRPC_INVALID_PARAMS;
	if (!json_is_string(name)) {
		snprintf(why, size, "tools/call needs a tool 'name'");
		return NULL;
	}
	if (args && !json_is_object(args)) {
		snprintf(why, size, "'arguments' must be an object");
		return NULL;
	}
	tool = mcp_tools__find(json_string_value(name));
	if (!tool) {
		snprintf(why, size, "unknown tool '%.200s'", json_string_value(name));
		return NULL;
	}
	if (args)
		return tool(s, args);
	empty = json_object();
	result = empty ? tool(s, empty) : NULL;
	json_decref(empty);
	return result;
}

int mcp__handle(struct mcp_server *s, const char *line, size_t len)
{
	json_error_t parse_error;
	json_t *message =
	    json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &parse_error);
	json_t *id, *params, *result = NULL;
	const char *method;
	char why[512] = "";
	int code = JSONRPC_INTERNAL_ERROR, err;

	if (!message)
		return mcp__send_error(s, NULL, JSONRPC_PARSE_ERROR, parse_error.text);
	if (!json_is_object(message)) {
		json_decref(message);
		/* Batches were removed from the protocol in 2025-06-18. */
		return mcp__send_error(s, NULL, JSONRPC_INVALID_REQUEST,
				       "a message must be a JSON object");
	}
	id = json_object_get(message, "id");
	method = json_string_value(json_object_get(message, "method"));
	params = json_object_get(message, "params");
	if (!method) {
		/* A response to us (we send no requests), or garbage. */
		err =
		    id && !json_object_get(message, "result") && !json_object_get(message, "error")
			? mcp__send_error(s, id, JSONRPC_INVALID_REQUEST, "no method")
			: 0;
		json_decref(message);
		return err;
	}
	if (id && !json_is_string(id) && !json_is_integer(id)) {
		err = mcp__send_error(s, NULL, JSONRPC_INVALID_REQUEST,
				      "the id must be a string or an integer");
		json_decref(message);
		return err;
	}
	if (params && !json_is_object(params)) {
		err =
		    id ? mcp__send_error(s, id, JSONRPC_INVALID_PARAMS, "params must be an object")
		       : 0;
		json_decref(message);
		return err;
	}
	if (!id) { /* notifications: initialized, cancelled, ... need no answer */
		json_decref(message);
		return 0;
	}
	if (!strcmp(method, "initialize")) {
		result = initialize(params);
	} else if (!strcmp(method, "ping")) {
		result = json_object();
	} else if (!strcmp(method, "tools/list")) {
		result = mcp_tools__list();
	} else if (!strcmp(method, "tools/call")) {
		result = call_tool(s, params, &code, why, sizeof(why));
	} else {
		code = JSONRPC_METHOD_NOT_FOUND;
		snprintf(why, sizeof(why), "unknown method '%.200s'", method);
	}
	if (result)
		err = send_message(
		    s, json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", id, "result", result));
	else
		err = mcp__send_error(s, id, code, why[0] ? why : "out of memory");
	json_decref(message);
	return err;
}
