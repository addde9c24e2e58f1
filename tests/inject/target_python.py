# SPDX-License-Identifier: GPL-2.0
# Injection target in CPython: three threads hash and compute (taking turns
# on the GIL) while the main thread sleeps in 10 ms steps; prints "python
# ok" once all of them ran for the given time without an exception.
import hashlib
import sys
import threading
import time

stop = False
rounds = [0, 0, 0]


def work(index):
    digest = hashlib.sha256()
    while not stop:
        digest.update(b"x" * 1000)
        sum(i * i for i in range(2000))
        rounds[index] += 1


threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
for thread in threads:
    thread.start()
open(sys.argv[2], "w").close()
start = time.monotonic()
while time.monotonic() - start < float(sys.argv[1]):
    time.sleep(0.01)
stop = True
for thread in threads:
    thread.join()
print("python ok" if all(rounds) else "python: a thread did not run")
