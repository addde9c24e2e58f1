/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The private link between the mock CUDA runtime and the mock libcupti: it
 * stands in for the driver export tables the real CUPTI hooks into.  The
 * mock libcupti registers these hooks with the runtime when it starts; the
 * runtime calls them around every API call, for every operation it queues
 * and for every finished operation.
 */
#ifndef MOCK_CUDA_H
#define MOCK_CUDA_H

#include <stdint.h>

enum mock_activity_kind {
	MOCK_KERNEL = 0,
	MOCK_MEMCPY,
	MOCK_MEMSET,
};

/* One operation of the mock device: queued (times 0) or finished. */
struct mock_activity {
	enum mock_activity_kind kind;
	uint64_t token;	   /* the same for an operation's queued and finished reports */
	uint64_t start_ns; /* CLOCK_MONOTONIC: the mock's GPU clock */
	uint64_t end_ns;
	uint32_t device;
	uint32_t context;
	uint32_t stream;
	uint32_t correlation;	     /* the runtime call's */
	uint32_t driver_correlation; /* the driver call made inside it, 0 if none */
	const char *name;	     /* kernels: the registered device name */
	int32_t grid[3];
	int32_t block[3];
	uint64_t bytes;
	uint8_t copy_kind; /* CUpti_ActivityMemcpyKind */
	uint32_t value;	   /* memset */
	uint32_t graph_id;
	uint64_t graph_node_id;
};

struct mock_cuda_tool {
	/* Returns the call's correlation id. */
	uint32_t (*api_enter)(int domain, uint32_t cbid, const char *function, const void *params,
			      const char *symbol);
	/* result: the call's return value (cudaError_t or CUresult), NULL
	 * where the mock does not say. */
	void (*api_exit)(int domain, uint32_t cbid, uint32_t correlation, const char *function,
			 const void *params, const char *symbol, const void *result);
	/* An operation entered the device queue: real CUPTI reserves its
	 * record then, and fills in the times when it finishes. */
	void (*activity_queued)(const struct mock_activity *activity);
	void (*activity)(const struct mock_activity *activity);
};

/* Exported by the mock runtime; the mock libcupti calls it when it starts. */
void mock_cuda_register_tool(const struct mock_cuda_tool *tool);

/* A graph exec handle starts with its id, as cuptiGetGraphExecId reports. */
#define MOCK_GRAPH_EXEC_ID(exec) (*(const uint32_t *)(exec))

#endif /* MOCK_CUDA_H */
