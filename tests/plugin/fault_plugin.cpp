// One plugin, one candidate per fault a user's kernel can commit against the harness
// (tests/plugin/test_plugin_faults.py runs each as PATH.so:fault-NAME). Each candidate is the
// same partial RMSNorm (attn_norm of decoder blocks, the rest filled by the reference) with one
// thing wrong, in load(), plan() or run() of layer 1's step:
//   segv / hang / throw          in load, plan or run
//   reply-*                      the candidate process answers the step with bytes of its own on
//                                the reply pipe: an unknown dtype, a negative or oversized shape,
//                                a length prefix of 2^39, random bytes
//   nan                          a NaN in its output (a judged failure, not a crash)
//   exit0                        the process exits with status 0 mid-run
//   fork-crash                   forks a helper that holds stdout open, then segfaults
//   load-spin                    forks a helper into a session of its own, then both spin at a
//                                full core, in load(), forever
//   shell / socket / write       what a sandbox stops (tests/cli/test_sandbox.py): system() touching
//                                $DS_FAULT_PID_FILE.shell, a TCP socket, and writing
//                                $DS_FAULT_PID_FILE.written; each carries on as if it had worked
// fork-crash writes its helper's pid to $DS_FAULT_PID_FILE, load-spin its own pid and its
// helper's, so the test can see they ended.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "plugin.h"

namespace {

enum class When { load, plan, run };

[[noreturn]] void hang() {
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}

// The write end of the pipe the harness reads this process's replies from: the one FIFO beyond
// stdin/stdout/stderr opened for writing.
int reply_fd() {
  for (int fd = 3; fd < 256; ++fd) {
    struct stat st;
    if (::fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode)) continue;
    if ((::fcntl(fd, F_GETFL) & O_ACCMODE) == O_WRONLY) return fd;
  }
  return -1;
}

void put(std::string& b, std::uint64_t v) { b.append(reinterpret_cast<const char*>(&v), sizeof v); }

// Writes `payload` behind the length `claimed` on the reply pipe, then waits to be killed: the
// harness must take none of it.
[[noreturn]] void send_raw(std::uint64_t claimed, const std::string& payload) {
  const int fd = reply_fd();
  if (fd < 0) std::abort();
  std::string msg;
  put(msg, claimed);
  msg += payload;
  if (::write(fd, msg.data(), msg.size()) < 0) std::abort();
  hang();
}

[[noreturn]] void send_raw_reply(const std::string& payload) { send_raw(payload.size(), payload); }

// "ok", one output named attn_norm: dtype, rank, dims, byte count, then `data_bytes` zero bytes.
std::string reply_with(std::uint64_t dtype, std::vector<std::int64_t> dims, std::uint64_t nbytes,
                       std::size_t data_bytes) {
  std::string b = "ok";
  put(b, 1);
  put(b, 9);
  b += "attn_norm";
  put(b, dtype);
  put(b, dims.size());
  for (std::int64_t d : dims) put(b, std::uint64_t(d));
  put(b, nbytes);
  b.append(data_bytes, '\0');
  put(b, 0);  // no launch records
  return b;
}

