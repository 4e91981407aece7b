"""A process's own peak resident memory, for the benches and the probe workers.

The peak is ``VmHWM`` of /proc/self/status, the high-water mark of this program's own memory
map. Not ``getrusage(RUSAGE_SELF).ru_maxrss``: Linux carries that figure across fork and exec,
so a child started by a large parent reports the parent's size at the fork. ``medscope bench
views`` measured exactly that before this module: its driver "grew" 273 KB per case from 100 to
1,600 cases because the bench process, which had just generated the phantom cohort, was that
large when it started the child. ``ru_maxrss`` is the fallback where /proc has no
VmHWM (not Linux).
"""

from __future__ import annotations

import resource


def peak_rss_kib() -> int:
    """This process's peak resident memory in KiB (VmHWM; ru_maxrss where /proc has none).

    Returns
    -------
    int
        The peak in KiB (``ru_maxrss`` is KiB on Linux, bytes on macOS).
    """
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def memory_mb() -> dict[str, float]:
    """This process's resident memory now and its peak so far, in MB (VmRSS, VmHWM), read at
    the phase boundaries of a job so a bench can say which phase grows (empty off Linux).

    Returns
    -------
    dict of str to float
        ``rss`` and ``peak`` in MB (1e6 bytes), rounded to 0.1; empty where /proc/self/status
        cannot be read.
    """
    out = {}
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    out["rss" if line.startswith("VmRSS") else "peak"] = round(int(line.split()[1]) * 1024 / 1e6, 1)
    except OSError:
        pass
    return out


def reset_peak_rss() -> None:
    """Reset this process's peak to its current RSS (Linux), so that the peak read at the end
    of a task is that task's, not the highest of every task a reused worker ran before. Memory
    the process still holds (a leak) stays in the baseline and so still shows."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pass  # not Linux, or not allowed: the peak falls back to the process lifetime's
