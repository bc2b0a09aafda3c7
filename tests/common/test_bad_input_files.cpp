// Bad input, classes 5 and 7 of issue 19: inputs that are not regular files. Reading a model,
// tokenizer, text or trace from a FIFO with no writer blocked forever; a directory given as a
// tokenizer was reported as "size 9223372036854775807 bytes is outside …". Every reader now
// opens through InputFile: O_NONBLOCK, then fstat, and one message per kind of file.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <string>

#include "common/error.h"
#include "common/eval/documents.h"
#include "common/io/input_file.h"
#include "common/loaders/mapped_file.h"
#include "common/loaders/model_loader.h"
#include "common/tokenizer/load_tokenizer.h"
#include "loader_test_files.h"
#include "test_support.h"

namespace nanoserve {
namespace {

using testing::expect_load_error;

// A FIFO with no writer: open() without O_NONBLOCK would block on it for ever. The alarm turns
// such a hang into a failed test (SIGALRM ends the process) instead of a stuck CI job.
class BadInputFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::temp_dir() + "bad_input_files/";
    std::filesystem::create_directories(dir_);
    fifo_ = dir_ + "fifo";
    ::unlink(fifo_.c_str());
    ASSERT_EQ(::mkfifo(fifo_.c_str(), 0600), 0);
    ::alarm(10);
  }
  void TearDown() override {
    ::alarm(0);
    ::unlink(fifo_.c_str());
  }
  std::string dir_, fifo_;
};

TEST_F(BadInputFiles, AFifoIsRefusedWithoutBlocking) {
  expect_load_error([&] { InputFile(fifo_, "trace"); }, fifo_, "file",
                    "is a FIFO (named pipe), not a regular file (the trace must be one)");
  expect_load_error([&] { MappedFile(fifo_, "model file"); }, fifo_, "file", "is a FIFO");
  expect_load_error([&] { load_model(fifo_); }, fifo_, "file", "is a FIFO");
  expect_load_error([&] { load_tokenizer(fifo_, 0); }, fifo_, "file", "is a FIFO");
  expect_load_error([&] { load_tokenizer(fifo_ + ".json", 0); }, fifo_ + ".json", "file",
                    "No such file");
  expect_load_error([&] { eval::read_text_file(fifo_); }, fifo_, "file", "is a FIFO");
}

TEST_F(BadInputFiles, ADirectoryIsNamedAsADirectory) {
  // The example: a directory as the tokenizer.
  const std::string what = expect_load_error([&] { load_tokenizer(dir_, 0); }, dir_, "file",
                                             "is a directory, not a regular file");
  EXPECT_EQ(what.find("9223372036854775807"), std::string::npos) << what;
  const std::string json_dir = dir_ + "tok.json";
  std::filesystem::create_directories(json_dir);
  expect_load_error([&] { load_tokenizer(json_dir, 0); }, json_dir, "file", "is a directory");
  expect_load_error([&] { eval::read_text_file(dir_); }, dir_, "file", "is a directory");
  expect_load_error([&] { InputFile(dir_, "chat script"); }, dir_, "file",
                    "is a directory, not a regular file (the chat script must be one)");
}

TEST_F(BadInputFiles, ADeviceIsNotARegularFile) {
  expect_load_error([] { InputFile("/dev/zero", "text file"); }, "/dev/zero", "file",
                    "is a character device");
}

TEST_F(BadInputFiles, SizesAreCheckedBeforeReading) {
  const std::string path = testing::write_temp_file("eleven.txt", std::vector<uint8_t>(11, 'x'));
  EXPECT_EQ(read_input_file(path, "text", 11).size(), 11u);
  expect_load_error([&] { read_input_file(path, "text", 10); }, path, "file",
                    "11 B (11 bytes) exceeds the limit for a text of 10 B (10 bytes)");
  expect_load_error([&] { read_input_file(dir_ + "missing", "text", 10); }, dir_ + "missing",
                    "file", "cannot open the text: No such file or directory");
  EXPECT_EQ(InputFile(path, "text").read_prefix(4), "xxxx");
}

}  // namespace
}  // namespace nanoserve
