/* SPDX-License-Identifier: MIT */
typedef int pub_placeholder_t;
