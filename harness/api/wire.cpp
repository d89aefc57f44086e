#include "wire.h"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "candidate.h"
#include "lifeline.h"
#include "sandbox.h"

namespace ds::wire {

namespace {

struct Pipe {
  int fd;
  bool write_all(const void* p, std::size_t n) {
    const char* c = static_cast<const char*>(p);
    while (n) {
      const ssize_t w = ::write(fd, c, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return false;
      c += w;
      n -= std::size_t(w);
    }
    return true;
  }
  const std::function<bool()>* alive = nullptr;
  bool read_all(void* p, std::size_t n, Deadline deadline, bool* timed_out) {
    char* c = static_cast<char*>(p);
    while (n) {
      int wait_ms = -1;
      if (deadline.time_since_epoch().count() != 0) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
          if (timed_out) *timed_out = true;
          return false;
        }
        wait_ms = int(left.count());
      }
      const bool watching = alive && *alive;
      if (watching && (wait_ms < 0 || wait_ms > 100)) wait_ms = 100;
      pollfd pfd{fd, POLLIN, 0};
      const int pr = ::poll(&pfd, 1, wait_ms);
      if (pr < 0 && errno == EINTR) continue;
      if (pr == 0) {
        if (watching) {
          if (!(*alive)()) return false;
          continue;  // the deadline, if any, is checked at the top
        }
        if (timed_out) *timed_out = true;
        return false;
      }
      const ssize_t r = ::read(fd, c, n);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return false;
      c += r;
      n -= std::size_t(r);
    }
    return true;
  }
};

// How much of a message is read (and allocated) at a time.
constexpr std::uint64_t kChunk = std::uint64_t(1) << 24;

}  // namespace

Deadline deadline_in(double seconds) {
  if (seconds <= 0) return {};
  return std::chrono::steady_clock::now() + std::chrono::milliseconds(std::int64_t(seconds * 1000));
}

bool send_msg(int fd, const std::string& msg) {
  Pipe p{fd};
  const std::uint64_t n = msg.size();
  return p.write_all(&n, sizeof n) && p.write_all(msg.data(), msg.size());
}

bool recv_msg(int fd, std::string& msg, Deadline deadline, bool* timed_out, std::uint64_t max_bytes,
              std::uint64_t* too_long, const std::function<bool()>& alive) {
  Pipe p{fd};
  p.alive = &alive;
  std::uint64_t n = 0;
  msg.clear();
  if (!p.read_all(&n, sizeof n, deadline, timed_out)) return false;
  if (n > std::min(max_bytes, kMaxMessage)) {
    if (too_long) *too_long = n;
    return false;
  }
  while (msg.size() < n) {
    const std::size_t have = msg.size(), more = std::size_t(std::min(n - have, kChunk));
    msg.resize(have + more);
    if (!p.read_all(msg.data() + have, more, deadline, timed_out)) return false;
  }
  return true;
}

void put_u64(std::string& buf, std::uint64_t v) { buf.append(reinterpret_cast<const char*>(&v), sizeof v); }

void put_str(std::string& buf, const std::string& s) {
  put_u64(buf, s.size());
  buf += s;
}

void put_tensor(std::string& buf, const Tensor& t) {
  put_u64(buf, std::uint64_t(t.dtype()));
  put_u64(buf, t.shape().size());
  for (auto d : t.shape()) put_u64(buf, std::uint64_t(d));
  put_u64(buf, t.nbytes());
  buf.append(reinterpret_cast<const char*>(t.raw()), t.nbytes());
}

void put_launches(std::string& buf, const std::vector<LaunchRecord>& launches) {
  put_u64(buf, launches.size());
  for (const LaunchRecord& l : launches) {
    put_str(buf, l.kernel);
    put_str(buf, l.backend);
    for (std::uint32_t v : l.grid) put_u64(buf, v);
    for (std::uint32_t v : l.block) put_u64(buf, v);
    put_u64(buf, l.dyn_smem_bytes);
    put_u64(buf, std::bit_cast<std::uint64_t>(l.duration_us));
    put_u64(buf, l.emulated ? 1 : 0);
    put_str(buf, l.race);
    put_u64(buf, l.uninit.size());
    for (const std::string& m : l.uninit) put_str(buf, m);
    put_u64(buf, l.local_sites.size());
    for (const std::string& m : l.local_sites) put_str(buf, m);
    put_u64(buf, l.memory.size());
    for (const std::string& m : l.memory) put_str(buf, m);
    put_u64(buf, l.unchecked_by_memcheck ? 1 : 0);
  }
}

void put_live_allocations(std::string& buf, const std::vector<LiveAllocation>& live) {
  put_u64(buf, live.size());
  for (const LiveAllocation& a : live) {
    put_str(buf, a.kernel_step);
    put_str(buf, a.site);
    put_u64(buf, a.blocks);
    put_u64(buf, a.bytes);
  }
}

