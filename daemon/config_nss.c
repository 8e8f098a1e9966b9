/* SPDX-License-Identifier: MIT */
/*
 * The real resolver for user:NAME and group:NAME ACL entries: the system's
 * name service (getpwnam_r/getgrnam_r, so /etc/passwd, LDAP, systemd's
 * dynamic users...). Kept apart from config.c, which stays pure.
 */
#include <errno.h>
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

static int nss_user(void *ctx, const char *name, uint32_t *uid)
{
	size_t size = initial_size(_SC_GETPW_R_SIZE_MAX);
	struct passwd pw, *res = NULL;
	char *buf = NULL, *nb;
	int ret;

	for (;;) {
		nb = realloc(buf, size);
		if (!nb) {
			ret = -ENOMEM;
			goto cleanup;
		}
		buf = nb;
		ret = getpwnam_r(name, &pw, buf, size, &res);
		if (ret != ERANGE || size >= NSS_BUF_MAX)
			break;
		size *= 2;
	}
	if (res) {
		*uid = (uint32_t)pw.pw_uid;
		ret = 0;
	} else {
		ret = not_found(ret) ? -ENOENT : -ret;
	}
cleanup:
	free(buf);
	return ret;
}

static int nss_group(void *ctx, const char *name, uint32_t *gid)
{
	size_t size = initial_size(_SC_GETGR_R_SIZE_MAX);
	struct group gr, *res = NULL;
	char *buf = NULL, *nb;
	int ret;

	for (;;) {
		nb = realloc(buf, size);
		if (!nb) {
			ret = -ENOMEM;
			goto cleanup;
		}
		buf = nb;
		ret = getgrnam_r(name, &gr, buf, size, &res);
		if (ret != ERANGE || size >= NSS_BUF_MAX)
			break;
		size *= 2;
	}
	if (res) {
		*gid = (uint32_t)gr.gr_gid;
		ret = 0;
	} else {
		ret = not_found(ret) ? -ENOENT : -ret;
	}
cleanup:
	free(buf);
	return ret;
}

const struct pubd_name_resolver pubd_nss_resolver = {
	.user = nss_user,
	.group = nss_group,
	.ctx = NULL,
};
