# SPDX-License-Identifier: GPL-2.0
"""What the test jobs measure of themselves (their truth), written the one
way the checks read it: one JSON line, keys sorted, to stdout and appended
to the --truth file when one is given."""
import json


def write_truth(truth, path):
    """Prints truth as one JSON line and appends it to path (if any)."""
    line = json.dumps(truth, sort_keys=True)
    print(line, flush=True)
    if path:
        with open(path, "a") as out:
            out.write(line + "\n")