void put_seqs(std::string& buf, const std::vector<SeqSpan>& seqs) {
  put_u64(buf, seqs.size());
  for (const SeqSpan& q : seqs)
    for (int v : {q.seq, q.row0, q.n_tokens, q.pos0, q.cache_row0, int(q.fresh), q.state_slot})
      put_u64(buf, std::uint64_t(std::int64_t(v)));
}

std::string step_request(const KernelStep& step, const StepContext& ctx, const TensorMap& inputs) {
  std::string msg;
  put_str(msg, step.name);
  put_u64(msg, step.inputs.size());
  for (const auto& s : step.inputs) put_str(msg, s);
  put_u64(msg, step.outputs.size());
  for (const auto& s : step.outputs) put_str(msg, s);
  for (int v : {ctx.step, ctx.layer, ctx.pos0, ctx.n_tokens}) put_u64(msg, std::uint64_t(std::int64_t(v)));
  put_seqs(msg, ctx.seqs);
  put_u64(msg, inputs.size());
  for (const auto& [name, t] : inputs) {
    put_str(msg, name);
    put_tensor(msg, t);
  }
  return msg;
}

std::uint64_t max_step_output_elems(const ModelConfig& c, const StepContext& ctx) {
  // No stage is wider per token than the widest of these (fused rows included), and no
  // per-sequence value (a recurrent or conv state) larger than the GDN state plus the conv state;
  // a batched call's states hold one per sequence.
  const std::int64_t widths[] = {c.vocab, c.hidden, std::int64_t(c.q_dim()) * 2 + 2 * c.kv_dim(),
                                 2 * std::int64_t(c.ffn),
                                 std::int64_t(c.gdn_conv_dim()) + 2 * c.gdn_value_dim() + 2 * c.gdn_v_heads};
  const std::int64_t row = *std::max_element(std::begin(widths), std::end(widths));
  const std::int64_t state = std::int64_t(c.gdn_v_heads) * c.gdn_k_dim * c.gdn_v_dim +
                             std::int64_t(c.conv_kernel) * c.gdn_conv_dim();
  const std::int64_t positions = std::max(1, ctx.pos0 + ctx.n_tokens);
  const std::int64_t seqs = std::max<std::int64_t>(1, std::int64_t(ctx.seqs.size()));
  return std::uint64_t(positions * row + seqs * state);
}

std::vector<SeqSpan> read_seqs(Reader& r) {
  constexpr std::size_t kFields = 7;
  const std::uint64_t n = r.u64();
  if (n > (r.buf.size() - r.at) / (kFields * sizeof(std::uint64_t)))
    throw Malformed(fmt::format("{} sequences in {} bytes", n, r.buf.size() - r.at));
  std::vector<SeqSpan> seqs(n);
  for (SeqSpan& q : seqs) {
    for (int* v : {&q.seq, &q.row0, &q.n_tokens, &q.pos0, &q.cache_row0}) *v = int(std::int64_t(r.u64()));
    q.fresh = r.u64() != 0;
    q.state_slot = int(std::int64_t(r.u64()));
  }
  return seqs;
}

std::vector<LaunchRecord> Reader::launches() {
  std::vector<LaunchRecord> out;
  for (auto n = u64(); n--;) {
    LaunchRecord& l = out.emplace_back();
    l.kernel = str();
    l.backend = str();
    for (std::uint32_t& v : l.grid) v = std::uint32_t(u64());
    for (std::uint32_t& v : l.block) v = std::uint32_t(u64());
    l.dyn_smem_bytes = u64();
    l.duration_us = std::bit_cast<double>(u64());
    l.emulated = u64() != 0;
    l.race = str();
    for (std::uint64_t n = u64(); n--;) l.uninit.push_back(str());
    for (std::uint64_t n = u64(); n--;) l.local_sites.push_back(str());
    for (std::uint64_t n = u64(); n--;) l.memory.push_back(str());
    l.unchecked_by_memcheck = u64() != 0;
  }
  return out;
}

std::vector<LiveAllocation> Reader::live_allocations() {
  std::vector<LiveAllocation> out;
  for (auto n = u64(); n--;) {
    LiveAllocation& a = out.emplace_back();
    a.kernel_step = str();
    a.site = str();
    a.blocks = u64();
    a.bytes = u64();
  }
  return out;
}

std::uint64_t Reader::u64() {
  std::uint64_t v;
  if (at + sizeof v > buf.size()) throw Malformed("a truncated message");
  std::memcpy(&v, buf.data() + at, sizeof v);
  at += sizeof v;
  return v;
}

std::string Reader::str() {
  const auto n = u64();
  if (n > buf.size() - at)
    throw Malformed(fmt::format("a string of {} bytes where {} are left", n, buf.size() - at));
  std::string s = buf.substr(at, n);
  at += n;
  return s;
}

