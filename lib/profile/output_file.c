// SPDX-License-Identifier: GPL-2.0
/* Atomic output files: temporary file + rename, or stdout. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "profile/output.h"

int output_file__open(struct output_file *file, const char *path)
{
	struct stat st;
	int fd, err;

	memset(file, 0, sizeof(*file));
	if (!path || !strcmp(path, "-")) {
		file->stream = stdout;
		return 0;
	}
	/* A device or a FIFO (/dev/null, a pipe) is written in place: renaming
	 * a file over it would replace it. */
	if (!stat(path, &st) && !S_ISREG(st.st_mode)) {
		if (S_ISDIR(st.st_mode))
			return -EISDIR;
		file->stream = fopen(path, "we");
		return file->stream ? 0 : -errno;
	}
	file->path = strdup(path);
	if (!file->path || asprintf(&file->temp_path, "%s.tmp.XXXXXX", path) < 0) {
		file->temp_path = NULL;
		err = -ENOMEM;
		goto fail;
	}
	fd = mkstemp(file->temp_path);
	if (fd < 0) {
		err = -errno;
		free(file->temp_path);
		file->temp_path = NULL;
		goto fail;
	}
	/* mkstemp makes 0600; an output file should look like one made by '>'. */
	{
		mode_t mask = umask(0);

		umask(mask);
		fchmod(fd, 0666 & ~mask);
	}
	file->stream = fdopen(fd, "w");
	if (!file->stream) {
		err = -errno;
		close(fd);
		goto fail;
	}
	return 0;
fail:
	output_file__abort(file);
	return err;
}

int output_file__commit(struct output_file *file)
{
	int err = 0;

	if (!file->stream)
		return -EINVAL;
	if (fflush(file->stream) || ferror(file->stream))
		err = errno ? -errno : -EIO;
	if (!file->temp_path) {
		if (file->stream != stdout && fclose(file->stream) && !err)
			err = -errno;
		file->stream = NULL;
		return err;
	}
	if (!err && fsync(fileno(file->stream)) && errno != EINVAL)
		err = -errno;
	if (fclose(file->stream) && !err)
		err = -errno;
	file->stream = NULL;
	if (!err && rename(file->temp_path, file->path))
		err = -errno;
	if (err) {
		output_file__abort(file);
		return err;
	}
	free(file->temp_path);
	free(file->path);
	file->temp_path = NULL;
	file->path = NULL;
	return 0;
}

void output_file__abort(struct output_file *file)
{
	if (file->stream && file->stream != stdout)
		fclose(file->stream);
	file->stream = NULL;
	if (file->temp_path)
		unlink(file->temp_path);
	free(file->temp_path);
	free(file->path);
	file->temp_path = NULL;
	file->path = NULL;
}