class Fault final : public ds::Candidate {
 public:
  Fault(std::string name, std::string fault, When when)
      : name_(std::move(name)), fault_(std::move(fault)), when_(when) {}
  std::string name() const override { return name_; }
  std::string description() const override { return "test plugin: RMSNorm with a fault: " + fault_; }
  ds::DType storage_dtype() const override { return ds::DType::f16; }
  ds::OpSet capabilities() const override { return {ds::Op::RMSNorm}; }
  std::vector<ds::KernelStep> plan(const ds::ModelConfig&, ds::BlockKind kind) const override {
    if (when_ == When::plan) commit();
    if (kind != ds::BlockKind::decoder) return {};
    return {{"rmsnorm", {"x"}, {"attn_norm"}}};
  }
  void load(const ds::ModelConfig& cfg, const ds::WeightStore& weights) override {
    if (when_ == When::load) commit();
    cfg_ = cfg;
    for (int l = 0; l < cfg.n_layers; ++l) w_.push_back(weights.layer(l, "attn_norm.weight"));
  }
  void run(const ds::KernelStep&, const ds::StepContext& ctx, const ds::TensorMap& inputs,
           ds::TensorMap& outputs) override {
    const int T = ctx.n_tokens, C = cfg_.hidden;
    if (when_ == When::run && ctx.layer == 1) {
      const std::int64_t n = std::int64_t(T) * C;
      if (fault_ == "reply-bad-dtype")
        send_raw_reply(reply_with(77, {T, C}, std::uint64_t(n) * 2, std::size_t(n) * 2));
      if (fault_ == "reply-negative-shape") send_raw_reply(reply_with(2, {-5, C}, 0, 0));
      // Larger than any stage of this model, and the bytes it claims never sent.
      if (fault_ == "reply-huge-shape") send_raw_reply(reply_with(2, {T, std::int64_t(1) << 40}, 0, 0));
      if (fault_ == "reply-length-2e39") send_raw(std::uint64_t(1) << 39, "ok");
      if (fault_ == "reply-random-bytes") {
        std::mt19937_64 rng(7);
        std::string junk(4096, '\0');
        for (char& c : junk) c = char(rng());
        send_raw(junk.size(), junk);
      }
      if (fault_ != "nan") commit();
    }
    const ds::Tensor& x = inputs.at("x");
    ds::Tensor y(ds::DType::f16, {T, C});
    for (int t = 0; t < T; ++t) {
      double ss = 0;
      for (int c = 0; c < C; ++c) ss += x.at(std::int64_t(t) * C + c) * x.at(std::int64_t(t) * C + c);
      const double inv = 1.0 / std::sqrt(ss / C + cfg_.norm_eps);
      for (int c = 0; c < C; ++c)
        y.set(std::int64_t(t) * C + c,
              x.at(std::int64_t(t) * C + c) * inv * w_[std::size_t(ctx.layer)].at(c));
    }
    if (fault_ == "nan" && ctx.layer == 1) y.set(3, std::nan(""));
    outputs["attn_norm"] = std::move(y);
  }

 private:
  void commit() const {
    if (fault_ == "spin") spin_with_helper();
    if (fault_ == "segv") std::raise(SIGSEGV);
    if (fault_ == "hang") hang();
    if (fault_ == "throw") throw std::runtime_error("the fault plugin throws on purpose");
    if (fault_ == "exit0") ::_exit(0);
    const char* at = std::getenv("DS_FAULT_PID_FILE");
    const std::string base = at ? at : "/tmp/driftscope-fault";
    if (fault_ == "shell") (void)!std::system(("touch " + base + ".shell").c_str());
    if (fault_ == "socket") {
      const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      if (fd >= 0) ::close(fd);
    }
    if (fault_ == "write") {
      if (FILE* out = std::fopen((base + ".written").c_str(), "w")) std::fclose(out);
    }
    // The other ways to change a path outside the temp dir: each named by the sandbox's listener.
    if (fault_ == "mkdir") (void)::mkdir((base + ".dir").c_str(), 0755);
    if (fault_ == "unlink") (void)::unlink(base.c_str());
    if (fault_ == "rename") (void)std::rename(base.c_str(), (base + ".renamed").c_str());
    if (fault_ == "symlink") (void)::symlink("/etc/hostname", (base + ".link").c_str());
    if (fault_ == "link") (void)::link(base.c_str(), (base + ".hard").c_str());
    if (fault_ == "mknod") (void)::mknod((base + ".fifo").c_str(), S_IFIFO | 0600, 0);
    if (fault_ == "write-tmp") {  // where TMPDIR points: the sandbox's own dir, allowed
      const char* tmp = std::getenv("TMPDIR");
      if (FILE* out = std::fopen((std::string(tmp ? tmp : "/tmp") + "/scratch.bin").c_str(), "w")) {
        std::fputs("scratch", out);
        std::fclose(out);
      }
    }
    if (fault_ == "fork-crash") {
      const pid_t helper = ::fork();
      if (helper == 0) {
        // Holds stdout and stderr, as a compiler server or a logger a plugin starts would.
        for (int i = 0; i < 600; ++i) std::this_thread::sleep_for(std::chrono::seconds(1));
        ::_exit(0);
      }
      if (const char* f = std::getenv("DS_FAULT_PID_FILE")) {
        if (FILE* out = std::fopen(f, "w")) {
          std::fprintf(out, "%d\n", int(helper));
          std::fclose(out);
        }
      }
      std::raise(SIGSEGV);
    }
  }