Tensor Reader::tensor(std::uint64_t max_elems) {
  const auto dtype = u64();
  const auto rank = u64();
  if (dtype > std::uint64_t(DType::i32)) throw Malformed(fmt::format("a tensor of unknown dtype {}", dtype));
  if (rank > 8) throw Malformed(fmt::format("a tensor of rank {}", rank));
  Shape shape(rank);
  std::uint64_t elems = 1;
  for (auto& d : shape) {
    const std::uint64_t raw = u64();
    d = std::int64_t(raw);
    if (d < 0) throw Malformed(fmt::format("a tensor with a negative dimension {}", d));
    if (d > 0 && elems > max_elems / std::uint64_t(d))
      throw Malformed(
          fmt::format("a tensor of more than {} elements (the most this step can produce)", max_elems));
    elems *= std::uint64_t(d);
  }
  const auto n = u64();
  // An empty Tensor (a "prev:<stage>" input before the first step) has no shape and no bytes;
  // Tensor(dtype, {}) would be a one-element scalar.
  if (shape.empty() && n == 0) return Tensor{};
  if (n != elems * dtype_size(DType(dtype)))
    throw Malformed(fmt::format("a tensor of shape {} and dtype {} carrying {} bytes", shape_str(shape),
                                dtype_name(DType(dtype)), n));
  if (n > buf.size() - at)
    throw Malformed(fmt::format("a tensor of {} bytes where {} are left", n, buf.size() - at));
  Tensor t(DType(dtype), shape);
  std::memcpy(t.raw(), buf.data() + at, n);
  at += n;
  return t;
}

StepReply read_step_reply(const std::string& reply, const std::vector<std::string>& declared,
                          std::uint64_t max_elems) {
  StepReply out;
  Reader r{reply};
  const std::string tag = reply.substr(0, 2);
  r.at = 2;
  if (tag == "ex") {
    out.threw = true;
    out.error = r.str();
    return out;
  }
  if (tag != "ok") throw Malformed("a reply that is neither a result nor an error");
  const std::uint64_t n = r.u64();
  if (n > declared.size())
    throw Malformed(fmt::format("{} outputs where the step declares {}", n, declared.size()));
  for (std::uint64_t i = 0; i < n; ++i) {
    std::string name = r.str();
    if (std::find(declared.begin(), declared.end(), name) == declared.end())
      throw Malformed(fmt::format("an output '{}' the step does not declare", name));
    out.outputs[name] = r.tensor(max_elems);
  }
  out.launches = r.launches();
  if (r.at != reply.size()) out.live = r.live_allocations();
  if (r.at != reply.size()) throw Malformed(fmt::format("{} bytes after the reply", reply.size() - r.at));
  return out;
}

void throw_if_sandbox_blocked(const std::string& step) {
  const std::string call = sandbox::blocked_call();
  if (call.empty()) return;
  sandbox::clear();
  throw CandidateCrash(step,
                       fmt::format("the sandbox blocked {}: a candidate under the sandbox may not start "
                                   "programs, open network sockets or write outside its temp dir "
                                   "(docs/sandbox.md)",
                                   call));
}

std::string run_forked(const std::string& step, double timeout_s, const std::function<std::string()>& fn) {
  int up[2];
  if (::pipe(up) != 0) throw std::runtime_error("cannot create a pipe for a child process");
  std::fflush(nullptr);
  const pid_t pid = lifeline::fork_supervised();
  if (pid < 0) throw std::runtime_error("cannot fork a child process");
  if (pid == 0) {
    ::close(up[0]);
    sandbox::enter_child();  // a probe runs the candidate's code (a plugin's constructors, say)
    std::string reply;
    try {
      reply = "ok" + fn();
    } catch (const std::exception& e) {
      reply = "ex" + std::string(e.what());
    } catch (...) {
      reply = "ex(an exception that is not a std::exception)";
    }
    send_msg(up[1], reply);
    ::_exit(0);
  }
  ::close(up[1]);
  std::string reply;
  bool timed_out = false;
  const bool got = recv_msg(up[0], reply, deadline_in(timeout_s), &timed_out);
  ::close(up[0]);
  // Whatever it forked goes with it: nothing it started may outlive the answer.
  const int status = lifeline::end_supervised(pid);
  throw_if_sandbox_blocked(step);
  if (!got)
    throw CandidateCrash(
        step, timed_out ? fmt::format("hung: no answer within {} s", timeout_s)
              : WIFSIGNALED(status)
                  ? fmt::format("killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)))
                  : fmt::format("exited with status {} without an answer", WEXITSTATUS(status)));
  if (reply.rfind("ex", 0) == 0) throw CandidateCrash(step, fmt::format("threw: {}", reply.substr(2)));
  return reply.substr(2);
}

}  // namespace ds::wire
