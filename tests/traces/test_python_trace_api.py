"""driftscope.trace (python/driftscope/trace.py) against the C++ side: traces written by the real
CLI, read by the module, and compared with what `driftscope report --json` says of the same file
and with h5py slicing done here independently of the module.

Usage: /usr/bin/python3 test_python_trace_api.py DRIFTSCOPE_BIN SOURCE_DIR

Runs: a passing run (both lanes, one decode step), a failing mutant, --capture stats, a run killed
after one layer, a run cut by a full disk, a refused run, and a merge of two of them; then files
that are no trace (text, HDF5 without the schema, a newer version, a truncated copy, a corrupt row,
rows past /written). Exits non-zero on the first failed check."""
import json
import math
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np

DS, SOURCE_DIR = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(SOURCE_DIR, "python"))
from driftscope.trace import MODEL_LAYER, TraceError, open_trace  # noqa: E402

MODEL = "synthetic:llama-tiny"  # 2 layers, hidden 64: every run below takes well under a second
# Report metrics whose SummaryRow field has the same name (docs/trace-format.md "/summary fields").
SHARED_METRICS = ("numel", "max_abs", "max_abs_index", "max_abs_ref", "max_abs_cand", "mean_abs", "rms",
                  "max_rel", "max_ulp", "mean_ulp", "cosine", "nmse", "sqnr_db", "ref_rms", "mismatches",
                  "first_mismatch", "first_ref", "first_cand", "nan_ref", "nan_cand", "inf_ref", "inf_cand",
                  "first_nan", "min_atol", "min_rtol", "atol", "rtol", "floor_max_abs", "floor_rms",
                  "floor_mean_abs", "bias_slope", "bias_se")
# The report's `metrics.local` keys and the SummaryRow fields that hold them.
LOCAL_METRICS = {"max_abs": "local_max_abs", "rms": "local_rms", "noise_max_abs": "local_noise_max_abs",
                 "noise_rms": "local_noise_rms", "scale": "local_scale", "bias_slope": "local_bias_slope",
                 "bias_se": "local_bias_se", "carried_max_abs": "carried_max_abs", "carried_rms": "carried_rms"}

TMP = tempfile.mkdtemp(prefix="ds_python_trace_")


def path(name):
    return os.path.join(TMP, name)


def ds(*args, env=None, preexec_fn=None):
    return subprocess.run([DS, *args], capture_output=True, text=True, timeout=120,
                          env=env, preexec_fn=preexec_fn)


def read_json(file_name):
    with open(file_name) as f:
        return json.load(f)


def run_trace(name, *flags, expect_rc, env=None, preexec_fn=None):
    """Runs `driftscope run` writing trace NAME.h5 and its own --json; returns (trace, run json)."""
    trace, report = path(name + ".h5"), path(name + ".run.json")
    p = ds("run", "-m", MODEL, "-o", trace, "--json", report, *flags, env=env, preexec_fn=preexec_fn)
    assert p.returncode == expect_rc, (name, p.returncode, p.stdout[-2000:], p.stderr[-2000:])
    run_json = read_json(report) if os.path.exists(report) else None
    return trace, run_json


def report_json(trace, expect_rc):
    out = path(os.path.basename(trace) + ".report.json")
    p = ds("report", trace, "--json", out)
    assert p.returncode == expect_rc, (trace, p.returncode, p.stdout[-2000:], p.stderr[-2000:])
    return read_json(out), p.stdout


def number(value):
    # The JSON report spells what JSON cannot hold as strings.
    return {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}.get(value, value)


def same_number(a, b):
    return (math.isnan(a) and math.isnan(b)) if isinstance(a, float) and math.isnan(a) else a == b


