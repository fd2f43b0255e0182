/* SPDX-License-Identifier: MIT */
/* ulnet reports plain negative errno values; these print them. */
#include <string.h>
#include "internal.h"
#include "config.h"

const char *ulnet_strerror(int err)
{
	return strerror(err < 0 ? -err : err);
}

const char *ulnet_version(void)
{
	return ULNET_VERSION;
}
