// libFuzzer target: a candidate process's reply to one step (wire::read_step_reply), the bytes the
// least trusted code in the system sends the harness. Every input must end in a reply or a
// wire::Malformed, with nothing allocated beyond the step's declared outputs at their cap.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "wire.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::vector<std::string> declared = {"q", "k", "v"};
  // The cap a tiny model's prefill gives: a lying shape must be refused, not allocated.
  constexpr std::uint64_t kMaxElems = std::uint64_t(1) << 20;
  const std::string reply(reinterpret_cast<const char*>(data), size);
  try {
    const ds::wire::StepReply r = ds::wire::read_step_reply(reply, declared, kMaxElems);
    for (const auto& [name, t] : r.outputs)
      if (std::uint64_t(t.numel()) > kMaxElems) __builtin_trap();
  } catch (const ds::wire::Malformed&) {
  }
  return 0;
}
