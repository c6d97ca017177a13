// Per-rank reads of Hugging Face weights (trainer/src/hf_weights.h, docs/hf-checkpoints.md "Which
// rank reads what"): a slice read straight from the mapped file equals the full read's slice,
// bit for bit, for every rank of TP groups of 2 and 4 along every dimension, in bf16, fp16 and
// fp32 on disk; the full read equals the tensors written (converted by LibTorch's own .to()); the
// bytes counted are exactly the slice's; a slice outside its tensor is refused.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "grpo/hf/hf_export.h"
#include "grpo/hf/safetensors_header.h"
#include "hf_weights.h"

namespace grpo::trainer {
namespace {

namespace fs = std::filesystem;

// A tensor every rank holds whole (one rank: no stage, no owner, no slices).
Placement whole_tensor(const std::string& name, std::vector<std::int64_t> shape) {
  Placement p;
  p.name = name;
  p.shape = std::move(shape);
  return p;
}

struct Written {
  fs::path dir;
  std::map<std::string, at::Tensor> tensors;  // as written (in their on-disk dtype)
  std::vector<Placement> expected;
  std::uint64_t data_bytes = 0;
  ~Written() { fs::remove_all(dir); }
};

core::TensorDtype disk_dtype(at::ScalarType t) {
  return t == at::kBFloat16 ? core::TensorDtype::kBF16
         : t == at::kHalf   ? core::TensorDtype::kF16
                            : core::TensorDtype::kF32;
}

// model.safetensors holding `tensors` (contiguous, packed in name order).
void write_checkpoint(Written& w) {
  std::vector<core::SafetensorsEntry> entries;
  std::string data;
  for (const auto& [name, t] : w.tensors) {
    core::SafetensorsEntry e;
    e.name = name;
    e.dtype = disk_dtype(t.scalar_type());
    e.shape = t.sizes().vec();
    e.begin = data.size();
    data.append(static_cast<const char*>(t.data_ptr()), t.numel() * t.element_size());
    e.end = data.size();
    entries.push_back(e);
    w.expected.push_back(whole_tensor(name, e.shape));
  }
  w.data_bytes = data.size();
  fs::create_directories(w.dir);
  std::ofstream out(w.dir / "model.safetensors", std::ios::binary);
  const std::string header = core::safetensors_header_bytes(entries);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
}

Written sample(const std::string& name) {
  Written w;
  w.dir = fs::temp_directory_path() / ("grpo-hf-slices-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(w.dir);
  auto gen = compat::make_cpu_generator(7);
  const auto randn = [&](std::vector<std::int64_t> shape, at::ScalarType t) {
    return at::randn(shape, gen, at::TensorOptions().dtype(at::kFloat)).to(t).contiguous();
  };
  w.tensors["embed_tokens.weight"] = randn({12, 8}, at::kBFloat16);  // rows (vocabulary)
  w.tensors["o_proj.weight"] = randn({8, 12}, at::kBFloat16);        // columns
  w.tensors["experts.w"] = randn({4, 6, 8}, at::kHalf);              // a middle dimension
  w.tensors["norm.weight"] = randn({8}, at::kFloat);                 // 1-D
  write_checkpoint(w);
  return w;
}

TEST(HfWeights, TheFullReadIsWhatWasWritten) {
  Written w = sample("full");
  auto full = read_hf_weights(w.dir, w.expected, core::ModelSpec{});
  ASSERT_TRUE(full.ok()) << full.error().str();
  ASSERT_EQ(full->size(), w.tensors.size());
  for (const auto& [name, t] : w.tensors) {
    const at::Tensor& got = full->at(name);
    EXPECT_EQ(got.scalar_type(), at::kFloat) << name;
    EXPECT_TRUE(at::equal(got, t.to(at::kFloat))) << name;
  }
}

TEST(HfWeights, EveryRanksSliceEqualsTheFullReadsSliceExactly) {
  Written w = sample("slices");
  auto full = read_hf_weights(w.dir, w.expected, core::ModelSpec{});
  ASSERT_TRUE(full.ok()) << full.error().str();
  int checked = 0;
  for (const auto& [name, t] : w.tensors) {
    for (std::int64_t dim = 0; dim < t.dim(); ++dim) {
      for (const std::int64_t size : {2, 4}) {
        if (t.size(dim) % size != 0) continue;
        const std::int64_t len = t.size(dim) / size;
        for (std::int64_t r = 0; r < size; ++r) {
          HfParts parts;
          parts[name] = TpSlice{static_cast<int>(dim), r * len, len};
          HfReadStats stats;
          auto got = read_hf_parts(w.dir, w.expected, parts, core::ModelSpec{}, &stats);
          ASSERT_TRUE(got.ok()) << got.error().str();
          ASSERT_EQ(got->size(), 1u);
          const at::Tensor want = full->at(name).narrow(dim, r * len, len);
          EXPECT_TRUE(at::equal(got->at(name), want))
              << name << " dim " << dim << " rank " << r << " of " << size;
          // Exactly the slice's bytes were copied out of the map.
          EXPECT_EQ(stats.bytes_read, static_cast<std::uint64_t>(want.numel() * t.element_size()));
          EXPECT_EQ(stats.bytes_total, w.data_bytes);
          ++checked;
        }
      }
    }
  }
  // embed 12x8: dim0 2+4, dim1 2+4; o_proj 8x12: 6+6; experts 4x6x8: dim0 6, dim1 2, dim2 6;
  // norm 8: 6.
  EXPECT_EQ(checked, 12 + 12 + 14 + 6);
}

TEST(HfWeights, OnlyTheTensorsAskedForAreRead) {
  Written w = sample("subset");
  HfParts parts;
  parts["norm.weight"] = std::nullopt;
  parts["experts.w"] = TpSlice{0, 1, 2};
  HfReadStats stats;
  auto got = read_hf_parts(w.dir, w.expected, parts, core::ModelSpec{}, &stats);
  ASSERT_TRUE(got.ok()) << got.error().str();
  EXPECT_EQ(got->size(), 2u);
  EXPECT_TRUE(
      at::equal(got->at("experts.w"), w.tensors["experts.w"].narrow(0, 1, 2).to(at::kFloat)));
  EXPECT_EQ(stats.bytes_read, 8u * 4 + 2u * 6 * 8 * 2);
}

TEST(HfWeights, ASliceOutsideItsTensorIsRefused) {
  Written w = sample("outside");
  HfParts parts;
  parts["o_proj.weight"] = TpSlice{1, 8, 6};  // columns 8..13 of 12
  auto got = read_hf_parts(w.dir, w.expected, parts, core::ModelSpec{});
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().kind, core::ErrorKind::kInvalidValue);
  EXPECT_NE(got.error().message.find("outside o_proj.weight [8, 12]"), std::string::npos)
      << got.error().message;
  // A missing tensor fails every rank alike, also one that does not read it.
  std::vector<Placement> more = w.expected;
  more.push_back(whole_tensor("lm_head.weight", {12, 8}));
  auto missing =
      read_hf_parts(w.dir, more, HfParts{{"norm.weight", std::nullopt}}, core::ModelSpec{});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("lacks tensor lm_head.weight"), std::string::npos);
}

}  // namespace
}  // namespace grpo::trainer
