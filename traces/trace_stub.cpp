#include "trace_stub.h"

#include <fmt/format.h>

#include "trace_writer.h"

namespace ds::trace {

nlohmann::json stopped_result(const StoppedRun& stop) {
  const std::string first_line = stop.reason.substr(0, stop.reason.find('\n'));
  const char* label = stop.status == kStatusRefused       ? "REFUSED"
                      : stop.status == kStatusWriteFailed ? "INCOMPLETE: the trace write failed"
                      : stop.status == kStatusSkipped     ? "SKIPPED"
                                                          : "BAD-INPUT";
  nlohmann::json res = {
      {"status", stop.status},
      {"exit_code", stop.exit_code},
      // A gate's report already begins "REFUSED by ...": not twice.
      {"verdict", first_line.rfind(label, 0) == 0 ? first_line : fmt::format("{}: {}", label, first_line)},
      {"reason", stop.reason},
      {"tokens", nlohmann::json::array()}};
  if (!stop.required_ops.empty())
    res["ops"] = {
        {"required", stop.required_ops}, {"supported", stop.supported_ops}, {"missing", stop.missing_ops}};
  return res;
}

void write_stopped_trace(const std::string& path, const nlohmann::json& root_attrs, const nlohmann::json& run,
                         const StoppedRun& stop) {
  // The ordinary writer: the stub has every dataset a reader expects, each of them empty.
  TraceWriter w(path, root_attrs, run);
  w.finish(stopped_result(stop));
}

}  // namespace ds::trace
