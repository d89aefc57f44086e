#include "batch_spec.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <set>

#include "prompt.h"
#include "runner.h"
#include "user_file.h"

namespace ds {

namespace {

// The most sequences one batch may hold: past any engine's batch, and each costs a reference.
constexpr int kMaxSeqs = 256;

int parse_count(std::string_view text, std::string_view what) {
  int v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size())
    throw InputError(fmt::format("{}: '{}' is not a whole number", what, text));
  return v;
}

void check_spec(const BatchSpec& b) {
  if (b.seqs.empty()) throw InputError(fmt::format("{}: a batch needs at least one sequence", b.source));
  if (int(b.seqs.size()) > kMaxSeqs)
    throw InputError(fmt::format("{}: {} sequences, more than the {} a batch may hold", b.source,
                                 b.seqs.size(), kMaxSeqs));
  std::set<int> slots;
  for (std::size_t i = 0; i < b.seqs.size(); ++i) {
    const SeqSpec& q = b.seqs[i];
    const auto bad = [&](std::string_view field, int v, std::string_view want) {
      return InputError(fmt::format("{}: sequence {}: {} {} ({})", b.source, i, field, v, want));
    };
    if (q.prompt_tokens < 1)
      throw bad("prompt", q.prompt_tokens, "a sequence needs at least one prompt token");
    if (q.decode_steps < 0) throw bad("decode", q.decode_steps, "must be 0 or more");
    if (q.start < 0) throw bad("start", q.start, "must be 0 or more");
    if (q.slot < 0) throw bad("slot", q.slot, "must be 0 or more");
    if (q.join < 0) throw bad("join", q.join, "must be 0 or more");
    if (!slots.insert(q.slot).second)
      throw bad("slot", q.slot, "another sequence already holds it: each sequence has a slot of its own");
  }
  // Every model step needs a sequence in the batch: a join past the moment the batch emptied
  // would run steps of nobody.
  for (int step = 0; step <= b.steps(); ++step)
    if (std::none_of(b.seqs.begin(), b.seqs.end(), [&](const SeqSpec& q) { return q.active(step); })) {
      // The sequence joining first after the gap (one exists: steps() ends at a sequence's last).
      std::size_t next = b.seqs.size();
      for (std::size_t i = 0; i < b.seqs.size(); ++i)
        if (b.seqs[i].join > step && (next == b.seqs.size() || b.seqs[i].join < b.seqs[next].join)) next = i;
      throw InputError(
          fmt::format("{}: sequence {}: join {} (no sequence is in the batch at step {}: a "
                      "sequence joins a running batch)",
                      b.source, next, b.seqs[next].join, step));
    }
  b.slot_plan();  // a waiting sequence's slot must stay unwritten until it joins
}

}  // namespace

int BatchSpec::steps() const {
  int n = 0;
  for (const SeqSpec& q : seqs) n = std::max(n, q.join + q.decode_steps);
  return n;
}

int BatchSpec::max_positions() const {
  int n = 0;
  for (const SeqSpec& q : seqs) n = std::max(n, q.start + q.prompt_tokens + q.decode_steps);
  return n;
}

std::vector<SlotMove> BatchSpec::slot_plan() const {
  std::vector<int> last(seqs.size());  // the slot each sequence's state was last written to
  for (std::size_t i = 0; i < seqs.size(); ++i) last[i] = seqs[i].start > 0 ? seqs[i].slot : -1;
  std::vector<SlotMove> plan;
  for (int step = 0; step <= steps(); ++step) {
    const std::size_t first = plan.size();
    std::map<int, int> read_by;  // slot -> the sequence reading it this step
    for (std::size_t i = 0; i < seqs.size(); ++i) {
      if (!seqs[i].active(step)) continue;
      const SlotMove m{step, int(i), last[i], int(plan.size() - first)};
      // Unreachable while no call writes a waiting sequence's slot (below); kept as the invariant.
      if (m.from >= 0 && !read_by.emplace(m.from, m.seq).second)
        throw InputError(fmt::format(
            "{}: sequence {}: slot {} (when it joins at step {}, sequence {}'s state is in that slot)",
            source, i, seqs[i].slot, step, read_by.at(m.from)));
      plan.push_back(m);
    }
    for (std::size_t k = first; k < plan.size(); ++k) last[std::size_t(plan[k].seq)] = plan[k].to;
    // A sequence still to join keeps its prefix's state in its slot: no call may write it before.
    for (std::size_t i = 0; i < seqs.size(); ++i)
      for (std::size_t k = first; k < plan.size(); ++k)
        if (seqs[i].start > 0 && seqs[i].join > step && plan[k].to == seqs[i].slot)
          throw InputError(
              fmt::format("{}: sequence {}: slot {} (step {} writes sequence {}'s state there "
                          "before it joins at step {})",
                          source, i, seqs[i].slot, step, plan[k].seq, seqs[i].join));
  }
  return plan;
}

