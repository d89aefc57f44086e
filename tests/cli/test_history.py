"""driftscope history, from real runs: four nights of an engine whose dumps drift (dump:DIR, the
oracle's own stages exported and then scaled a little more each night on chosen stages) and of
cpu-f16, merged per night as a nightly job does, added under date/commit labels; a fifth night whose
run was killed. `history show --json` must give each planted stage's error-to-floor ratio night by
night, the night the engine first failed, the stage that creeps toward its limit while passing, and
none of the stages that do not. Then every bad input: exit 2 naming the file or label, and the
database left as it was.

Usage: test_history.py DRIFTSCOPE
"""
import glob
import hashlib
import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import tempfile
import time
import unittest
import xml.etree.ElementTree as ET

import h5py
import numpy as np

DRIFTSCOPE = sys.argv.pop(1) if len(sys.argv) > 1 else "driftscope"
MODEL = "synthetic:llama-tiny"
COMMON = ["--model", MODEL, "--decode-steps", "1", "--prompt-tokens", "4"]
LABELS = ["2026-11-01/a1c3e5f", "2026-11-02/b2d4f60", "2026-11-03/c3e5f71", "2026-11-04/d4f6082",
          "2026-11-05/e5a7193"]
# The error-to-floor ratio planted on (stage, layer) night by night (nights 1-4). The chained judge
# fails a stage above 8 floors, so only down's last night fails.
PLANTS = {
    ("down", 1): [1.5, 3.0, 5.0, 40.0],   # rises, then fails on night 4
    ("attn", 0): [1.2, 1.6, 2.4, 3.0],    # creeps: 2.5x, always rising, always passing
    ("gate", 1): [2.0, 6.0, 2.5, 5.0],    # 2.5x over the window, but not steadily
    ("up", 0): [2.0, 2.5, 3.0, 3.5],      # steady, but only 1.75x
    ("ffn_norm", 0): [0.15, 0.3, 0.45, 0.6],  # 4x, but still well below its floor
}
F32_UNIT_ROUNDOFF = 2.0 ** -24


def run(*args, env=None, timeout=240):
    p = subprocess.run([DRIFTSCOPE, *args], capture_output=True, text=True, timeout=timeout, env=env)
    return p.returncode, p.stdout, p.stderr


def db_content(path):
    """The database's logical content, to show a failed command changed nothing."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return list(con.iterdump())
    finally:
        con.close()


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def eps_per_floor(trace, golden, stage, layer):
    """The relative scale of (stage, layer) that puts its error at one noise floor, from the clean
    dump run's floors (raised as the judge raises them) and the stage's largest value."""
    worst = 0.0
    with h5py.File(trace, "r", swmr=True) as f:
        for r in f["summary"][:]:
            if r["stage"].decode() != stage or int(r["layer"]) != layer:
                continue
            ref_rms = float(r["ref_rms"])
            floor_max = max(float(r["floor_max_abs"]), F32_UNIT_ROUNDOFF * ref_rms)
            floor_rms = max(float(r["floor_rms"]), F32_UNIT_ROUNDOFF * ref_rms)
            biggest = float(np.abs(np.load(os.path.join(golden, f"step{int(r['step'])}",
                                                         f"layer{layer}.{stage}.npy"))).max())
            worst = max(worst, biggest / floor_max, ref_rms / floor_rms)
    assert worst > 0, f"{stage} of layer {layer} not in {trace}"
    return 1.0 / worst


def write_engine(golden, engine, scales):
    """The engine's dump for one night: the exported oracle, each planted stage scaled by 1 + eps."""
    shutil.rmtree(engine, ignore_errors=True)
    shutil.copytree(golden, engine)
    for (stage, layer), eps in scales.items():
        for path in glob.glob(os.path.join(engine, "step*", f"layer{layer}.{stage}.npy")):
            a = np.load(path)
            np.save(path, (a.astype(np.float64) * (1 + eps)).astype(a.dtype))