def check_rows_match_report(trace, report):
    """Every row of the module's view against the report's stage of the same index: key, status,
    shape and every metric, so a field read from the wrong offset of the compound cannot pass."""
    assert len(trace.rows) == len(report["stages"]), (len(trace.rows), len(report["stages"]))
    for row, stage in zip(trace.rows, report["stages"]):
        layer = MODEL_LAYER if stage["layer"] is None else stage["layer"]
        assert (row.step, row.layer, row.stage, row.mode, row.seq) == \
               (stage["step"], layer, stage["stage"], stage["mode"], stage["seq"]), (row, stage)
        assert row.status == stage["status"], (row, stage["status"])
        assert row.failed == stage["failure"] and row.expected == stage["expected"], (row, stage)
        assert row.shape == tuple(stage["shape"]) and row.cand_dtype == stage["cand_dtype"], (row, stage)
        # The trace keeps a note's first 95 bytes (char[96]); the report words the whole of it.
        assert stage["note"].encode().startswith(row.note.encode()), (row, row.note, stage["note"])
        assert row.note == stage["note"] or len(row.record["note"]) == 95, (row, row.note, stage["note"])
        metrics = stage.get("metrics")
        if metrics is None:
            continue
        for field in SHARED_METRICS:
            assert same_number(getattr(row, field), number(metrics[field])), \
                (row, field, getattr(row, field), metrics[field])
        assert row.ulp_hist.tolist() == metrics["ulp_hist"], (row, row.ulp_hist, metrics["ulp_hist"])
        assert row.inf_agree == metrics["inf_agree"], row
        assert f"{row.cand_hash:016x}" == metrics["cand_hash"], (row, row.cand_hash, metrics["cand_hash"])
        for key, field in LOCAL_METRICS.items():
            if "local" in metrics:
                assert same_number(getattr(row, field), number(metrics["local"][key])), (row, field)


def check_tensors_against_h5py(trace_path, trace):
    """ref()/cand()/per_token() against pool slices read here with h5py, and the tensors against
    the metrics the harness computed from them. Returns how many rows held tensors."""
    with_tensors = 0
    with h5py.File(trace_path, "r") as f:
        for row in trace.rows:
            record = f["summary"][row.index]
            numel = int(np.prod(record["shape"][:record["rank"]]))
            for got, pool, offset in ((row.ref(), "tensors/ref", "ref_offset"),
                                      (row.cand(), "tensors/cand", "cand_offset"),
                                      (row.per_token(), "per_token", "tokens_offset")):
                start = int(record[offset])
                if start < 0:
                    assert got is None, (row, pool)
                    continue
                n = int(record["n_tokens"]) if pool == "per_token" else numel
                want = f[pool][start:start + n]
                assert got.dtype == np.float64, (row, pool, got.dtype)
                assert got.shape == ((n,) if pool == "per_token" else row.shape), (row, pool, got.shape)
                assert np.array_equal(got.ravel(), want, equal_nan=True), (row, pool)
            if row.has_tensors:
                with_tensors += 1
                if row.nan_ref == 0 and row.nan_cand == 0 and row.inf_ref == 0 and row.inf_cand == 0:
                    recomputed = float(np.abs(row.cand() - row.ref()).max()) if row.numel else 0.0
                    assert recomputed == row.max_abs, (row, recomputed, row.max_abs)
    return with_tensors


def check_passing_run():
    trace_path, run_json = run_trace("pass", "-c", "cpu-f16", "--mode", "both", "--decode-steps", "1",
                                     expect_rc=0)
    report, _ = report_json(trace_path, 0)
    with open_trace(trace_path) as t:
        assert t.finished and t.status == "ran", t
        assert t.exit_code == 0 == report["exit_code"], (t.exit_code, report["exit_code"])
        assert t.verdict == run_json["verdict"] == report["verdict"], (t.verdict, run_json["verdict"])
        assert t.first_failure is None and report["first_failure"] is None
        assert t.run["candidate"]["name"] == "cpu-f16" and t.run["model_spec"] == MODEL, t.run
        assert t.capture == "all" and t.version == 1, (t.capture, t.version)
        check_rows_match_report(t, report)
        with_tensors = check_tensors_against_h5py(trace_path, t)
        assert with_tensors == len(t.rows), (with_tensors, len(t.rows))  # --capture all
        assert {r.mode for r in t.rows} == {"isolated", "chained"} and {r.step for r in t.rows} == {0, 1}

        found = t.find(stage="attn", layer=1, step=1, mode="chained")
        assert len(found) == 1 and (found[0].stage, found[0].layer, found[0].step, found[0].mode) == \
               ("attn", 1, 1, "chained"), found
        assert found[0].ref().shape == found[0].shape, (found[0].ref().shape, found[0].shape)
        model_level = t.find(layer=MODEL_LAYER, step=0, mode="isolated")
        assert [r.stage for r in model_level] == ["embed", "final_norm", "logits"], model_level
        assert t.find(failed=True) == [], "a passing run has no failing row"
        for bad in ({"mode": "chain"}, {"status": "passed"}):
            try:
                t.find(**bad)
            except ValueError:
                continue
            raise AssertionError(f"find({bad}) accepted an unknown name")
        # cpu-f16 launches no kernel: the dataset is there, empty.
        assert t.launches is not None and len(t.launches) == 0, t.launches
        print(f"ok  passing run: {len(t.rows)} rows (both lanes, 2 steps) match `report --json` stage by stage "
              f"and metric by metric; {with_tensors} rows' ref/cand/per-token equal h5py's pool slices, "
              f"max|cand-ref| recomputed equals max_abs; verdict, exit 0, find()")
    return trace_path


