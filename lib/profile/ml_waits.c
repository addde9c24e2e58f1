// SPDX-License-Identifier: GPL-2.0
/* The table of ML waits (ml_waits.h) and its matching. */
#include <string.h>

#include "profile/ml_waits.h"
#include "profile/python_frame.h"

/* Table order matters where several entries match: the first names it. */
const struct ml_wait ml_waits[] = {
    {"cudaStreamSynchronize", "waiting for the GPU", ML_WAIT_GPU_SYNC},
    {"cudaStreamSynchronize_ptsz", "waiting for the GPU", ML_WAIT_GPU_SYNC},
    {"cudaDeviceSynchronize", "waiting for the GPU", ML_WAIT_GPU_SYNC},
    {"cudaEventSynchronize", "waiting for the GPU", ML_WAIT_GPU_SYNC},
    {"cudaMemcpy", "waiting for a GPU copy", ML_WAIT_GPU_SYNC},
    {"cudaMemcpy_ptds", "waiting for a GPU copy", ML_WAIT_GPU_SYNC},
    {"cudaMemcpy2D", "waiting for a GPU copy", ML_WAIT_GPU_SYNC},
    {"cuStreamSynchronize", "waiting for the GPU", ML_WAIT_GPU_SYNC},
    {"cuStreamSynchronize_ptsz", "waiting for the GPU", ML_WAIT_GPU_SYNC},
    {"cuCtxSynchronize", "waiting for the GPU", ML_WAIT_GPU_SYNC},
    {"cuEventSynchronize", "waiting for the GPU", ML_WAIT_GPU_SYNC},
    {"cuMemcpyDtoH_v2", "waiting for a GPU copy", ML_WAIT_GPU_SYNC},
    {"cuMemcpyHtoD_v2", "waiting for a GPU copy", ML_WAIT_GPU_SYNC},
    {"cuMemcpyDtoH", "waiting for a GPU copy", ML_WAIT_GPU_SYNC},
    {"cuMemcpyHtoD", "waiting for a GPU copy", ML_WAIT_GPU_SYNC},
    /* PyTorch's entries that end in one of the above: .item(), .tolist(),
     * .cpu(). */
    {"THPVariable_item", "waiting for the GPU", ML_WAIT_GPU_SYNC},
    {"THPVariable_tolist", "waiting for the GPU", ML_WAIT_GPU_SYNC},
    {"*_local_scalar_dense*", "waiting for the GPU", ML_WAIT_GPU_SYNC},
    /* The other copies block too, from pageable memory. */
    {"cudaMemcpy*", "waiting for a GPU copy", ML_WAIT_GPU_COPY},
    {"nccl*", "communication: waiting in a collective", ML_WAIT_COLLECTIVE},
    /* torch.distributed's wait for a collective's work (gloo, NCCL). */
    {"c10d::Work::wait", "communication: waiting in a collective", ML_WAIT_COLLECTIVE},
    {"c10d::ProcessGroupGloo::AsyncWork::wait", "communication: waiting in a collective",
     ML_WAIT_COLLECTIVE},
    {"c10d::ProcessGroupNCCL::WorkNCCL::wait", "communication: waiting in a collective",
     ML_WAIT_COLLECTIVE},
    /* The process group's store: ranks meeting at init_process_group or a
     * store-based barrier (not a collective's work: no straggler reads it). */
    {"c10d::TCPStore::*", "communication: ranks meeting at the store (rendezvous)",
     ML_WAIT_COLLECTIVE, false, true},
    /* gloo's threads: a work thread with no collective queued, one that
     * runs a collective and waits for the other ranks' data, and the
     * thread that moves the bytes. */
    {"c10d::ProcessGroupGloo::runLoop", "communication: gloo thread idle, no collective queued",
     ML_WAIT_COLLECTIVE, true, true},
    {"gloo::transport::tcp::Loop::run", "communication: gloo's network thread between messages",
     ML_WAIT_COLLECTIVE, false, true},
    {"gloo::*", "communication: a gloo collective waiting for another rank", ML_WAIT_COLLECTIVE,
     false, true},
    {"take_gil", "waiting for the GIL", ML_WAIT_GIL},
    {"PyEval_RestoreThread", "waiting for the GIL", ML_WAIT_GIL},
    {"PyEval_AcquireThread", "waiting for the GIL", ML_WAIT_GIL},
    {"PyEval_AcquireLock", "waiting for the GIL", ML_WAIT_GIL},
    {"PyGILState_Ensure", "waiting for the GIL", ML_WAIT_GIL},
    {"_next_data (torch/utils/data/dataloader.py)", "waiting for a DataLoader worker",
     ML_WAIT_DATA},
    {".get (queue.py)", "waiting on a queue", ML_WAIT_DATA},
    {".get (multiprocessing/queues.py)", "waiting for another process", ML_WAIT_DATA},
    {".recv_bytes (multiprocessing/connection.py)", "waiting for another process", ML_WAIT_DATA},
    {"._wait_for_tstate_lock (threading.py)", "waiting for a thread to end", ML_WAIT_THREAD},
    {".wait (threading.py)", "waiting on a threading condition", ML_WAIT_THREAD},
    {".acquire (threading.py)", "waiting on a lock", ML_WAIT_THREAD},
};

const size_t nr_ml_waits = sizeof(ml_waits) / sizeof(ml_waits[0]);

bool frame_name__matches(const char *name, const char *pattern)
{
	size_t len = strlen(pattern);

	if (!name)
		return false;
	if (pattern[0] == '*' && len > 2 && pattern[len - 1] == '*') {
		char part[128];

		if (len - 2 >= sizeof(part))
			return false;
		memcpy(part, pattern + 1, len - 2);
		part[len - 2] = '\0';
		return strstr(name, part) != NULL;
	}
	if (len && pattern[len - 1] == '*')
		return !strncmp(name, pattern, len - 1);
	return !strncmp(name, pattern, len) && (!name[len] || name[len] == '(' || name[len] == '@');
}

const struct ml_wait *ml_wait__find(const struct frame *f, unsigned int kinds)
{
	char python[512];

	if (f->kind == FRAME_PYTHON)
		python_frame__text(f, python, sizeof(python));
	for (size_t i = 0; i < nr_ml_waits; i++) {
		const struct ml_wait *w = &ml_waits[i];

		if (!(kinds & ML_WAIT_MASK(w->kind)))
			continue;
		/* A qualified Python name ends with the method. */
		if (f->kind == FRAME_PYTHON ? strstr(python, w->frame) != NULL
					    : frame_name__matches(f->name, w->frame))
			return w;
	}
	return NULL;
}
