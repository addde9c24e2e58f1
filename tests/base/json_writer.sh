#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Python's json module reads back every string the JSON writer writes from
# hostile bytes, and finds U+FFFD where the bytes were not UTF-8.
set -eu
test_binary=$1
"$test_binary" --dump | python3 -c '
import json, sys
data = sys.stdin.buffer.read()
strings = json.loads(data.decode("utf-8", errors="strict"))
assert "bad\ufffd\ufffd" in strings, "no U+FFFD for invalid bytes"
assert "surrogate\ufffd\ufffd\ufffd" in strings, "surrogate kept"
assert "\u03bb \u20ac \U0001F600 \U0010FFFF" in strings, "valid characters lost"
assert strings[-1] == "\ufffd", "byte 0xff"
print("json_writer: %d strings read back by Python" % len(strings))
'
