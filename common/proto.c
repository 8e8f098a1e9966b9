/* SPDX-License-Identifier: MIT */
/* placeholder: being written */
typedef int pubd_placeholder_proto_t;