def check_failing_mutant():
    trace_path, run_json = run_trace("fail", "-c", "mutant:chain-add-idx", "--mode", "both", expect_rc=1)
    report, _ = report_json(trace_path, 1)
    with open_trace(trace_path) as t:
        assert t.exit_code == 1 == report["exit_code"], (t.exit_code, report["exit_code"])
        assert t.verdict == run_json["verdict"], (t.verdict, run_json["verdict"])
        check_rows_match_report(t, report)
        check_tensors_against_h5py(trace_path, t)

        first, named = t.first_failure, report["first_failure"]
        assert first is not None and first.failed, first
        named_layer = MODEL_LAYER if named["layer"] is None else named["layer"]
        assert (first.stage, first.layer, first.step, first.mode) == \
               (named["stage"], named_layer, named["step"], named["mode"]), (first, named)
        assert f"first failing stage is {first.stage} of layer {first.layer}" in t.verdict, t.verdict
        assert first.first_mismatch == t.result["first_failure"]["first_mismatch"]

        # The failing stage's step keeps its inputs in every capture mode: read them here too.
        inputs = first.inputs()
        assert inputs, "the first failure's step stored its inputs"
        compared = set()
        with h5py.File(trace_path, "r") as f:
            n_index = int(f["written"][1])
            for entry in f["inputs/index"][:n_index]:
                outputs = entry["outputs"].decode().split(",")
                if (entry["step"], entry["layer"], entry["mode"]) != (first.step, first.layer, first.record["mode"]) \
                        or first.stage not in outputs:
                    continue
                shape = tuple(entry["shape"][:entry["rank"]])
                want = f["inputs/data"][entry["offset"]:entry["offset"] + int(np.prod(shape))].reshape(shape)
                assert np.array_equal(inputs[entry["name"].decode()], want), entry["name"]
                compared.add(entry["name"].decode())
            assert compared == set(inputs), (compared, set(inputs))
            launches = f["launches"][:int(f["written"][2])]
        # A simt mutant launches kernels: the module gives the written rows of /launches.
        assert t.launches is not None and len(t.launches) == len(launches) > 0, (t.launches, len(launches))
        assert np.array_equal(t.launches, launches)
        assert set(t.launches["backend"]) == {b"simt"}, set(t.launches["backend"])
        print(f"ok  failing mutant: first_failure = {first.stage} of layer {first.layer} at step {first.step} "
              f"({first.mode}) as `report --json` names it; exit {t.exit_code} as the process's; the step's "
              f"inputs {sorted(inputs)} and {len(launches)} launches equal h5py's")
        later = next(r for r in t.rows if r.failed and r.mode == "chained")
    check_first_failure_is_the_named_one(trace_path, later)
    return trace_path


def check_first_failure_is_the_named_one(trace_path, later):
    """The harness picks the stage it names (an isolated failure over an earlier chained one), so
    first_failure must follow /result, not the first failing row: here /result names a later row."""
    renamed = path("renamed_first_failure.h5")
    shutil.copy(trace_path, renamed)
    with h5py.File(renamed, "r+") as f:
        result = json.loads(bytes(f["result"][:]).decode())
        result["first_failure"].update(step=later.step, layer=later.layer, stage=later.stage, mode=later.mode)
        text = np.frombuffer(json.dumps(result).encode(), dtype=np.uint8)
        f["result"].resize((len(text),))
        f["result"][:] = text
    with open_trace(renamed) as t:
        assert t.first_failure.index == later.index, (t.first_failure, later)
        assert t.find(failed=True)[0].index < later.index, "a failing row precedes the named one"
    print(f"ok  first_failure follows /result's naming ({later!r}), not the first failing row")


