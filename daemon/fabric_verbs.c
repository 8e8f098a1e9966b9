/* SPDX-License-Identifier: MIT */
/* placeholder: being written */
typedef int pubd_placeholder_fabric_verbs_t;
