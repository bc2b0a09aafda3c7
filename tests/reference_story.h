#pragma once
/// \file
/// \brief Reference outputs of the real models' own implementations, shared by every test that
/// checks a path of this project against them (the oracle in tests/common, the kernels in
/// tests/ch01, …).

namespace nanoserve::testing {

/// \brief The story llama2.c's run.c prints for `./run stories260K.bin -z tok512.bin -t 0.0`,
/// as quoted in ../shared/data/README.md (the reference implementation's output, not ours).
/// Greedy decoding from BOS for 255 steps (run.c's default of 256 positions) must begin with it.
constexpr const char* kStories260KReferenceStoryStart =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
    "park. One day, she saw a big, red ball. She wanted to play with it, but it was too high.";

}  // namespace nanoserve::testing
