/* SPDX-License-Identifier: MIT */
/* placeholder: being written */
typedef int pubd_placeholder_ipc_t;
