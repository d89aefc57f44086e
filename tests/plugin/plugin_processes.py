"""The processes a plugin runs in, seen from /proc: for tests that a harness leaves none behind."""
import os


def plugin_processes(plugin):
    """Pids of processes that have `plugin` mapped (it runs in no process of ours but a candidate's)."""
    pids = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/maps") as f:
                if plugin in f.read():
                    pids.append(int(pid))
        except OSError:
            pass
    return pids


def describe(pids):
    """Each pid with its state, parent and command line, for the failure message."""
    out = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().split(")")[-1].split()
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            out.append(f"{pid} state {fields[0]} parent {fields[1]}: {cmd}")
        except OSError:
            out.append(f"{pid} (gone)")
    return out


def alive(pid):
    """Whether `pid` runs (a zombie has ended)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False
