#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Starts two ranks of COMMAND as torchrun would (RANK, LOCAL_RANK,
# WORLD_SIZE, MASTER_ADDR and MASTER_PORT in their environment; Debian's
# torchrun does not run on Python 3.11) and waits for both.
# Usage: env_launch.sh COMMAND [ARGS...]
port=$((29500 + $$ % 2000))
for rank in 0 1; do
	RANK=$rank LOCAL_RANK=$rank WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$@" &
done
wait
