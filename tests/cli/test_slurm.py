"""Issue 54 item 2: a matrix on a real scheduler. The test starts a single-node Slurm on this
machine (Debian's slurm-wlm: munged, slurmctld and slurmd, each in the foreground under a temp
dir, on free ports, stopped at the end), submits a 3-model x 2-seed matrix as a job array whose
tasks each run `driftscope run ... --shard auto`, merges the shards' traces, and checks that the
merged file equals the same matrix run on one machine, case for case: the same cases in the same
order, the same exit codes, and every stage's statistics and reference tensors bit for bit.
Skipped (exit 77) with the reason where the Slurm or munge programs are absent."""
import ctypes
import getpass
import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

import h5py

DRIFTSCOPE = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else shutil.which("driftscope")
MATRIX = ["--model", "synthetic:qwen2-tiny", "--model", "synthetic:llama-tiny", "--model", "synthetic:gpt2-tiny",
          "--candidate", "cpu-f16", "--seed", "0", "--seed", "1", "--prompt-tokens", "4", "--decode-steps", "1"]
PROGRAMS = ("munged", "slurmctld", "slurmd", "sbatch", "sinfo")
# Every variable --shard auto reads: the test's own environment must not steer the tasks.
SCHEDULER_VARS = ("SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_MAX",
                  "SLURM_ARRAY_TASK_STEP", "SLURM_JOB_ID", "JOB_COMPLETION_INDEX", "CI_NODE_INDEX", "CI_NODE_TOTAL")


def program(name):
    return shutil.which(name) or next((p for p in (f"/usr/sbin/{name}", f"/usr/bin/{name}") if os.path.exists(p)),
                                      None)


