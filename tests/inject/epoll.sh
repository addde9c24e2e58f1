#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# read.sh with the target waiting in epoll_wait (an EINTR restart).
MODE=epoll . "$INJECT_TESTS/read.sh"
