/* SPDX-License-Identifier: MIT */
/* placeholder: being written */
typedef int pubd_placeholder_groups_t;
