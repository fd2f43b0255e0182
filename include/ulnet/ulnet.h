/* SPDX-License-Identifier: MIT */
/* ulnet: a user-space LNet. Umbrella header. */
#ifndef ULNET_ULNET_H
#define ULNET_ULNET_H
#include "nid.h"
#include "md.h"
#include "event.h"
#include "node.h"
#include "route.h"
#include "metrics.h"
#include "fault.h"
#include "rdma.h"
#include "tunable.h"
#include "writer.h"
#endif