def check_stats_capture():
    trace_path, _ = run_trace("stats", "-c", "cpu-f16", "--capture", "stats", expect_rc=0)
    report, _ = report_json(trace_path, 0)
    with open_trace(trace_path) as t:
        assert t.capture == "stats", t.capture
        check_rows_match_report(t, report)
        assert all(r.ref() is None and r.cand() is None and not r.has_tensors for r in t.rows)
        assert all(r.inputs() is None for r in t.rows)
        assert check_tensors_against_h5py(trace_path, t) == 0
        # Per-token errors are metrics, not capture: they stay under every capture mode.
        tokens_kept = sum(r.per_token() is not None for r in t.rows)
        print(f"ok  --capture stats: {len(t.rows)} rows, ref()/cand()/inputs() None for all; "
              f"per_token() kept for {tokens_kept}")


def check_killed_run():
    env = dict(os.environ, DRIFTSCOPE_TEST_KILL_AFTER_LAYERS="1")
    trace_path, run_json = run_trace("killed", "-c", "cpu-f16", expect_rc=-signal.SIGKILL, env=env)
    assert run_json is None, "a killed run wrote no JSON report"
    report, _ = report_json(trace_path, 1)  # INCOMPLETE, never a pass
    with open_trace(trace_path) as t:  # still marked as being written: opened under SWMR
        assert not t.finished and t.result is None, t.result
        assert t.verdict is None and t.exit_code is None and t.first_failure is None and t.status is None
        incomplete = report["incomplete"]
        assert incomplete["rows_flushed"] == len(t.rows) > 0, (incomplete, len(t.rows))
        last = incomplete["last_stage_flushed"]
        assert (t.rows[-1].stage, t.rows[-1].layer, t.rows[-1].step, t.rows[-1].mode) == \
               (last["stage"], MODEL_LAYER if last["layer"] is None else last["layer"], last["step"], last["mode"])
        check_rows_match_report(t, report)
        print(f"ok  killed run: opens (SWMR), finished False, no verdict/exit code; {len(t.rows)} flushed rows as "
              f"`report` counts them, the last {last['stage']} of layer {last['layer']}")


def check_full_disk(roomy_trace):
    limit = 260 * 1024  # past the file's creation, before the run's end

    def small_disk():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # write() returns EFBIG, as on a full disk

    trace_path, _ = run_trace("cut", "-c", "cpu-f16", "--mode", "both", "--decode-steps", "1", expect_rc=2,
                              preexec_fn=small_disk)
    report, text = report_json(trace_path, 2)
    with open_trace(trace_path) as t, open_trace(roomy_trace) as whole:
        assert not t.finished and t.write_error is not None, (t.result, t.write_error)
        assert t.write_error["status"] == "write-failed" and t.write_error["exit_code"] == 2, t.write_error
        assert f"{len(t.rows)} stages judged" in text, text
        check_rows_match_report(t, report)
        # What was written is a prefix of the same run on a roomy disk, tensors included.
        assert len(t.rows) <= len(whole.rows)
        for cut_row, roomy_row in zip(t.rows, whole.rows):
            assert (cut_row.stage, cut_row.layer, cut_row.step, cut_row.mode) == \
                   (roomy_row.stage, roomy_row.layer, roomy_row.step, roomy_row.mode)
            if cut_row.has_tensors:
                assert np.array_equal(cut_row.cand(), roomy_row.cand()), cut_row
        print(f"ok  full disk: exit 2, write_error says write-failed, {len(t.rows)} rows written = "
              f"`report`'s count, each equal to the roomy run's")