  // A kernel that never returns and a helper that escaped its process group, both at a full core:
  // what a harness killed meanwhile must not leave running.
  [[noreturn]] static void spin_with_helper() {
    const pid_t helper = ::fork();
    if (helper == 0) ::setsid();
    if (helper != 0) {
      if (const char* f = std::getenv("DS_FAULT_PID_FILE")) {
        const std::string tmp = std::string(f) + ".tmp";
        if (FILE* out = std::fopen(tmp.c_str(), "w")) {
          std::fprintf(out, "%d %d\n", int(::getpid()), int(helper));
          std::fclose(out);
          std::rename(tmp.c_str(), f);  // the test never reads half of it
        }
      }
    }
    for (;;) __asm__ volatile("");  // a full core, never optimised away
  }

  std::string name_, fault_;
  When when_;
  ds::ModelConfig cfg_;
  std::vector<ds::Tensor> w_;
};

template <When when>
ds::Candidate* make(const char* name, const char* fault) {
  return new Fault(name, fault, when);
}

}  // namespace

DRIFTSCOPE_PLUGIN(
    "faults-1.0", {"fault-load-segv", [] { return make<When::load>("fault-load-segv", "segv"); }},
    {"fault-load-hang", [] { return make<When::load>("fault-load-hang", "hang"); }},
    {"fault-load-throw", [] { return make<When::load>("fault-load-throw", "throw"); }},
    {"fault-plan-segv", [] { return make<When::plan>("fault-plan-segv", "segv"); }},
    {"fault-plan-hang", [] { return make<When::plan>("fault-plan-hang", "hang"); }},
    {"fault-plan-throw", [] { return make<When::plan>("fault-plan-throw", "throw"); }},
    {"fault-run-segv", [] { return make<When::run>("fault-run-segv", "segv"); }},
    {"fault-run-hang", [] { return make<When::run>("fault-run-hang", "hang"); }},
    {"fault-run-throw", [] { return make<When::run>("fault-run-throw", "throw"); }},
    {"fault-reply-bad-dtype", [] { return make<When::run>("fault-reply-bad-dtype", "reply-bad-dtype"); }},
    {"fault-reply-negative-shape",
     [] { return make<When::run>("fault-reply-negative-shape", "reply-negative-shape"); }},
    {"fault-reply-huge-shape", [] { return make<When::run>("fault-reply-huge-shape", "reply-huge-shape"); }},
    {"fault-reply-length-2e39",
     [] { return make<When::run>("fault-reply-length-2e39", "reply-length-2e39"); }},
    {"fault-reply-random-bytes",
     [] { return make<When::run>("fault-reply-random-bytes", "reply-random-bytes"); }},
    {"fault-nan", [] { return make<When::run>("fault-nan", "nan"); }},
    {"fault-exit0", [] { return make<When::run>("fault-exit0", "exit0"); }},
    {"fault-fork-crash", [] { return make<When::run>("fault-fork-crash", "fork-crash"); }},
    {"fault-load-spin", [] { return make<When::load>("fault-load-spin", "spin"); }},
    {"fault-run-shell", [] { return make<When::run>("fault-run-shell", "shell"); }},
    {"fault-run-socket", [] { return make<When::run>("fault-run-socket", "socket"); }},
    {"fault-run-write", [] { return make<When::run>("fault-run-write", "write"); }},
    {"fault-run-write-tmp", [] { return make<When::run>("fault-run-write-tmp", "write-tmp"); }},
    {"fault-run-mkdir", [] { return make<When::run>("fault-run-mkdir", "mkdir"); }},
    {"fault-run-unlink", [] { return make<When::run>("fault-run-unlink", "unlink"); }},
    {"fault-run-rename", [] { return make<When::run>("fault-run-rename", "rename"); }},
    {"fault-run-symlink", [] { return make<When::run>("fault-run-symlink", "symlink"); }},
    {"fault-run-link", [] { return make<When::run>("fault-run-link", "link"); }},
    {"fault-run-mknod", [] { return make<When::run>("fault-run-mknod", "mknod"); }},
    {"fault-load-shell", [] { return make<When::load>("fault-load-shell", "shell"); }})