class History(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        started = time.monotonic()
        cls.tmp = tempfile.TemporaryDirectory()
        t = cls.tmp.name
        ref, golden, cls.engine = (os.path.join(t, n) for n in ("ref.h5", "golden", "engine"))
        cls.candidate = f"dump:{cls.engine}"
        rc, out, err = run("run", *COMMON, "--candidate", "cpu-f16", "--mode", "chained", "--trace", ref)
        assert rc == 0, out + err
        rc, out, err = run("export", ref, "--format", "npy", "--out", golden)
        assert rc == 0, out + err
        # The clean engine: its floors size the plants.
        write_engine(golden, cls.engine, {})
        clean = os.path.join(t, "clean.h5")
        rc, out, err = run("run", *COMMON, "--candidate", cls.candidate, "--local-check", "off", "--trace", clean)
        assert rc == 0, out + err
        unit = {k: eps_per_floor(clean, golden, *k) for k in PLANTS}
        cls.db = os.path.join(t, "nightly.sqlite")
        cls.nights = []
        for n in range(4):
            write_engine(golden, cls.engine, {k: ratios[n] * unit[k] for k, ratios in PLANTS.items()})
            shard_dir = os.path.join(t, f"night{n + 1}")
            rc, out, err = run("run", *COMMON, "--candidate", cls.candidate, "--candidate", "cpu-f16",
                               "--local-check", "off", "--trace-dir", shard_dir)
            assert rc == (1 if n == 3 else 0), f"night {n + 1}: {out}{err}"
            merged = os.path.join(t, f"night{n + 1}.h5")
            rc, out, err = run("merge", "-o", merged, *sorted(glob.glob(os.path.join(shard_dir, "*.h5"))))
            assert rc == 0, out + err
            cls.nights.append(merged)
            rc, out, err = run("history", "add", merged, "--db", cls.db, "--label", LABELS[n])
            assert rc == 0, out + err
        # Night 5: cpu-f16 alone, killed after its first layer: an INCOMPLETE trace, merged as a
        # nightly job merges whatever its shards left.
        killed = os.path.join(t, "killed.h5")
        env = dict(os.environ, DRIFTSCOPE_TEST_KILL_AFTER_LAYERS="1")
        run("run", *COMMON, "--candidate", "cpu-f16", "--trace", killed, env=env)
        cls.killed = os.path.join(t, "night5.h5")
        rc, out, err = run("merge", "-o", cls.killed, killed)
        assert rc == 0 and "INCOMPLETE" in out, out + err
        rc, out, err = run("history", "add", cls.killed, "--db", cls.db, "--label", LABELS[4])
        assert rc == 0, out + err
        cls.add_output = out
        rc, out, err = run("history", "show", "--db", cls.db, "--json")
        assert rc == 0, out + err
        cls.show = json.loads(out)
        cls.setup_seconds = time.monotonic() - started

    @classmethod
    def tearDownClass(cls):
        print(f"\nhistory of 5 nights built in {cls.setup_seconds:.1f} s", file=sys.stderr)
        cls.tmp.cleanup()

    def case(self, candidate, show=None):
        show = show or self.show
        return next(c for c in show["cases"] if c["candidate"] == candidate)

    def layer(self, stage, layer, case=None):
        case = case or self.case(self.candidate)
        st = next(s for s in case["stages"] if s["stage"] == stage)
        return st, next(l for l in st["layers"] if l["layer"] == layer and l["mode"] == "chained")

    def test_nights_in_insertion_order(self):
        self.assertEqual([n["label"] for n in self.show["nights"]], LABELS)
        self.assertEqual(self.show["schema_version"], 1)

    def test_planted_ratios_night_by_night(self):
        for (stage, layer), planted in PLANTS.items():
            _, l = self.layer(stage, layer)
            got = l["ratios"]
            self.assertIsNone(got[4], "the engine did not run on night 5")
            for n, want in enumerate(planted):
                # A fraction of a floor is a fraction of an f32 ULP on these stages: the scaled values
                # round, and the ratio moves in steps (test_creeping_is_the_steady_rise_alone).
                if want < 1:
                    continue
                # The exported values carry one f32 rounding of their own (about 0.06 floors here).
                self.assertAlmostEqual(got[n], want, delta=0.1 * want + 0.1, msg=f"{stage} {layer} night {n + 1}")

    def test_engine_first_fails_on_night_four_at_down(self):
        c = self.case(self.candidate)
        self.assertEqual(c["outcomes"], ["pass", "pass", "pass", "fail", None])
        self.assertEqual(c["first_failed"], LABELS[3])
        self.assertIn("down", c["verdicts"][3])
        st, l = self.layer("down", 1)
        self.assertEqual(st["first_failed"], LABELS[3])
        self.assertEqual(l["statuses"][:4], ["pass", "pass", "pass", "fail"])
        self.assertFalse(st["creeping"], "a stage that failed is failing, not creeping")

    def test_creeping_is_the_steady_rise_alone(self):
        creeping = [(c["stage"], c["layer"]) for c in self.show["creeping"]]
        self.assertEqual(creeping, [("attn", 0)])
        entry = self.show["creeping"][0]
        self.assertEqual(entry["case"], self.case(self.candidate)["key"])
        self.assertEqual(entry["nights"], 4)
        self.assertGreaterEqual(entry["to"] / entry["from"], 2)
        st, l = self.layer("attn", 0)
        self.assertTrue(st["creeping"] and l["creeping"])
        self.assertIsNone(st["first_failed"])
        # The rises that are not creeping, each for its own reason.
        _, gate = self.layer("gate", 1)
        self.assertGreaterEqual(gate["ratios"][3] / gate["ratios"][0], 2, "rose 2x, but fell on the way")
        _, up = self.layer("up", 0)
        self.assertLess(up["ratios"][3] / up["ratios"][0], 2)
        _, norm = self.layer("ffn_norm", 0)
        self.assertGreaterEqual(norm["ratios"][3] / norm["ratios"][0], 2)
        self.assertLess(norm["ratios"][3], 1, "still below its floor")
        for s in (gate, up, norm):
            self.assertFalse(s["creeping"])

    def test_unplanted_stages_hold_still(self):
        c = self.case(self.candidate)
        planted = {s for s, _ in PLANTS}
        for st in c["stages"]:
            for l in st["layers"]:
                if (st["stage"], l["layer"]) in PLANTS:
                    continue
                values = l["ratios"][:4]
                self.assertTrue(all(v is not None for v in values), st["stage"])
                # The same clean bytes every night: the same ratio.
                self.assertEqual(len(set(values)), 1, f"{st['stage']} layer {l['layer']}: {values}")
                self.assertEqual(l["statuses"][:4], ["pass"] * 4)
        self.assertTrue(planted < {st["stage"] for st in c["stages"]})

    def test_incomplete_night_is_never_a_pass(self):
        self.assertIn("incomplete", self.add_output)
        c = self.case("cpu-f16")
        self.assertEqual(c["outcomes"], ["pass"] * 4 + ["incomplete"])
        self.assertTrue(c["verdicts"][4].startswith("INCOMPLETE:"), c["verdicts"][4])
        self.assertEqual(c["first_failed"], LABELS[4])
        # Its flushed stages are kept, marked as not finished; its unflushed ones are absent.
        embed = next(s for s in c["stages"] if s["stage"] == "embed")
        self.assertEqual(embed["statuses"][4], "incomplete")
        logits = next(s for s in c["stages"] if s["stage"] == "logits")
        self.assertIsNone(logits["statuses"][4])

    def test_console_table(self):
        rc, out, err = run("history", "show", "--db", self.db)
        self.assertEqual(rc, 0, out + err)
        lines = out.splitlines()
        attn = next(l for l in lines if l.strip().startswith("attn "))
        self.assertIn("creeping: layer 0 (chained)", attn)
        down = next(l for l in lines if l.strip().startswith("down "))
        self.assertIn(f"night 4 ({LABELS[3]})", down)
        self.assertIn("*", down)  # the failed night's value is marked
        self.assertIn(f"first failed: night 5 ({LABELS[4]}): INCOMPLETE", out)
        self.assertIn("passed every night without creeping", out)

    def test_filters_and_window(self):
        rc, out, err = run("history", "show", "--db", self.db, "--candidate", self.candidate, "--stage", "down",
                           "--json")
        self.assertEqual(rc, 0, out + err)
        shown = json.loads(out)
        self.assertEqual([c["candidate"] for c in shown["cases"]], [self.candidate])
        self.assertEqual([s["stage"] for s in shown["cases"][0]["stages"]], ["down"])
        rc, out, err = run("history", "show", "--db", self.db, "--last", "2", "--json")
        self.assertEqual(rc, 0, out + err)
        shown = json.loads(out)
        self.assertEqual([n["label"] for n in shown["nights"]], LABELS[3:])
        self.assertEqual(shown["creeping"], [], "two nights are too few to creep")
        rc, out, err = run("history", "show", "--db", self.db, "--model", "synthetic:no-such-tiny")
        self.assertEqual(rc, 2, out + err)
        self.assertIn("no stored case matches --model synthetic:no-such-tiny", err)
        self.assertIn(self.case("cpu-f16")["key"], err)
        rc, out, err = run("history", "show", "--db", self.db, "--stage", "no_such_stage")
        self.assertEqual(rc, 2, out + err)
        self.assertIn("--stage no_such_stage", err)

    # Bad input: each exit 2 naming the file or label, the database as it was.

    def copy_db(self, name):
        path = os.path.join(self.tmp.name, name)
        shutil.copy(self.db, path)
        return path

    def test_duplicate_label_refused_unless_replace(self):
        db = self.copy_db("dup.sqlite")
        before = db_content(db)
        rc, out, err = run("history", "add", self.nights[2], "--db", db, "--label", LABELS[1])
        self.assertEqual(rc, 2, out + err)
        self.assertIn(LABELS[1], err)
        self.assertIn("--replace", err)
        self.assertEqual(db_content(db), before)
        # Replaced by night 3's shard traces, single-case files, each of its cases once.
        shards = sorted(glob.glob(os.path.join(self.tmp.name, "night3", "*.h5")))
        rc, out, err = run("history", "add", *shards, "--db", db, "--label", LABELS[1], "--replace")
        self.assertEqual(rc, 0, out + err)
        self.assertIn("replaced night", out)
        rc, out, err = run("history", "show", "--db", db, "--json")
        shown = json.loads(out)
        self.assertEqual([n["label"] for n in shown["nights"]], LABELS, "a replaced night keeps its place")
        _, down = self.layer("down", 1, self.case(self.candidate, shown))
        self.assertEqual(down["ratios"][1], down["ratios"][2], "night 2 now holds night 3's cases")
        self.assertEqual(self.case("cpu-f16", shown)["outcomes"][1], "pass")

    def test_plot_draws_each_notable_stage_with_its_failed_nights(self):
        # The SVG, read back as XML: one panel per case; in the engine's, a line per stage that failed
        # or creeps (down, attn) through every night it has a ratio, down ringed red on night 4,
        # attn's line dashed and its legend saying creeping; the killed night 5 ringed grey.
        svg = os.path.join(self.tmp.name, "trend.svg")
        rc, out, err = run("history", "plot", "--db", self.db, "--out", svg)
        self.assertEqual(rc, 0, out + err)
        self.assertIn(f"drawn in {svg}", out)
        ns = {"s": "http://www.w3.org/2000/svg"}
        root = ET.parse(svg).getroot()
        panels = {g.get("data-case"): g for g in root.findall("s:g", ns)}
        self.assertEqual(len(panels), len(self.show["cases"]), list(panels))
        engine = next(g for key, g in panels.items() if self.candidate in key)
        lines = {p.get("data-stage"): p for p in engine.findall("s:polyline", ns)}
        notable = sorted(s["stage"] for s in self.case(self.candidate)["stages"]
                         if s["first_failed"] is not None or s["creeping"])
        self.assertEqual(sorted(lines), notable)
        self.assertIn("down", lines)
        self.assertIn("attn", lines)
        down_ratios = [r for r in self.layer("down", 1)[0]["ratios"] if r is not None]
        self.assertEqual(len(lines["down"].get("points").split()), len(down_ratios))
        failed = {(c.get("data-stage"), c.get("data-night")) for c in engine.findall("s:circle[@class='failed']", ns)}
        self.assertIn(("down", LABELS[3]), failed)
        self.assertNotIn(("attn", LABELS[2]), failed)
        self.assertEqual(lines["attn"].get("stroke-dasharray"), "6 3")
        self.assertIsNone(lines["down"].get("stroke-dasharray"))
        legend = [t.text for t in engine.findall("s:text[@class='legend']", ns)]
        self.assertIn("attn, creeping", legend)
        self.assertIn("down, failed", legend)
        nights = [t.text for t in engine.findall("s:text[@class='night']", ns)]
        self.assertEqual(nights, LABELS)
        self.assertTrue(engine.findall("s:line[@class='floor']", ns), "the floor (ratio 1) is drawn")
        # A stage filter draws that stage alone; bad input is exit 2 and writes nothing.
        rc, out, err = run("history", "plot", "--db", self.db, "--out", svg, "--candidate", self.candidate,
                           "--stage", "q")
        self.assertEqual(rc, 0, out + err)
        only = ET.parse(svg).getroot().findall("s:g/s:polyline", ns)
        self.assertEqual({p.get("data-stage") for p in only}, {"q"})
        for args, names in ((["--stage", "no_such_stage"], "no stored case matches"),
                            (["--out", os.path.join(self.tmp.name, "no", "dir", "x.svg")], "x.svg")):
            target = args[-1] if args[0] == "--out" else os.path.join(self.tmp.name, "unwritten.svg")
            cmd = ["history", "plot", "--db", self.db] + (args if args[0] == "--out" else ["--out", target, *args])
            rc, out, err = run(*cmd)
            self.assertEqual(rc, 2, f"{cmd}: {out}{err}")
            self.assertIn(names, err)
            self.assertFalse(os.path.exists(target))

    def test_bad_flags(self):
        for args in (["add", self.nights[0], "--db", self.db, "--label", ""],
                     ["show", "--db", self.db, "--busy-timeout", "nan"],
                     ["show", "--db", self.db, "--last", "0"]):
            rc, out, err = run("history", *args)
            self.assertEqual(rc, 2, f"{args}: {out}{err}")
            self.assertTrue("--label" in err or "--busy-timeout" in err or "--last" in err, err)

    def test_locked_database(self):
        db = self.copy_db("locked.sqlite")
        before = db_content(db)
        con = sqlite3.connect(db, isolation_level=None)
        con.execute("BEGIN EXCLUSIVE")
        try:
            started = time.monotonic()
            rc, out, err = run("history", "add", self.nights[0], "--db", db, "--label", "locked-night",
                               "--busy-timeout", "0.5")
            waited = time.monotonic() - started
            self.assertEqual(rc, 2, out + err)
            self.assertIn(db, err)
            self.assertIn("locked by another process", err)
            self.assertIn("--busy-timeout 0.5", err)
            self.assertGreaterEqual(waited, 0.5)
            rc, out, err = run("history", "show", "--db", db, "--busy-timeout", "0.2")
            self.assertEqual(rc, 2, out + err)
            self.assertIn("locked by another process", err)
        finally:
            con.execute("ROLLBACK")
            con.close()
        self.assertEqual(db_content(db), before)

    def test_read_only_database(self):
        # Root writes through any file mode: the command then runs as nobody, where setpriv can.
        prefix = []
        if os.geteuid() == 0:
            if not shutil.which("setpriv"):
                self.skipTest("running as root without setpriv: a read-only file mode cannot be tested")
            prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        d = os.path.join(self.tmp.name, "ro")
        os.makedirs(d)
        db = os.path.join(d, "ro.sqlite")
        trace = os.path.join(d, "night.h5")
        shutil.copy(self.db, db)
        shutil.copy(self.nights[0], trace)
        for p, mode in ((db, 0o444), (trace, 0o444), (d, 0o755), (self.tmp.name, 0o755)):
            os.chmod(p, mode)
        before = digest(db)
        p = subprocess.run([*prefix, DRIFTSCOPE, "history", "add", trace, "--db", db, "--label", "ro-night"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn(f"{db}: the history database is read-only", p.stderr)
        self.assertEqual(digest(db), before)
        p = subprocess.run([*prefix, DRIFTSCOPE, "history", "show", "--db", db], capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn(LABELS[0], p.stdout)

    def test_not_a_database(self):
        text = os.path.join(self.tmp.name, "notes.sqlite")
        with open(text, "w") as f:
            f.write("these are not the nights you are looking for\n" * 20)
        before = digest(text)
        for args in (["add", self.nights[0], "--db", text, "--label", "x"], ["show", "--db", text]):
            rc, out, err = run("history", *args)
            self.assertEqual(rc, 2, out + err)
            self.assertIn(f"{text}: not a SQLite database", err)
        self.assertEqual(digest(text), before)
        # A trace given as the database is no database either.
        rc, out, err = run("history", "show", "--db", self.nights[0])
        self.assertEqual(rc, 2, out + err)
        self.assertIn("not a SQLite database", err)
        # A SQLite file of something else.
        other = os.path.join(self.tmp.name, "other.sqlite")
        con = sqlite3.connect(other)
        con.execute("CREATE TABLE t (x)")
        con.commit()
        con.close()
        rc, out, err = run("history", "add", self.nights[0], "--db", other, "--label", "x")
        self.assertEqual(rc, 2, out + err)
        self.assertIn("not a driftscope history", err)
        rc, out, err = run("history", "show", "--db", os.path.join(self.tmp.name, "absent.sqlite"))
        self.assertEqual(rc, 2, out + err)
        self.assertIn("no such history database", err)

    def test_newer_schema_refused(self):
        db = self.copy_db("newer.sqlite")
        con = sqlite3.connect(db)
        con.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
        con.commit()
        con.close()
        before = db_content(db)
        for args in (["add", self.nights[0], "--db", db, "--label", "x"], ["show", "--db", db]):
            rc, out, err = run("history", *args)
            self.assertEqual(rc, 2, out + err)
            self.assertIn(db, err)
            self.assertIn("schema version 2", err)
            self.assertIn("version 1", err)
        self.assertEqual(db_content(db), before)

    def test_bad_traces_change_nothing(self):
        db = self.copy_db("traces.sqlite")
        before = db_content(db)
        text = os.path.join(self.tmp.name, "not-a-trace.h5")
        with open(text, "w") as f:
            f.write("not HDF5\n")
        missing = os.path.join(self.tmp.name, "missing.h5")
        for bad in (text, missing, db):
            # The good trace first: nothing of it may be stored either.
            rc, out, err = run("history", "add", self.nights[0], bad, "--db", db, "--label", "bad-night")
            self.assertEqual(rc, 2, f"{bad}: {out}{err}")
            self.assertIn(bad, err)
            self.assertEqual(db_content(db), before)
        # One night holding the same case twice (a shard trace and the merged file it went into).
        shard = sorted(glob.glob(os.path.join(self.tmp.name, "night1", "*.h5")))[0]
        rc, out, err = run("history", "add", self.nights[0], shard, "--db", db, "--label", "twice")
        self.assertEqual(rc, 2, out + err)
        self.assertIn(shard, err)
        self.assertIn(self.nights[0], err)
        self.assertEqual(db_content(db), before)
        # A new database is not created by an add that fails.
        new = os.path.join(self.tmp.name, "new.sqlite")
        rc, out, err = run("history", "add", text, "--db", new, "--label", "x")
        self.assertEqual(rc, 2, out + err)
        self.assertFalse(os.path.exists(new))


ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCHEDULER_VARS = ("SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_MAX",
                  "SLURM_ARRAY_TASK_STEP", "SLURM_JOB_ID", "JOB_COMPLETION_INDEX", "CI_NODE_INDEX", "CI_NODE_TOTAL")


def docs_script(name):
    """The fenced block of docs/nightly.md whose comment line names `name`."""
    with open(os.path.join(ROOT, "docs", "nightly.md")) as f:
        text = f.read()
    for block in text.split("```sh\n")[1:]:
        body = block.split("```", 1)[0]
        if f"# {name}:" in body:
            return body
    raise AssertionError(f"docs/nightly.md has no {name} block")


class DocsSlurmScripts(unittest.TestCase):
    """docs/nightly.md's Slurm scripts as written, each array task run by bash under the variables
    Slurm gives it (sbatch itself is not needed: #SBATCH lines are comments to bash)."""

    def test_array_then_merge(self):
        shard_script, merge_script = docs_script("nightly.sbatch"), docs_script("merge.sbatch")
        first, last = (int(x) for x in shard_script.split("#SBATCH --array=", 1)[1].split()[0].split("-"))
        with tempfile.TemporaryDirectory() as t:
            os.symlink(os.path.join(ROOT, "fixtures"), os.path.join(t, "fixtures"))
            for name, body in (("nightly.sbatch", shard_script), ("merge.sbatch", merge_script)):
                with open(os.path.join(t, name), "w") as f:
                    f.write(body)
            env = {k: v for k, v in os.environ.items() if k not in SCHEDULER_VARS}
            env.update(PATH=os.path.dirname(os.path.abspath(DRIFTSCOPE)) + os.pathsep + env.get("PATH", ""),
                       NIGHT="2026-11-29", COMMIT="abc1234")
            count = last - first + 1
            for task in range(first, last + 1):
                task_env = dict(env, SLURM_ARRAY_TASK_ID=str(task), SLURM_ARRAY_TASK_COUNT=str(count),
                                SLURM_ARRAY_TASK_MIN=str(first), SLURM_ARRAY_TASK_MAX=str(last))
                p = subprocess.run(["bash", "nightly.sbatch"], cwd=t, env=task_env, capture_output=True, text=True,
                                   timeout=240)
                self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
                self.assertIn(f"--shard auto: shard {task - first}/{count} from the Slurm job array", p.stdout)
            p = subprocess.run(["bash", "merge.sbatch"], cwd=t, env=env, capture_output=True, text=True, timeout=240)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            merged = os.path.join(t, "nightly", "2026-11-29.h5")
            with h5py.File(merged, "r") as f:
                cases = f["case_index"][:]
            self.assertEqual(len(cases), 8)
            self.assertEqual(sorted({r["shard"].decode() for r in cases}), [f"{i}/{count}" for i in range(count)])
            self.assertTrue(os.path.exists(os.path.join(t, "nightly", "2026-11-29.xml")))
            rc, out, err = run("history", "show", "--db", os.path.join(t, "nightly", "history.sqlite"), "--json")
            self.assertEqual(rc, 0, out + err)
            shown = json.loads(out)
            self.assertEqual([n["label"] for n in shown["nights"]], ["2026-11-29/abc1234"])
            self.assertEqual(len(shown["cases"]), 8)
            self.assertTrue(all(c["outcomes"] == ["pass"] for c in shown["cases"]))


if __name__ == "__main__":
    unittest.main()
