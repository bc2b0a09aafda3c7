// Bad input, classes 5 and 7 of issue 19, for chat scripts: a directory was reported as
// "no 'system:' line" (the read of a directory returned nothing), and a FIFO with no writer
// blocked for ever. Both are refused as not regular files, naming what they are.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "chapters/ch02_paged_kv_cache/chat_script.h"
#include "common/error.h"
#include "test_support.h"

namespace nanoserve::ch02 {
namespace {

std::string load_error(const std::string& path) {
  try {
    load_chat_script(path);
  } catch (const LoadError& e) {
    EXPECT_EQ(e.file(), path);
    EXPECT_EQ(e.field(), "file");
    return e.what();
  }
  return "no error";
}

TEST(Ch02BadInputChatScript, ADirectoryIsNamedAsADirectory) {
  const std::string dir = testing::temp_dir() + "chats_dir";
  std::filesystem::create_directories(dir);
  const std::string what = load_error(dir);
  EXPECT_NE(what.find("is a directory, not a regular file (the chat script must be one)"),
            std::string::npos) << what;
  EXPECT_EQ(what.find("system:"), std::string::npos) << what;
}

TEST(Ch02BadInputChatScript, AFifoIsRefusedWithoutBlocking) {
  const std::string fifo = testing::temp_dir() + "chats_fifo";
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  ::alarm(10);  // a blocking open would end the test here instead of hanging CI
  const std::string what = load_error(fifo);
  ::alarm(0);
  ::unlink(fifo.c_str());
  EXPECT_NE(what.find("is a FIFO (named pipe)"), std::string::npos) << what;
}

TEST(Ch02BadInputChatScript, AnOversizedScriptIsRefusedBeforeItIsRead) {
  const std::string path = testing::temp_dir() + "huge_chats.txt";
  { std::ofstream(path) << "system: x\n"; }
  std::filesystem::resize_file(path, kMaxChatScriptBytes + 1);  // sparse: nothing is written
  const std::string what = load_error(path);
  EXPECT_NE(what.find("exceeds the limit for a chat script of 16 MiB"), std::string::npos) << what;
}

}  // namespace
}  // namespace nanoserve::ch02
