"""Read a Driftscope HDF5 trace (docs/trace-format.md) into numpy: its run, its result, its summary
rows with every metric, and the stage tensors the capture mode kept.

Import path: `sys.path.insert(0, "<prefix>/share/driftscope/python")` for an installed driftscope,
`<checkout>/python` in a source tree; then `from driftscope.trace import open_trace`. Needs only
numpy and h5py.

    with open_trace("out.h5") as t:
        print(t.verdict, len(t.rows))
        bad = t.first_failure                      # a Row, or None
        if bad is not None and bad.has_tensors:
            diff = bad.cand() - bad.ref()          # float64, shaped like the stage

The rules are the C++ reader's (traces/trace_reader.cpp), so a script sees what `driftscope
report` sees: a file without the `schema` attribute or of a newer version is refused; no row past
`/written` is read (rows a failed flush left behind read back as zeros); a run whose `/result` holds
no JSON object did not finish, whatever its rows say. Unlike the CLI this module does not guard
against a corrupt file that makes HDF5 itself crash or loop: vet an untrusted file with `driftscope
report` first.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any, Dict, List, Optional

import h5py
import numpy as np

SCHEMA = "driftscope-trace"
VERSION = 1  # the newest trace version this module reads

# Code -> name tables of the uint8 fields of /summary, in the order of their C++ enums
# (harness/api/result.h Status and Mode, harness/api/dtype.h DType).
STATUS_NAMES = ("pass", "fail", "nan", "shape-mismatch", "missing", "skipped", "crashed", "filled",
                "race", "leak", "batch-variant", "memory")
MODE_NAMES = ("isolated", "chained")
DTYPE_NAMES = ("f64", "f32", "f16", "bf16", "i32")
MODEL_LAYER = -1  # the layer of model-level stages (embed, final_norm, logits) and launches

# /written's three counts, in this order (traces/trace_commit.h).
_WRITTEN_SUMMARY, _WRITTEN_INPUTS, _WRITTEN_LAUNCHES = 0, 1, 2
# The stopped-run statuses of a result and the exit code each must carry (traces/trace_stub.h).
_STOPPED_EXIT_CODE = {"refused": 3, "bad-input": 2, "write-failed": 2, "skipped": 0}
_MAX_EXIT_CODE = 4  # the CLI's exit codes are 0 (parity) .. 4 (crashed)
_MAX_RANK = 4


class TraceError(Exception):
    """The file is not a trace this module can read; the message names the file and why."""


def open_trace(path: str, case: Optional[int] = None) -> "Trace":
    """Opens a trace written by `driftscope run --trace`. `case` picks case K of a merged file
    (`driftscope merge`); a merged file opened without it is refused, since it holds many runs."""
    return Trace(path, case)


def _text(value: Any) -> str:
    # h5py gives variable-length string attributes as str, fixed-length ones as bytes.
    if isinstance(value, (bytes, np.bytes_)):
        return bytes(value).decode("utf-8", errors="replace")
    return str(value)


def _open_h5(path: str) -> h5py.File:
    if not os.path.exists(path):
        raise TraceError(f"{path}: no such trace file")
    if not os.path.isfile(path):
        raise TraceError(f"{path}: not a regular file")
    if not h5py.is_hdf5(path):
        raise TraceError(f"{path}: not an HDF5 file (truncated, or not a Driftscope trace)")
    try:
        return h5py.File(path, "r")
    except OSError as plain_error:
        # A killed run's file (or one still being written) is still marked as open for SWMR
        # writing, which only a SWMR read may open. Anything else is not retried under SWMR: there
        # HDF5 retries a bad checksum with doubling sleeps that on a corrupt file never end.
        if "already open for" not in str(plain_error):
            raise TraceError(f"{path}: HDF5 cannot open the file (truncated or corrupt?): {plain_error}")
    try:
        return h5py.File(path, "r", swmr=True)
    except OSError as swmr_error:
        raise TraceError(f"{path}: HDF5 cannot open the file (truncated or corrupt?): {swmr_error}")


class Row:
    """One row of /summary: one judged stage of one step, layer, lane (mode) and sequence.

    The decoded fields are attributes (`stage`, `mode`, `status`, `cand_dtype` as names, `shape`
    as a tuple); every other SummaryRow field (docs/trace-format.md, "/summary fields") reads by
    its own name (`row.max_abs`, `row.floor_rms`, `row.ulp_hist`...), and `row.record` is the raw
    numpy record with the codes as stored."""

    def __init__(self, trace: "Trace", index: int, record: np.void):
        self._trace = trace
        self.index = index  # its position in /summary: execution order
        self.record = record

    def __getattr__(self, name: str) -> Any:
        # Only reached for names that are no attribute of the class: the metric fields.
        record = self.__dict__.get("record")
        if record is None or name not in record.dtype.names:
            raise AttributeError(name)
        value = record[name]
        return value.item() if np.ndim(value) == 0 else np.array(value)

    @property
    def step(self) -> int:
        return int(self.record["step"])

    @property
    def layer(self) -> int:
        """The layer, or MODEL_LAYER (-1) for a model-level stage."""
        return int(self.record["layer"])

    @property
    def seq(self) -> int:
        return int(self.record["seq"])

    @property
    def stage(self) -> str:
        return _text(self.record["stage"])

    @property
    def mode(self) -> str:
        return MODE_NAMES[int(self.record["mode"])]

    @property
    def status(self) -> str:
        return STATUS_NAMES[int(self.record["status"])]

    @property
    def cand_dtype(self) -> str:
        return DTYPE_NAMES[int(self.record["cand_dtype"])]

    @property
    def shape(self) -> tuple:
        return tuple(int(d) for d in self.record["shape"][: int(self.record["rank"])])

    @property
    def note(self) -> str:
        return _text(self.record["note"])

    @property
    def expected(self) -> bool:
        return bool(self.record["expected"])

    @property
    def inf_agree(self) -> bool:
        return bool(self.record["inf_agree"])

    @property
    def failed(self) -> bool:
        """Whether the stage fails the run as stored (C++ is_failure): every status but pass and
        filled, except a missing or skipped stage the policy expected. Not a re-judgement."""
        if self.status in ("pass", "filled"):
            return False
        return not (self.expected and self.status in ("missing", "skipped"))

    @property
    def has_tensors(self) -> bool:
        return int(self.record["ref_offset"]) >= 0 and int(self.record["cand_offset"]) >= 0

    def ref(self) -> Optional[np.ndarray]:
        """The reference tensor (the baseline's in a --baseline run), float64 in the row's shape;
        None when the capture mode did not keep it."""
        return self._trace._slice("tensors/ref", int(self.record["ref_offset"]), self.shape, self)

    def cand(self) -> Optional[np.ndarray]:
        """The candidate's stored values widened exactly to float64, in the row's shape; None
        when the capture mode did not keep them."""
        return self._trace._slice("tensors/cand", int(self.record["cand_offset"]), self.shape, self)

    def per_token(self) -> Optional[np.ndarray]:
        """The relative error of each row of a 2-D stage; None when the stage stored none."""
        return self._trace._slice("per_token", int(self.record["tokens_offset"]),
                                  (int(self.record["n_tokens"]),), self)

    def inputs(self) -> Optional[Dict[str, np.ndarray]]:
        """The inputs of the candidate step that produced this stage (name -> float64 array), as
        `driftscope replay` reads them; None when the trace did not capture them (only a
        failing stage's step, or every step under `--capture inputs`)."""
        return self._trace._step_inputs(self)

    def as_dict(self) -> Dict[str, Any]:
        """Every field, decoded: for printing, or a row of a pandas DataFrame."""
        out = {name: getattr(self, name) for name in self.record.dtype.names}
        out["failed"] = self.failed
        return out

    def __repr__(self) -> str:
        where = "model" if self.layer == MODEL_LAYER else f"layer {self.layer}"
        seq = f" seq {self.seq}" if self.seq else ""
        return f"<Row {self.index}: step {self.step} {where} {self.stage} {self.mode}{seq} {self.status}>"


class Trace:
    """One run's trace, opened read-only. Rows and the run's metadata are read at open; tensors
    only when a row's ref()/cand()/per_token()/inputs() asks for them, so the file stays open
    until close() (or the end of a `with` block)."""

    def __init__(self, path: str, case: Optional[int] = None):
        self.path = os.fspath(path)
        path = self.path
        self._file = _open_h5(path)
        try:
            self._root = self._open_root(case)
            self._read_metadata()
        except TraceError:
            self._file.close()
            raise
        except (OSError, KeyError, ValueError) as e:
            # h5py reports a dataset it cannot read as one of these; the caller gets one error type.
            self._file.close()
            raise TraceError(f"{path}: cannot read the trace (truncated or corrupt?): {e}") from e

    def __enter__(self) -> "Trace":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._file.close()

    def _open_root(self, case: Optional[int]) -> h5py.Group:
        merged = int(self._file.attrs.get("merged", 0)) > 0
        if case is None:
            if merged:
                n = len(self._file["cases"]) if "cases" in self._file else 0
                raise TraceError(f"{self.path}: a merged file of {n} case(s), not a single run: "
                                 f"open one with open_trace(path, case=K)")
            root = self._file
        else:
            group = f"cases/{case}"
            if not merged or group not in self._file:
                raise TraceError(f"{self.path}: no case {case} in this file")
            root = self._file[group]
        if _text(root.attrs.get("schema", "")) != SCHEMA:
            raise TraceError(f"{self.path}: an HDF5 file but not a Driftscope trace "
                             f"(no schema attribute '{SCHEMA}')")
        self.version = int(root.attrs.get("version", 0))
        if self.version > VERSION:
            raise TraceError(f"{self.path}: trace schema version {self.version} is newer than this "
                             f"module reads ({VERSION})")
        return root

    def _read_metadata(self) -> None:
        root = self._root
        self.attrs: Dict[str, str] = {k: _text(v) for k, v in root.attrs.items()}
        try:
            self.run: Dict[str, Any] = json.loads(self.attrs.get("run", ""))
        except ValueError as e:
            raise TraceError(f"{self.path}: attribute 'run' is not valid JSON: {e}")
        if not isinstance(self.run, dict):
            raise TraceError(f"{self.path}: attribute 'run' is not a JSON object")
        self.capture = self.attrs.get("capture", "")
        self._written = self._read_written()
        self.summary = self._read_rows("summary", _WRITTEN_SUMMARY, required=True)
        self._check_rows(self.summary)
        self.rows = [Row(self, i, record) for i, record in enumerate(self.summary)]
        self.result = self._read_result()
        self.write_error = self._read_write_error()
        self._inputs_index: Optional[np.ndarray] = None

    def _read_written(self) -> Optional[np.ndarray]:
        if "written" not in self._root:
            return None  # written before the count existed: every row counts
        written = self._root["written"]
        if written.ndim != 1 or written.shape[0] != 3:
            raise TraceError(f"{self.path}: /written does not hold the 3 row counts it should: corrupt trace")
        counts = written[:].astype(np.int64)
        if (counts < 0).any():
            raise TraceError(f"{self.path}: /written holds a negative row count ({counts.min()}): corrupt trace")
        return counts

    def _read_rows(self, name: str, written_index: int, required: bool) -> Optional[np.ndarray]:
        if name not in self._root:
            if required:
                raise TraceError(f"{self.path}: dataset /{name} is missing")
            return None
        dataset = self._root[name]
        if dataset.ndim != 1:
            raise TraceError(f"{self.path}: dataset /{name} has rank {dataset.ndim} "
                             f"(a trace's datasets are 1-D): corrupt trace")
        n = dataset.shape[0]
        if self._written is not None:
            n = min(n, int(self._written[written_index]))
        # A slice, never the whole dataset: the chunks past the written rows may be what a failed
        # write left, and reading them can fail.
        return dataset[:n]

    def _check_rows(self, summary: np.ndarray) -> None:
        # Values no writer produces are refused here, before a name table or a reshape trips on
        # them; checked column by column, since a long run's trace holds tens of thousands of rows.
        def first(bad_rows: np.ndarray) -> Optional[int]:
            hits = np.flatnonzero(bad_rows)
            return int(hits[0]) if hits.size else None

        def refuse(i: int, field: str, value: Any) -> TraceError:
            return TraceError(f"{self.path}: /summary row {i}: {field} = {value} is out of range: corrupt trace")

        if summary.size == 0:
            return
        i = first(summary["stage"] == b"")
        if i is not None:
            raise TraceError(f"{self.path}: /summary row {i} (step {summary['step'][i]}, layer "
                             f"{summary['layer'][i]}): the stage name is empty: corrupt or too old a trace")
        for field, names in (("mode", MODE_NAMES), ("status", STATUS_NAMES), ("cand_dtype", DTYPE_NAMES)):
            i = first(summary[field] >= len(names))
            if i is not None:
                raise refuse(i, field, int(summary[field][i]))
        rank = summary["rank"]
        i = first((rank < 0) | (rank > _MAX_RANK))
        if i is not None:
            raise refuse(i, "rank", int(rank[i]))
        within_rank = np.arange(_MAX_RANK)[None, :] < rank[:, None]
        i = first(((summary["shape"] < 0) & within_rank).any(axis=1))
        if i is not None:
            raise refuse(i, "shape", "x".join(str(int(d)) for d in summary["shape"][i][: rank[i]]))
        for field in ("ref_offset", "cand_offset", "tokens_offset", "n_tokens"):
            lowest = 0 if field == "n_tokens" else -1  # -1: not captured
            i = first(summary[field] < lowest)
            if i is not None:
                raise refuse(i, field, int(summary[field][i]))

    def _read_result(self) -> Optional[Dict[str, Any]]:
        if "result" not in self._root:
            return None
        raw = bytes(self._root["result"][:])
        try:
            result = json.loads(raw.decode("utf-8")) if raw else None
        except ValueError:
            result = None  # a torn write: the run did not finish, as the C++ reader reads it
        if not isinstance(result, dict):
            return None
        self._check_result(result, "/result")
        return result

    def _read_write_error(self) -> Optional[Dict[str, Any]]:
        # /write_error is all NUL unless a write failed; its space is reserved up front, so a
        # record is the JSON text up to the first NUL.
        if "write_error" not in self._root:
            return None
        raw = bytes(self._root["write_error"][:]).split(b"\0", 1)[0]
        if not raw:
            return None
        try:
            record = json.loads(raw.decode("utf-8"))
        except ValueError:
            return None
        # Only a write-failure record counts: nothing in /write_error can make a run look finished.
        if not isinstance(record, dict) or record.get("status") != "write-failed":
            return None
        self._check_result(record, "/write_error")
        return record

    def _check_result(self, result: Dict[str, Any], name: str) -> None:
        # The checks of traces/trace_cases.cpp: an exit code or status no run writes is a corrupt
        # trace, never a value handed on to a script's own exit status.
        code = result.get("exit_code")
        if "exit_code" in result and (not isinstance(code, int) or isinstance(code, bool)
                                      or not 0 <= code <= _MAX_EXIT_CODE):
            raise TraceError(f"{self.path}: {name}: exit_code must be an integer from 0 to {_MAX_EXIT_CODE} "
                             f"(it is {code!r}): corrupt trace")
        for field in ("status", "verdict", "reason"):
            if field in result and not isinstance(result[field], str):
                raise TraceError(f"{self.path}: {name}: {field} must be a string: corrupt trace")
        status = result.get("status", "ran")
        if status != "ran":
            if status not in _STOPPED_EXIT_CODE:
                raise TraceError(f"{self.path}: {name}: status '{status}' is none of ran, "
                                 f"{', '.join(_STOPPED_EXIT_CODE)}: corrupt trace")
            if code != _STOPPED_EXIT_CODE[status]:
                raise TraceError(f"{self.path}: {name}: a run of status '{status}' exits "
                                 f"{_STOPPED_EXIT_CODE[status]} (it stored {code!r}): corrupt trace")

    # The run's outcome. A run that did not finish (killed, or its trace write failed) has none:
    # `driftscope report` calls it INCOMPLETE, never a pass, whatever its rows say.

    @property
    def finished(self) -> bool:
        return self.result is not None

    @property
    def status(self) -> Optional[str]:
        """ran, refused, bad-input or skipped (docs/trace-format.md); None when not finished."""
        if self.result is None:
            return None
        return self.result.get("status", "ran")  # traces older than the field ran

    @property
    def verdict(self) -> Optional[str]:
        return None if self.result is None else self.result.get("verdict")

    @property
    def exit_code(self) -> Optional[int]:
        """What `driftscope run` exited with; None when the run did not finish."""
        return None if self.result is None else self.result.get("exit_code")

    @property
    def first_failure(self) -> Optional[Row]:
        """The row of the stage the run named as its first failure (the result's `first_failure`:
        chosen by the harness, not always the first failing row in execution order); None when
        the run passed, stopped before any stage, or did not finish."""
        named = None if self.result is None else self.result.get("first_failure")
        if not isinstance(named, dict):
            return None
        # The result names no sequence: in a batch run the first failing row of that key is it.
        matches = self.find(step=named.get("step"), layer=named.get("layer"), stage=named.get("stage"),
                            mode=named.get("mode"))
        return next((r for r in matches if r.failed), matches[0] if matches else None)

    @property
    def launches(self) -> Optional[np.ndarray]:
        """The candidate's kernel launches (/launches) as a numpy structured array, in launch order
        (string fields are bytes), read on each access; None in a trace older than launch records."""
        return self._read_rows("launches", _WRITTEN_LAUNCHES, required=False)

    def find(self, stage: Optional[str] = None, layer: Optional[int] = None, step: Optional[int] = None,
             mode: Optional[str] = None, status: Optional[str] = None, seq: Optional[int] = None,
             failed: Optional[bool] = None) -> List[Row]:
        """The rows matching every criterion given, in execution order."""
        # An unknown name would silently match nothing, which reads like "no such failure".
        if mode is not None and mode not in MODE_NAMES:
            raise ValueError(f"mode {mode!r} is none of {', '.join(MODE_NAMES)}")
        if status is not None and status not in STATUS_NAMES:
            raise ValueError(f"status {status!r} is none of {', '.join(STATUS_NAMES)}")
        return [r for r in self.rows
                if (stage is None or r.stage == stage) and (layer is None or r.layer == layer)
                and (step is None or r.step == step) and (mode is None or r.mode == mode)
                and (status is None or r.status == status) and (seq is None or r.seq == seq)
                and (failed is None or r.failed == failed)]

    def _slice(self, pool: str, offset: int, shape: tuple, row: Row) -> Optional[np.ndarray]:
        if offset < 0:
            return None
        numel = math.prod(shape)
        if pool not in self._root:
            raise TraceError(f"{self.path}: dataset /{pool} is missing")
        dataset = self._root[pool]
        # Offsets come from the file: a slice past the pool's end would come back short, not fail.
        if offset > dataset.shape[0] - numel:
            raise TraceError(f"{self.path}: {row!r}: {numel} elements at {offset} lie outside /{pool} "
                             f"({dataset.shape[0]} elements): corrupt trace")
        return np.asarray(dataset[offset:offset + numel], dtype=np.float64).reshape(shape)

    def _step_inputs(self, row: Row) -> Optional[Dict[str, np.ndarray]]:
        if self._inputs_index is None:
            index = self._read_rows("inputs/index", _WRITTEN_INPUTS, required=False)
            self._inputs_index = index if index is not None else np.zeros(0)
        found: Dict[str, np.ndarray] = {}
        kernel_step = None
        for entry in self._inputs_index:
            if (int(entry["step"]) != row.step or int(entry["layer"]) != row.layer
                    or int(entry["mode"]) != int(row.record["mode"])):
                continue
            if row.stage not in _text(entry["outputs"]).split(","):
                continue
            # One candidate step produced the stage; the rows of any other are not its inputs.
            if kernel_step is None:
                kernel_step = _text(entry["kernel_step"])
            elif _text(entry["kernel_step"]) != kernel_step:
                continue
            rank = int(entry["rank"])
            if not 0 <= rank <= _MAX_RANK or (entry["shape"][:rank] < 0).any():
                raise TraceError(f"{self.path}: /inputs/index: input {_text(entry['name'])} of "
                                 f"{kernel_step} has a bad rank or shape: corrupt trace")
            shape = tuple(int(d) for d in entry["shape"][:rank])
            found[_text(entry["name"])] = self._slice("inputs/data", int(entry["offset"]), shape, row)
        return found or None

    def __repr__(self) -> str:
        model = self.run.get("model_spec") or self.run.get("model", {}).get("name", "?")
        candidate = self.run.get("candidate", {}).get("name", "?")
        state = self.verdict if self.finished else "INCOMPLETE (no result stored)"
        return f"<Trace {self.path}: {model} vs {candidate}, {len(self.rows)} rows, {state}>"
