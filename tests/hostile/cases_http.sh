# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# Hostile cases against pubd's /metrics listener (metrics.listen): one
# function case_NAME each, run like those of cases.sh (case.sh sources
# this file; run.sh lists its cases).
