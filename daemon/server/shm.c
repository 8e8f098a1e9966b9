/* SPDX-License-Identifier: MIT */
/*
 * The shared memory pubd hands its clients (publish, deliver and group logs): a
 * memfd sealed at its size, so a client cannot shrink it under pubd (a
 * read or write of pubd's beyond the new end would be a SIGBUS), mapped
 * and formatted here, with the two eventfds each client log's sleep/wake
 * handshake rings (a group log has none: its readers sleep on their
 * deliver logs' doorbells, and ring their space eventfds).
 *
 * A group log is pubd's to write and its readers' to read, and a reader
 * must not be able to write it. Its readers get a read-only file of the
 * memfd, not the memfd: opened again through /proc/self/fd with O_RDONLY,
 * after the memfd's mode went to 0400. On that file a reader can neither
 * map for writing (now or by mprotect later), nor write, truncate, punch or
 * seal, and it cannot open a writable file of it in turn (the mode: only
 * pubd's user, or root, could). F_SEAL_FUTURE_WRITE would have done the
 * same for every process, root too, but it also forbids pubd to punch the
 * pages out: a retired group log (glog.c) would then stay in memory, charged
 * to pubd, for as long as any client kept its mapping.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "loop.h"
#include "server_internal.h"

uint32_t srv_shm_capacity(uint64_t configured)
{
	uint32_t p = PUB_SHMLOG_CAP_MIN;

	while (p < PUB_SHMLOG_CAP_MAX && (uint64_t)p * 2 <= configured)
		p *= 2;
	return p;
}

int srv_shm_memfd(size_t len)
{
	int fd = memfd_create("pubd-log", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)len) < 0 || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

int srv_shm_read_only(int fd)
{
	char path[64];
	int ro;

	if (fchmod(fd, 0400) < 0)
		return -errno;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	ro = open(path, O_RDONLY | O_CLOEXEC);
	return ro < 0 ? -errno : ro;
}

void srv_shm_unmap(uint8_t *map, size_t len)
{
	if (map && map != MAP_FAILED)
		munmap(map, len);
}

static void close_eventfds(struct srv_shm *s)
{
	if (s->doorbell_fd >= 0)
		close(s->doorbell_fd);
	if (s->space_fd >= 0)
		close(s->space_fd);
	s->doorbell_fd = s->space_fd = -1;
}

int srv_shm_make(struct pubd_client *c, uint32_t cap, uint32_t kind, struct srv_shm *s)
{
	/* A message up to a quarter of the log goes in one record: a publish
	 * log's records are lent, not copied (publog.c), and a deliver log's
	 * are read where they lie (libpub gathers only what is larger). */
	uint32_t max_record = cap / 4;
	size_t len = pub_shmlog_map_len(cap);
	int fd, err;

	(void)c;
	s->map = NULL;
	s->map_len = len;
	s->doorbell_fd = s->space_fd = -1;
	fd = srv_shm_memfd(len);
	if (fd < 0)
		return fd;
	s->map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (s->map == MAP_FAILED) {
		err = -errno;
		goto fail;
	}
	err = pub_shmlog_format(s->map, len, cap, max_record, kind);
	if (err < 0)
		goto fail;
	if (kind == PUB_SHM_GROUP_LOG) {
		/* Its readers get the read-only file; pubd keeps its mapping. */
		err = srv_shm_read_only(fd);
		if (err < 0)
			goto fail;
		close(fd);
		return err;
	}
	s->doorbell_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	s->space_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->doorbell_fd < 0 || s->space_fd < 0) {
		err = -errno;
		goto fail;
	}
	return fd;
fail:
	close(fd);
	srv_shm_unmap(s->map, len);
	s->map = NULL;
	close_eventfds(s);
	return err;
}

/*
 * Give the pages of a log's bytes [from, to) back, whole pages only (the
 * bytes either side of the range stay as they are), before pubd lets go of
 * it. The client keeps its own mapping (or the memfd) for as long as it
 * likes after it disconnects, and with it every page pubd wrote, charged to
 * pubd: a client that connects, keeps the mappings and reconnects, again and
 * again, would pin pubd's memory without bound. MADV_REMOVE punches the
 * pages out of the memfd itself, so every mapping reads zeros there from now
 * on (a write gets a fresh page, charged to the writer).
 */
void srv_shm_punch(struct srv_shm *s, size_t from, size_t to)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	if (!s->map || s->map == MAP_FAILED)
		return;
	if (to > s->map_len)
		to = s->map_len;
	from = (from + page - 1) / page * page;
	to = to / page * page;
	/* Failing (a kernel without shmem hole punching) leaves them as before. */
	if (from < to && madvise(s->map + from, to - from, MADV_REMOVE) < 0)
		log_debug("releasing %zu bytes of a log: %s", to - from, strerror(errno));
}

void srv_shm_close(struct pubd_ipc *srv, struct srv_shm *s, bool keep_map)
{
	if (s->watch)
		pubd_loop_unwatch(s->watch);
	s->watch = NULL;
	close_eventfds(s);
	if (!keep_map) {
		srv_budget_give(srv, s->charged);
		s->charged = 0;
		srv_shm_unmap(s->map, s->map_len);
		s->map = NULL;
	}
}