def die_with_the_test():
    # In the daemon, before exec: SIGTERM when the test's process ends, however it ends (a ctest
    # timeout kills it with no cleanup), so no slurmctld, slurmd or munged outlives it.
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class SingleNodeSlurm:
    """munged, slurmctld and slurmd of a cluster of this one machine, all under `root`."""

    def __init__(self, root):
        self.root = root
        self.procs = []
        self.logs_open = []
        host = socket.gethostname().split(".")[0]
        user = getpass.getuser()
        mem_mib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1 << 20)
        for d in ("state", "spool"):
            os.makedirs(os.path.join(root, d))
        key = os.path.join(root, "munge.key")
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(key, 0o600)
        self.munge_socket = os.path.join(root, "munge.sock")
        self.conf = os.path.join(root, "slurm.conf")
        with open(self.conf, "w") as f:
            f.write(f"""ClusterName=driftscope-test
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
SlurmUser={user}
SlurmdUser={user}
AuthType=auth/munge
AuthInfo=socket={self.munge_socket}
CredType=cred/munge
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
SwitchType=switch/none
NodeName={host} NodeAddr=127.0.0.1 CPUs={os.cpu_count()} RealMemory={max(mem_mib - 1024, 1024)} State=UNKNOWN
PartitionName=driftscope Nodes={host} Default=YES MaxTime=INFINITE State=UP
""")
        self.env = {k: v for k, v in os.environ.items() if k not in SCHEDULER_VARS}
        self.env["SLURM_CONF"] = self.conf
        self.start([program("munged"), "--foreground", "--force", f"--socket={self.munge_socket}",
                    f"--key-file={key}", f"--pid-file={root}/munged.pid", f"--log-file={root}/munged.log",
                    f"--seed-file={root}/munged.seed"])
        self.wait_for(lambda: os.path.exists(self.munge_socket), "munged's socket")
        self.start([program("slurmctld"), "-D", "-i"])
        self.start([program("slurmd"), "-D"])
        self.wait_for(self.node_idle, "the node to be idle in sinfo")

    def start(self, argv):
        log = open(os.path.join(self.root, os.path.basename(argv[0]) + ".out"), "w")
        self.logs_open.append(log)
        # A session of its own: stop() ends each daemon and whatever it started.
        self.procs.append(subprocess.Popen(argv, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                           start_new_session=True, preexec_fn=die_with_the_test))

    def node_idle(self):
        p = subprocess.run([program("sinfo"), "-h", "-o", "%t"], env=self.env, capture_output=True, text=True)
        return p.returncode == 0 and p.stdout.strip() == "idle"

    def wait_for(self, ready, what, timeout=90):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if ready():
                return
            if any(p.poll() is not None for p in self.procs):
                break
            time.sleep(0.5)
        raise AssertionError(f"Slurm did not come up: no {what} within {timeout} s\n{self.logs()}")

    def logs(self):
        out = []
        for path in sorted(glob.glob(os.path.join(self.root, "*.log")) + glob.glob(os.path.join(self.root, "*.out"))):
            with open(path, errors="replace") as f:
                out.append(f"--- {os.path.basename(path)}\n" + "".join(f.readlines()[-15:]))
        return "\n".join(out)

    def stop(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        for log in self.logs_open:
            log.close()


def cases_of(path):
    """Each case of a merged trace: (model, candidate, seed, exit code), its stage summary and its
    reference tensors."""
    out = []
    with h5py.File(path, "r") as f:
        for k, row in enumerate(f["case_index"][:]):
            case = f[f"cases/{k}"]
            out.append(((row["model"].decode(), row["candidate"].decode(), int(row["seed"]), int(row["exit_code"])),
                        case["summary"][:], case["tensors/ref"][:]))
    return out


class SlurmArray(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.slurm = SingleNodeSlurm(os.path.join(self.tmp.name, "slurm"))
        self.addCleanup(self.slurm.stop)

    def path(self, name):
        return os.path.join(self.tmp.name, name)

    def test_a_job_array_runs_the_matrix_as_one_machine_does(self):
        shards = self.path("shards")
        task = " ".join([DRIFTSCOPE, "run", *MATRIX, "--shard", "auto", "--trace-dir", shards])
        p = subprocess.run([program("sbatch"), "--wait", "--array=1-3", f"--output={self.path('task-%a.txt')}",
                            "--wrap", task], env=self.slurm.env, capture_output=True, text=True, timeout=900)
        outputs = ""
        for t in sorted(glob.glob(self.path("task-*.txt"))):
            with open(t) as f:
                outputs += f.read()
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr + outputs + self.slurm.logs())
        # Each task found its shard in the array's variables.
        for i in range(3):
            self.assertIn(f"--shard auto: shard {i}/3 from the Slurm job array (SLURM_ARRAY_TASK_ID={i + 1}", outputs)
        merged = self.path("slurm.h5")
        m = subprocess.run([DRIFTSCOPE, "merge", "-o", merged, *sorted(glob.glob(os.path.join(shards, "*.h5")))],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(m.returncode, 0, m.stdout + m.stderr)

        local_dir, local = self.path("local"), self.path("local.h5")
        r = subprocess.run([DRIFTSCOPE, "run", *MATRIX, "--trace-dir", local_dir], capture_output=True, text=True,
                           timeout=900, env=self.slurm.env)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        m = subprocess.run([DRIFTSCOPE, "merge", "-o", local, *sorted(glob.glob(os.path.join(local_dir, "*.h5")))],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(m.returncode, 0, m.stdout + m.stderr)

        got, want = cases_of(merged), cases_of(local)
        self.assertEqual([c[0] for c in got], [c[0] for c in want])
        self.assertEqual(len(got), 6)
        for (key, summary, ref), (_, want_summary, want_ref) in zip(got, want):
            with self.subTest(case=key):
                # Bytes, so that a NaN statistic (a slope of a constant stage) compares equal to itself.
                self.assertEqual(summary.dtype, want_summary.dtype, key)
                self.assertTrue(summary.tobytes() == want_summary.tobytes(), key)
                self.assertTrue(ref.tobytes() == want_ref.tobytes(), key)


if __name__ == "__main__":
    missing = [p for p in PROGRAMS if program(p) is None]
    if missing:
        print(f"SKIPPED: no {', '.join(missing)} here (Debian's slurm-wlm installs them: scripts/dev.sh test does)")
        sys.exit(77)
    unittest.main()
