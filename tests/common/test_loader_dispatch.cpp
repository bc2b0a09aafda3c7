// load_model(spec): synthetic names, real files by bare name, format detection, and the
// error for something that is none of them.
#include <gtest/gtest.h>

#include <filesystem>

#include "common/error.h"
#include "common/loaders/gguf_writer.h"
#include "common/loaders/hf_loader.h"
#include "common/loaders/llama2c_loader.h"
#include "common/loaders/model_loader.h"
#include "loader_test_files.h"
#include "test_support.h"

namespace nanoserve {
namespace {

using testing::expect_load_error;

TEST(ModelLoader, SyntheticSpecNeedsNoFile) {
  std::string path = "unchanged";
  EXPECT_EQ(detect_model_format("synthetic:tiny", &path), ModelFormat::kSynthetic);
  EXPECT_TRUE(path.empty());
  const Model m = load_model("synthetic:tiny", 9);
  EXPECT_EQ(m.config.name, "synthetic:tiny");
  EXPECT_EQ(m.layers[0].wq, make_synthetic_model("synthetic:tiny", 9).layers[0].wq);
  EXPECT_THROW(load_model("synthetic:nope"), InvalidArgument);
}

TEST(ModelLoader, FindsEachRealFormatByBareName) {
  NANOSERVE_REQUIRE_DATA(bin, "stories260K.bin");
  NANOSERVE_REQUIRE_DATA(gguf, "stories260K.gguf");
  NANOSERVE_REQUIRE_DATA(hf, "tinystories-656k");
  std::string path;
  EXPECT_EQ(detect_model_format("stories260K.bin", &path), ModelFormat::kLlama2c);
  EXPECT_EQ(path, bin);
  EXPECT_EQ(detect_model_format("stories260K.gguf", &path), ModelFormat::kGguf);
  EXPECT_EQ(detect_model_format("tinystories-656k", &path), ModelFormat::kHuggingFace);
  EXPECT_EQ(detect_model_format(hf + "/model.safetensors", &path), ModelFormat::kHuggingFace);
  EXPECT_EQ(path, hf) << "a checkpoint file stands for its directory";
  const Model from_bin = load_model("stories260K.bin");
  const Model from_gguf = load_model("stories260K.gguf");
  const Model from_hf = load_model("tinystories-656k");
  EXPECT_TRUE(from_bin.config.tied_classifier);
  EXPECT_EQ(from_gguf.config.max_seq_len, 2048);
  EXPECT_EQ(from_hf.config.rope_style, RopeStyle::kRotateHalf);
  for (const Model* m : {&from_bin, &from_gguf, &from_hf}) EXPECT_NO_THROW(m->validate());
}

TEST(ModelLoader, DetectsFormatsByContentNotByExtension) {
  // A GGUF file named .bin and a llama2.c file named .gguf: the magic decides.
  const Model m = testing::micro_model(true);
  const std::string gguf = testing::write_temp_file("actually_gguf.bin", save_gguf(m, 0));
  const std::string bin = testing::write_temp_file("actually_llama2c.gguf", save_llama2c(m));
  EXPECT_EQ(detect_model_format(gguf, nullptr), ModelFormat::kGguf);
  EXPECT_EQ(detect_model_format(bin, nullptr), ModelFormat::kLlama2c);
  testing::expect_same_weights(load_model(gguf), m);
  testing::expect_same_weights(load_model(bin), m);
}

TEST(ModelLoader, UnknownSpecListsWhereItLooked) {
  const std::string msg = expect_load_error([] { load_model("no-such-model.bin"); },
                                            "no-such-model.bin", "path", "no such file");
  EXPECT_NE(msg.find("as given"), std::string::npos) << msg;
  EXPECT_NE(msg.find("synthetic:tiny"), std::string::npos) << msg;
}

TEST(ModelLoader, AFileOfNoKnownFormatSaysItWasReadAsLlama2c) {
  const std::string text = "hello, this is not a model at all\n";
  const std::string path =
      testing::write_temp_file("notes.txt", std::vector<uint8_t>(text.begin(), text.end()));
  const std::string msg = expect_load_error([&] { load_model(path); }, path, "header.n_heads");
  EXPECT_NE(msg.find("no GGUF magic"), std::string::npos) << msg;
  EXPECT_NE(msg.find("llama2.c"), std::string::npos) << msg;
}

TEST(ModelLoader, DirectoryWithoutCheckpointNamesTheMissingFile) {
  const std::string dir = ::nanoserve::testing::temp_dir() + "not_a_model_dir";
  std::filesystem::create_directories(dir);
  EXPECT_EQ(detect_model_format(dir, nullptr), ModelFormat::kHuggingFace);
  expect_load_error([&] { load_model(dir); }, dir + "/config.json", "file");
}

}  // namespace
}  // namespace nanoserve
