// The Python process a `py:FILE.py` candidate runs in (python/driftscope/_host.py): started under
// the lifeline (it dies with the harness), its requests on its fd 3 and its answers on its fd 4,
// so that nothing the candidate prints reaches the messages. Which Python: DRIFTSCOPE_PYTHON
// (`--python` sets it), else `python3` on PATH; the SDK's directory (DRIFTSCOPE_PYTHON_SDK, which
// the driftscope program sets to its own) goes first on the process's PYTHONPATH.
#pragma once

#include <string>
#include <sys/types.h>

#include "wire.h"

namespace ds::python {

// DRIFTSCOPE_PYTHON, else "python3".
std::string interpreter();

class PythonProcess {
 public:
  // Starts `python -m driftscope._host MODE FILE [NAME]`. Throws std::runtime_error when the
  // interpreter or the SDK cannot be found.
  PythonProcess(const std::string& mode, const std::string& file, const std::string& name);
  ~PythonProcess();
  PythonProcess(const PythonProcess&) = delete;
  PythonProcess& operator=(const PythonProcess&) = delete;

  bool send(const std::string& msg);
  // One answer, or false (the process died, closed its end, or `deadline` passed: `*timed_out`).
  bool recv(std::string& msg, wire::Deadline deadline, bool* timed_out);
  // Why the last recv() got nothing: how the process ended (it is ended and reaped first).
  std::string why_silent(bool timed_out, double timeout_s);
  bool alive();

 private:
  pid_t pid_ = -1;
  int to_ = -1, from_ = -1;
  bool reaped_ = false;
  int status_ = 0;
};

// A probe's answer, its two-byte tag checked: `ok` returns the rest, `bd` (not a usable candidate
// file) throws PluginError, `ex` (the candidate's code raised) and anything else CandidateCrash.
std::string probe(const std::string& mode, const std::string& file, const std::string& name,
                  const std::string& request, const std::string& what);

}  // namespace ds::python
