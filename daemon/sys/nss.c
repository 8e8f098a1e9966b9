/* SPDX-License-Identifier: MIT */
/*
 * The real resolver for user:NAME and group:NAME ACL entries: the system's
 * name service (getpwnam_r/getgrnam_r, so /etc/passwd, LDAP, systemd's
 * dynamic users...). Kept apart from config.c, which stays pure.
 */
#include <errno.h>
#include <stdbool.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <unistd.h>

#include "config.h"

/* An entry with hundreds of group members needs a large buffer; past this,
 * something is wrong with the name service. */
#define NSS_BUF_MAX (1u << 20)

static size_t initial_size(int name)
{
	long n = sysconf(name);

	return n > 0 && n < (long)NSS_BUF_MAX ? (size_t)n : 16384;
}

/*
 * getpwnam_r and getgrnam_r report "not found" either as 0 with a NULL
 * result or, depending on the NSS module, as ENOENT, ESRCH, EBADF or EPERM
 * (getpwnam_r(3)); all of them mean "no such name" here.
 */
static int not_found(int ret)
{
	return ret == 0 || ret == ENOENT || ret == ESRCH || ret == EBADF || ret == EPERM;
}

/*
 * Look a user (is_user) or group name up through NSS, growing the buffer
 * on ERANGE: one loop for getpwnam_r and getgrnam_r, which differ only in
 * the record they fill and the id they give.
 */
static int nss_lookup(const char *name, bool is_user, uint32_t *id)
{
	size_t size = initial_size(is_user ? _SC_GETPW_R_SIZE_MAX : _SC_GETGR_R_SIZE_MAX);
	struct passwd pw, *pwres = NULL;
	struct group gr, *grres = NULL;
	char *buf = NULL, *nb;
	int ret;

	for (;;) {
		nb = realloc(buf, size);
		if (!nb) {
			ret = -ENOMEM;
			goto cleanup;
		}
		buf = nb;
		ret = is_user ? getpwnam_r(name, &pw, buf, size, &pwres) : getgrnam_r(name, &gr, buf, size, &grres);
		if (ret != ERANGE || size >= NSS_BUF_MAX)
			break;
		size *= 2;
	}
	if (pwres || grres) {
		*id = pwres ? (uint32_t)pw.pw_uid : (uint32_t)gr.gr_gid;
		ret = 0;
	} else {
		ret = not_found(ret) ? -ENOENT : -ret;
	}
cleanup:
	free(buf);
	return ret;
}

static int nss_user(void *ctx, const char *name, uint32_t *uid)
{
	return nss_lookup(name, true, uid);
}

static int nss_group(void *ctx, const char *name, uint32_t *gid)
{
	return nss_lookup(name, false, gid);
}

const struct pubd_name_resolver pubd_nss_resolver = {
	.user = nss_user,
	.group = nss_group,
	.ctx = NULL,
};