nlohmann::json BatchSpec::json() const {
  nlohmann::json seq_list = nlohmann::json::array();
  for (std::size_t i = 0; i < seqs.size(); ++i)
    seq_list.push_back({{"seq", i},
                        {"prompt_tokens", seqs[i].prompt_tokens},
                        {"decode_steps", seqs[i].decode_steps},
                        {"start", seqs[i].start},
                        {"slot", seqs[i].slot},
                        {"join", seqs[i].join}});
  nlohmann::json moves = nlohmann::json::array();
  for (const SlotMove& m : slot_plan())
    moves.push_back({{"step", m.step},
                     {"seq", m.seq},
                     {"from_slot", m.from < 0 ? nlohmann::json(nullptr) : nlohmann::json(m.from)},
                     {"to_slot", m.to},
                     {"kind", m.kind()}});
  return {{"source", source}, {"sequences", seq_list}, {"slots", moves}};
}

BatchSpec batch_from_flags(int n, const std::string& prompts, int prompt_tokens, int decode_steps) {
  BatchSpec b;
  b.source = fmt::format("--batch {}", n);
  if (n < 1) throw InputError(fmt::format("--batch {}: a batch needs at least one sequence", n));
  if (n > kMaxSeqs)
    throw InputError(fmt::format("--batch {}: more than the {} sequences a batch may hold", n, kMaxSeqs));
  std::vector<int> lengths;
  if (!prompts.empty()) {
    std::string_view rest = prompts;
    while (true) {
      const std::size_t comma = rest.find(',');
      lengths.push_back(parse_count(rest.substr(0, comma), "--batch-prompts"));
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
    if (int(lengths.size()) != n)
      throw InputError(fmt::format("--batch-prompts {}: {} lengths for --batch {}: give one per sequence",
                                   prompts, lengths.size(), n));
  }
  for (int i = 0; i < n; ++i) {
    SeqSpec q;
    q.prompt_tokens = lengths.empty() ? prompt_tokens : lengths[std::size_t(i)];
    q.decode_steps = decode_steps;
    q.slot = i;
    b.seqs.push_back(q);
  }
  check_spec(b);
  return b;
}

BatchSpec batch_from_file(const std::string& path) {
  BatchSpec b;
  b.source = path;
  const std::string text = read_user_text<InputError>(path, kMaxConfigFileBytes, "batch file");
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw InputError(fmt::format("{}: not YAML: {}", path, e.what()));
  }
  const YAML::Node seqs = root.IsMap() ? root["sequences"] : YAML::Node();
  if (!seqs || !seqs.IsSequence())
    throw InputError(fmt::format("{}: expected a map with a list 'sequences' (docs/batches.md)", path));
  int index = 0;
  for (const YAML::Node& n : seqs) {
    const auto where = [&](std::string_view field) {
      return fmt::format("{}: sequence {}: {}", path, index, field);
    };
    if (!n.IsMap()) throw InputError(fmt::format("{}: sequence {}: expected a map", path, index));
    for (const auto& kv : n) {
      const std::string key = kv.first.as<std::string>("");
      if (key != "prompt" && key != "tokens" && key != "decode" && key != "start" && key != "slot" &&
          key != "join")
        throw InputError(fmt::format("{}: unknown field '{}' (prompt, tokens, decode, start, slot, join)",
                                     where(key), key));
    }
    const auto integer = [&](const char* field, int fallback) {
      const YAML::Node v = n[field];
      if (!v) return fallback;
      try {
        return v.as<int>();
      } catch (const YAML::Exception&) {
        throw InputError(fmt::format("{}: expected a whole number", where(field)));
      }
    };
    SeqSpec q;
    if (const YAML::Node t = n["tokens"]) {
      if (n["prompt"]) throw InputError(fmt::format("{}: give prompt or tokens, not both", where("tokens")));
      try {
        q.tokens = t.as<std::vector<int>>();
      } catch (const YAML::Exception&) {
        throw InputError(fmt::format("{}: expected a list of token ids", where("tokens")));
      }
      q.prompt_tokens = int(q.tokens.size());
    } else {
      if (!n["prompt"]) throw InputError(fmt::format("{}: missing (its prompt's length)", where("prompt")));
      q.prompt_tokens = integer("prompt", 0);
    }
    q.decode_steps = integer("decode", 0);
    q.start = integer("start", 0);
    q.slot = integer("slot", index);
    q.join = integer("join", 0);
    b.seqs.push_back(std::move(q));
    ++index;
  }
  check_spec(b);
  return b;
}

BatchSpec parse_batch_arg(const std::string& arg, const std::string& prompts, int prompt_tokens,
                          int decode_steps) {
  const bool count =
      !arg.empty() && std::all_of(arg.begin(), arg.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (count) return batch_from_flags(parse_count(arg, "--batch"), prompts, prompt_tokens, decode_steps);
  if (!prompts.empty())
    throw InputError(fmt::format("--batch-prompts: goes with --batch N; the file {} gives each prompt", arg));
  return batch_from_file(arg);
}

}  // namespace ds
