# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# Hostile cases (see cases.sh for the conventions): one function case_NAME
# each; case.sh sources this file and run.sh lists its cases.
