#!/usr/bin/env python3
"""What one durable journal append costs on this disk, outside the server.

Two ways to make a small append durable, alternated in rounds so that the disk's phase
affects both alike:

* ``fdatasync``: ``pwrite`` of a journal-sized entry (287 bytes) into a preallocated file, then
  ``fdatasync`` (what the store's journal does);
* ``O_DIRECT|O_DSYNC``: one ``pwrite`` of an aligned 4 KiB block to a descriptor opened with
  both flags (on a disk that honours FUA this can skip the cache flush of the whole device).

Prints the p50 and p99 of each in microseconds, and the disk's write-cache mode and FUA support
as the kernel reports them. Usage: ``python3 scripts/bench/flush_probe.py [DIR] [ROUNDS]`` (DIR
defaults to ``target``, which must be on the disk the store uses).
"""

import mmap
import os
import statistics
import sys
import time

ENTRY = 287
FILE_SIZE = 4 << 20
PER_ROUND = 300


def block_device_queue(path: str) -> str:
    """The write-cache mode and FUA flag of the block device holding ``path``."""
    dev = os.stat(path).st_dev
    sys_dev = f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}"
    queue = os.path.join(sys_dev, "queue")
    if not os.path.isdir(queue):  # a partition: its disk holds the queue
        queue = os.path.join(sys_dev, "..", "queue")
    try:
        with open(os.path.join(queue, "write_cache")) as f:
            cache = f.read().strip()
        with open(os.path.join(queue, "fua")) as f:
            fua = f.read().strip()
    except OSError:
        return "unknown"
    return f"write cache: {cache}, FUA: {'yes' if fua == '1' else 'no'}"


def percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    p50 = statistics.median(ordered) * 1e6
    p99 = ordered[int(len(ordered) * 0.99)] * 1e6
    return f"p50 {p50:6.0f} µs   p99 {p99:6.0f} µs   ({len(ordered)} appends)"


def main() -> None:
    directory = sys.argv[1] if len(sys.argv) > 1 else "target"
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 6
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"flush-probe-{os.getpid()}")
    with open(path, "wb") as f:
        f.write(b"\0" * FILE_SIZE)
        f.flush()
        os.fsync(f.fileno())
    buffered = os.open(path, os.O_WRONLY)
    direct = os.open(path, os.O_WRONLY | os.O_DIRECT | os.O_DSYNC)
    block = mmap.mmap(-1, 4096)  # page-aligned, as O_DIRECT needs
    block.write(b"x" * 4096)
    entry = b"y" * ENTRY
    synced: list[float] = []
    dsync: list[float] = []
    try:
        for _ in range(rounds):
            for i in range(PER_ROUND):
                start = time.perf_counter()
                os.pwrite(buffered, entry, (i * ENTRY) % FILE_SIZE)
                os.fdatasync(buffered)
                synced.append(time.perf_counter() - start)
            for i in range(PER_ROUND):
                start = time.perf_counter()
                os.pwrite(direct, block, (i * 4096) % FILE_SIZE)
                dsync.append(time.perf_counter() - start)
    finally:
        os.close(buffered)
        os.close(direct)
        os.unlink(path)
    print(f"disk of {directory}: {block_device_queue(directory)}")
    print(f"pwrite {ENTRY} B + fdatasync:   {percentiles(synced)}")
    print(f"O_DIRECT|O_DSYNC 4 KiB write: {percentiles(dsync)}")


if __name__ == "__main__":
    main()