def check_refused_run():
    trace_path = path("refused.h5")
    p = ds("run", "-m", "synthetic:qwen3-tiny", "-c", "cpu-f16-v1", "-o", trace_path)
    assert p.returncode == 3, (p.returncode, p.stderr)
    with open_trace(trace_path) as t:
        assert t.finished and t.status == "refused" and t.exit_code == 3, t.result
        assert t.verdict.startswith("REFUSED") and t.rows == [] and t.first_failure is None, t
        print(f"ok  refused run: status refused, exit 3, 0 rows, verdict '{t.verdict[:50]}...'")


def check_merged(pass_trace, fail_trace):
    merged = path("merged.h5")
    p = ds("merge", "-o", merged, pass_trace, fail_trace)
    assert p.returncode == 0, p.stderr
    expect_refusal(lambda: open_trace(merged), merged, "merged file of 2 case(s)")
    expect_refusal(lambda: open_trace(merged, case=7), merged, "no case 7")
    by_candidate = {}
    for case in (0, 1):
        with open_trace(merged, case=case) as t:
            by_candidate[t.run["candidate"]["name"]] = (t.summary.tobytes(), t.verdict)
    for source in (pass_trace, fail_trace):
        with open_trace(source) as t:
            assert by_candidate[t.run["candidate"]["name"]] == (t.summary.tobytes(), t.verdict), source
    print("ok  merged file: refused without case=K (naming the count); each case reads as its source trace")


def expect_refusal(open_it, named_file, words):
    try:
        open_it()
    except TraceError as e:
        assert named_file in str(e) and words in str(e), (str(e), named_file, words)
        return str(e)
    raise AssertionError(f"{named_file} opened; expected a TraceError saying '{words}'")


def check_not_traces(pass_trace, fail_trace):
    text_file = path("notes.txt")
    with open(text_file, "w") as f:
        f.write("not a trace\n")
    no_schema = path("plain.h5")
    with h5py.File(no_schema, "w") as f:
        f["summary"] = np.zeros(3)
    newer = path("newer.h5")
    shutil.copy(pass_trace, newer)
    with h5py.File(newer, "r+") as f:
        f.attrs["version"] = 2
    truncated = path("truncated.h5")
    with open(pass_trace, "rb") as src, open(truncated, "wb") as dst:
        dst.write(src.read(os.path.getsize(pass_trace) // 2))
    bad_status = path("bad_status.h5")
    shutil.copy(pass_trace, bad_status)
    with h5py.File(bad_status, "r+") as f:
        row = f["summary"][5]
        row["status"] = 200
        f["summary"][5] = row
    cases = [(text_file, "not an HDF5 file"), (path("missing.h5"), "no such trace file"),
             (no_schema, "not a Driftscope trace"), (newer, "version 2 is newer"),
             (truncated, "cannot open"), (bad_status, "row 5: status = 200")]
    for bad, words in cases:
        message = expect_refusal(lambda: open_trace(bad), bad, words)
        # The CLI refuses the same files (exit 2, naming them): the module is no more lenient.
        p = ds("report", bad)
        assert p.returncode == 2 and bad in p.stderr, (bad, p.returncode, p.stderr)
        print(f"ok  refused: {os.path.basename(bad)}: {message[len(bad) + 2:][:90]}")

    # Rows a failed flush may leave past /written (the extent grown over zeros) are never read.
    cut = path("past_written.h5")
    shutil.copy(fail_trace, cut)
    with h5py.File(cut, "r+") as f:
        f["written"][0] = 20
        f["summary"].resize((f["summary"].shape[0] + 4,))
    _, text = report_json(cut, 1)
    with open_trace(cut) as t:
        assert len(t.rows) == 20 == len(t.summary) and "20 stages judged" in text, (len(t.rows), text[-500:])
    print("ok  rows past /written: 20 read of a grown /summary, as `report` judges")


def main():
    started = time.monotonic()
    try:
        pass_trace = check_passing_run()
        fail_trace = check_failing_mutant()
        check_stats_capture()
        check_killed_run()
        check_full_disk(pass_trace)
        check_refused_run()
        check_merged(pass_trace, fail_trace)
        check_not_traces(pass_trace, fail_trace)
    except BaseException:
        print(f"FAILED; the traces are kept in {TMP}", file=sys.stderr)
        raise
    shutil.rmtree(TMP)
    print(f"all driftscope.trace checks passed in {time.monotonic() - started:.1f} s")


if __name__ == "__main__":
    main()
