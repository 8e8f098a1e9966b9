# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# Hostile cases against the publish log's reading at a client's end and
# the replies its records cause: one function case_NAME each, run like
# those of cases.sh (case.sh sources this file; run.sh lists its cases).
