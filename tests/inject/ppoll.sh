#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# read.sh with the target waiting in ppoll with a temporary signal mask.
MODE=ppoll . "$INJECT_TESTS/read.sh"
