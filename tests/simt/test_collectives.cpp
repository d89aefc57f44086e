// Every warp collective against an independent model of the PTX shfl.sync /
// vote.sync rules, written from the CUDA programming guide's description
// (segments of `width` lanes, out-of-range sources read their own value,
// xor may reach earlier segments but not later ones).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <array>
#include <cstring>
#include <vector>

#include "test_kernels.h"
#include "test_support.h"

namespace simt_test {
namespace {

constexpr unsigned kPoison = 0xffffffffu;

int model_source(CollOp op, int lane, int b, int width) {
  const int seg_first = lane - lane % width;
  const int seg_last = seg_first + width - 1;
  const int d = b & 31;  // the instruction only sees the low five bits
  switch (op) {
    case CollOp::shfl_idx: return seg_first + d % width;
    case CollOp::shfl_up: return lane - d >= seg_first ? lane - d : lane;
    case CollOp::shfl_down: return lane + d <= seg_last ? lane + d : lane;
    case CollOp::shfl_xor: return (lane ^ d) <= seg_last ? (lane ^ d) : lane;
    default: return lane;
  }
}

const std::vector<unsigned>& masks() {
  static const std::vector<unsigned> m = {0xffffffffu, 0x0000ffffu, 0xffff0000u, 0x55555555u, 0xaaaaaaaau,
                                          0x0f0f0f0fu, 0x00000001u, 0x80000000u, 0x7fffffffu, 0xfffffffeu,
                                          0x000000ffu, 0xff00ff00u, 0x12345678u};
  return m;
}

const std::array<simt::Order, 3> kOrders = {simt::Order::forward, simt::Order::reverse, simt::Order::random};

struct ShflParam {
  CollOp op;
  int width;
};
void PrintTo(const ShflParam& p, std::ostream* os) {
  static const char* names[] = {"idx", "up", "down", "xor"};
  *os << names[static_cast<int>(p.op)] << " width " << p.width;
}

class ShuffleTable : public ::testing::TestWithParam<ShflParam> {};

TEST_P(ShuffleTable, MatchesPtxModel) {
  const auto [op, width] = GetParam();
  std::vector<unsigned> vals(32);
  for (unsigned i = 0; i < 32; ++i) vals[i] = 1000u + i * 7u;
  simt::DeviceBuffer<unsigned> d_vals(vals);
  simt::DeviceBuffer<int> d_preds(32);
  const std::vector<int> b_values = {0, 1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 31, 33, 40};
  int checked = 0;
  int rejected = 0;
  for (simt::Order order : kOrders) {
    simt::Config cfg;
    cfg.order = order;
    cfg.seed = 11;
    simt::ScopedConfig scoped(cfg);
    for (unsigned mask : masks()) {
      for (int b : b_values) {
        SCOPED_TRACE(
            fmt::format("mask {:#010x} b {} width {} order {}", mask, b, width, static_cast<int>(order)));
        std::vector<unsigned> expect(32, kPoison);
        bool undefined = false;
        for (int lane = 0; lane < 32; ++lane) {
          if (((mask >> lane) & 1u) == 0) continue;
          const int src = model_source(op, lane, b, width);
          if (((mask >> src) & 1u) == 0) undefined = true;
          expect[lane] = vals[src];
        }
        simt::DeviceBuffer<unsigned> d_out(32);
        if (undefined) {
          EXPECT_THROW(collective(op, mask, b, width, d_vals.data(), d_preds.data(), d_out.data()),
                       simt::KernelError);
          ++rejected;
          continue;
        }
        collective(op, mask, b, width, d_vals.data(), d_preds.data(), d_out.data());
        ASSERT_EQ(d_out.to_host(), expect);
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 0);
  (void)rejected;
}

std::vector<ShflParam> shfl_params() {
  std::vector<ShflParam> p;
  for (CollOp op : {CollOp::shfl_idx, CollOp::shfl_up, CollOp::shfl_down, CollOp::shfl_xor}) {
    for (int w : {1, 2, 4, 8, 16, 32}) p.push_back({op, w});
  }
  return p;
}

std::string shfl_name(const ::testing::TestParamInfo<ShflParam>& info) {
  static const char* names[] = {"idx", "up", "down", "xor"};
  return fmt::format("{}_w{}", names[static_cast<int>(info.param.op)], info.param.width);
}

INSTANTIATE_TEST_SUITE_P(AllWidths, ShuffleTable, ::testing::ValuesIn(shfl_params()), shfl_name);

TEST(VoteTable, BallotAnyAllMatchModel) {
  std::vector<std::vector<int>> pred_sets;
  pred_sets.emplace_back(32, 1);
  pred_sets.emplace_back(32, 0);
  std::vector<int> alt(32), sparse(32, 0), dense(32, 1);
  for (int i = 0; i < 32; ++i) alt[i] = i % 2;
  sparse[5] = 7;  // any non-zero counts as true
  dense[30] = 0;
  pred_sets.push_back(alt);
  pred_sets.push_back(sparse);
  pred_sets.push_back(dense);
  simt::DeviceBuffer<unsigned> d_vals(32);
  for (simt::Order order : kOrders) {
    simt::Config cfg;
    cfg.order = order;
    cfg.seed = 5;
    simt::ScopedConfig scoped(cfg);
    for (const auto& preds : pred_sets) {
      simt::DeviceBuffer<int> d_preds(preds);
      for (unsigned mask : masks()) {
        unsigned ballot = 0;
        for (int l = 0; l < 32; ++l) {
          if (((mask >> l) & 1u) && preds[l] != 0) ballot |= 1u << l;
        }
        for (CollOp op : {CollOp::ballot, CollOp::any, CollOp::all}) {
          SCOPED_TRACE(fmt::format("op {} mask {:#010x}", static_cast<int>(op), mask));
          const unsigned r = op == CollOp::ballot ? ballot
                             : op == CollOp::any  ? (ballot != 0)
                                                  : (ballot == mask);
          std::vector<unsigned> expect(32, kPoison);
          for (int l = 0; l < 32; ++l) {
            if ((mask >> l) & 1u) expect[l] = r;
          }
          simt::DeviceBuffer<unsigned> d_out(32);
          collective(op, mask, 0, 32, d_vals.data(), d_preds.data(), d_out.data());
          ASSERT_EQ(d_out.to_host(), expect);
        }
      }
    }
  }
}

TEST(ShuffleTypes, OneToSixteenBytes) {
  simt::DeviceBuffer<unsigned> d_out(32 * 4);
  shuffle_types(d_out.data());
  const auto out = d_out.to_host();
  for (int lane = 0; lane < 32; ++lane) {
    SCOPED_TRACE(lane);
    EXPECT_EQ(out[lane * 4 + 0], static_cast<unsigned>('A' + (lane ^ 5)));
    const int seg_last = lane - lane % 8 + 7;
    const int src = lane + 3 <= seg_last ? lane + 3 : lane;
    const double d = 1.0 + src * 0.25;
    unsigned long long bits;
    std::memcpy(&bits, &d, sizeof bits);
    EXPECT_EQ(out[lane * 4 + 1], static_cast<unsigned>(bits));
    EXPECT_EQ(out[lane * 4 + 2], static_cast<unsigned>(bits >> 32));
    EXPECT_EQ(out[lane * 4 + 3], static_cast<unsigned>(31 - lane) * 10u);
  }
}

}  // namespace
}  // namespace simt_test
