#pragma once
/// \file
/// \brief Every named tolerance the tests use, each with the reason for its size
/// (docs/design.md, "Numbers and precision"). Add new ones here, never inline in a test.

#include "common/allclose.h"

namespace nanoserve::tol {

/// \brief Two fp32 computations of the same formula in a different summation order
/// (e.g. Eigen's blocked GEMV vs a naive loop) over dot products of length <= ~10^4:
/// rounding error grows like sqrt(n) * 2^-24 relative to the magnitudes summed.
inline constexpr Tolerance kFp32Reorder{1e-5, 1e-4};

/// \brief An fp32 implementation against an fp64 reference of the same op.
inline constexpr Tolerance kFp32VsFp64{1e-6, 1e-5};

/// \brief Logits of a whole fp32 forward pass computed two ways (e.g. cached vs uncached
/// attention): errors of many reordered sums pile up through the layers, but stay far below
/// the gap between the top two logits that greedy decoding depends on.
inline constexpr Tolerance kFp32Forward{1e-4, 1e-3};

/// \brief Logits of an fp32 forward pass under tensor parallelism (chapter 9,
/// engine/model/tensor_parallel_group.h) against the whole model on one device. The ranks
/// multiply exactly the same weights, but a row-parallel linear (Wo, W2) cuts each dot product
/// of length K into N partial sums of K/N terms, and the all-reduce adds them — and the residual
/// — in the communication library's order: ((x + p_0) + p_1) + … instead of x + (one sum of K
/// terms). Each reordering moves an output by about sqrt(K) · 2^-24 of the magnitudes summed,
/// as in kFp32Reorder, and 2L of them pile up through the layers like kFp32Forward's reordered
/// sums. (The embedding all-reduce adds zeros and the logits all-gather copies: both exact.)
/// Measured over 8 greedy steps (tests/ch09/mpi/test_tensor_parallel_mpi.cpp prints it):
/// max |Δlogit| 2.5e-5 on stories260K at TP 2 and 1.7e-5 at TP 4 (logits up to ~20), 1.4e-6 on
/// synthetic:tiny, 7e-7 on a multi-query shape. kFp32Forward's bound (1e-4 + 1e-3·|logit|) is
/// 4× the worst of these where logits are near 0 and ~100× at stories260K's scale, while a
/// residual added on every rank instead of once moved logits by up to 32 (tried: the tests
/// fail). At N = 1 the logits are bitwise equal (tested).
inline constexpr Tolerance kTensorParallelFp32 = kFp32Forward;

/// \brief RoPE'd values against an fp64 rotation: the oracle (like llama2.c and Hugging Face)
/// forms the angle `pos * freq` in fp32, so at position p it is off by up to ~p * 2^-24 rad —
/// about 3e-5 at p = 500 for unit-size values; 1e-4 covers positions up to ~1000.
inline constexpr Tolerance kRopeFp32Angle{1e-4, 1e-4};

/// \brief A linear kernel (GEMV, GEMM) against oracle::gemv / oracle::matmul run on the same
/// dequantized weights: both multiply exactly the same fp32 numbers, only the order in which
/// the K products of a dot product are added differs (warp butterflies, tiles, FMA contraction
/// on a GPU). Tests draw W ~ U(-1, 1)/sqrt(K) and x ~ U(-1, 1), so outputs and partial sums are
/// O(1) and a reordered sum moves by about sqrt(K) * 2^-24 — ~2e-6 for K ~ 2000; the
/// tolerance leaves a margin of ~10 while a single dropped or doubled product
/// (~|w x| ~ 0.3/sqrt(K) > 6e-3) still fails it by orders of magnitude.
inline constexpr Tolerance kFp32DotReorder{2e-5, 1e-5};
/// \brief A tensor-core GEMM (kernels/gemm_tc.h) writing fp16 against oracle::matmul on the
/// same rounded inputs. The products of two fp16 (or bf16) values are exact in fp32 and the sum
/// is fp32, so before the output conversion only the order of the additions differs
/// (kFp32DotReorder); the conversion then rounds once, to within half an fp16 ulp: a relative
/// error of at most 2^-11 ≈ 4.9e-4 (fp16 subnormals, below 6.1e-5, round by at most 2^-25 in
/// absolute terms, inside atol). rtol 5e-4 is that bound plus the reorder term; a dropped or
/// doubled product (relative size ~1e-2 at K ~ 1000 with the tests' scaling) still fails it by
/// ~20×.
inline constexpr Tolerance kGemmOutFp16{2e-5, 5e-4};

/// \brief As kGemmOutFp16 with bf16 output: one rounding to 8 significant bits, a relative
/// error of at most 2^-8 ≈ 3.9e-3; rtol 4e-3. A dropped product (~1e-2 relative at K ~ 1000,
/// more at the tests' smaller K) still fails it.
inline constexpr Tolerance kGemmOutBf16{2e-5, 4e-3};

/// \brief A CUDA kernel against its oracle op on the same inputs (storage-type values converted
/// to fp32 for the oracle, so only the arithmetic differs). Both compute in fp32, but a kernel
/// sums in another order (warp/block trees, tiles, online-softmax rescaling) and a GPU's math
/// functions are not the host libm: `__expf` is off by up to 2 + 1.16·|x| ulp (~1e-6 relative
/// for the exponents attention sees), `sinf`/`cosf` by 2 ulp, and nvcc contracts `a*b + c`
/// into FMAs. Results are O(1) (normalised rows, convex combinations of V), so these errors stay
/// near 1e-6; the reduction-order bound of kFp32Reorder covers them.
inline constexpr Tolerance kKernelVsOracle{1e-5, 1e-4};

/// \brief Logits of the kernel forward with weight-only quantized linears (W8A16 / W4A16) and
/// fp32 everything else against the oracle run on the dequantized weights
/// (engine::quantized_oracle_model). A dequantized weight s·(q − z) is exact in fp32 (an 11-bit
/// fp16 scale times an integer of at most 9 bits), so both sides multiply identical numbers and
/// only the summation order differs — the situation of kFp32Forward, whose size it keeps.
/// A wrong code, nibble order, group or g_idx lookup moves a logit by O(0.1–1) and fails by
/// orders of magnitude.
inline constexpr Tolerance kQuantizedKernelForward = kFp32Forward;

/// \brief Device sampling probabilities (fp32 softmax of logits / temperature over up to ~10^5
/// tokens) against the host sampler's fp64 ones: each probability carries the fp32 rounding of
/// its exponent and of the sum (~sqrt(vocab)·2^-24 relative, ~2e-5 at vocab 32000); values
/// below 1e-6 are noise no sampler decision depends on.
inline constexpr Tolerance kDeviceSamplingProbs{1e-6, 1e-4};

/// \brief The device sampler's log-probability of the sampled token (log-softmax in fp64,
/// stored in fp32) against the host's fp64 `token_logprob`: the fp32 store rounds by at most
/// 2^-24 ≈ 6e-8 relative, the fp64 sums (another order) and a GPU's fp64 exp/log add ~1e-15;
/// 1e-6 leaves a margin of 16 while a logprob taken at the wrong token or without the max shift
/// is off by O(0.01–10).
inline constexpr Tolerance kDeviceSamplingLogprob{1e-6, 1e-6};

/// \brief Logits of the kernel forward with fp16 weights and an fp16 KV cache against the oracle
/// run on the same fp16-rounded weights (engine::round_weights), or two kernel paths (no-cache,
/// naive-cache) against each other. The weights are identical, so the difference comes from
/// the cache: every key and value is rounded to 11 significant bits (relative error up to
/// 2^-12 ≈ 2.4e-4), attention mixes those errors into every later layer, and the classifier
/// carries them to the logits at about the storage precision times the logits' scale. Measured
/// over a dozen greedy steps: max |Δlogit| ≈ 0.01 on stories260K (logits up to ~22, i.e.
/// ≈ 4.5e-4 × max|logit|), 9e-4 on synthetic:tiny (logits up to ~3.4), 7e-3 on
/// TinyStories-656K (up to ~14). atol 0.05 leaves a margin of ~5 at the largest scale, while
/// a real bug (a wrong position, head or layer) moves logits by O(1) and fails by ~20×.
inline constexpr Tolerance kKernelForwardFp16{5e-2, 5e-3};

/// \brief As kKernelForwardFp16 with a bf16 cache: 8 significant bits (relative rounding error
/// up to 2^-9 ≈ 2e-3, 8× fp16's). Measured: max |Δlogit| ≈ 0.086 on stories260K (≈ 3.9e-3 ×
/// max|logit|) and 6e-3 on synthetic:tiny. atol 0.3 keeps a margin of ~3.5 at the largest
/// scale and is still far below the O(1) shift of a real bug.
inline constexpr Tolerance kKernelForwardBf16{3e-1, 2e-2};

/// \brief A kernel that stores its result in fp16 activations against the oracle's fp32 result
/// on the same (rounded) inputs. The kernel computes in fp32 and rounds once on store: at most
/// half an ulp, i.e. 2^-11 ≈ 4.9e-4 of the value (an 11-bit significand), plus the reordered-sum
/// error of kKernelVsOracle (1e-5 absolute, ~1e-5 relative). rtol 5.1e-4 is that bound with
/// 4% to spare — a store that truncates instead (up to a whole ulp, 2^-10) or rounds twice
/// breaks it on about half of the elements; atol 1e-5 covers values near zero (fp16's
/// subnormal spacing is 6e-8).
inline constexpr Tolerance kKernelStoreFp16{1e-5, 5.1e-4};

/// \brief As kKernelStoreFp16 for bf16 activations: 8 significant bits, so one rounding is at
/// most 2^-8 ≈ 3.9e-3 of the value; rtol 4.0e-3 is that bound with 2.5% to spare, and a
/// truncating (up to 2^-7) store fails it.
inline constexpr Tolerance kKernelStoreBf16{1e-5, 4.0e-3};

/// \brief Tensor-core flash attention (prefill v03, fp16 q, K, V and out) against
/// oracle::attention on the same rounded q, K, V. Two roundings the oracle does not make:
/// (1) the softmax numerators P enter the PV product rounded to fp16 (relative error δ_j,
/// |δ_j| <= u = 2^-11); the row sum l adds the same rounded P, so the output is still a convex
/// combination of the V rows, with weights w_j (1 + δ_j) / (1 + Σ_i w_i δ_i), and moves by at
/// most 2u / (1 - u) · max|v| ≈ 9.8e-4 for the tests' |v| <= 1 (P below 2^-24 also rounds to
/// 0 or a subnormal: at most 2^-25 per key, ~1e-5 over the tests' <= 300 keys); (2) the output
/// is rounded once to fp16, 2^-11 ≈ 4.9e-4 relative. atol 1.2e-3 is (1) plus kKernelVsOracle's
/// 1e-5 with ~15% to spare, rtol 6e-4 is (2) plus kKernelVsOracle's 1e-4. A key let through the
/// causal mask at a tile edge moves an output of a row with n <= 65 keys by ~|v_j - o| / n ≳ 5e-3
/// and fails.
inline constexpr Tolerance kFlashAttentionFp16{1.2e-3, 6e-4};

/// \brief As kFlashAttentionFp16 with bf16 (u = 2^-8): (1) 2u / (1 - u) ≈ 7.9e-3, (2) 3.9e-3
/// relative; atol 9e-3 (~13% to spare), rtol 4.1e-3. The mask-edge tests use rows of <= 33
/// keys, where a wrongly admitted key (~|v_j - o| / n ≳ 1.5e-2) still fails.
inline constexpr Tolerance kFlashAttentionBf16{9e-3, 4.1e-3};

/// \brief Logits of the whole kernel forward with fp16 weights, fp16 activations and an fp16
/// KV cache against the oracle run on the same fp16-rounded weights (engine::round_weights),
/// which keeps every activation in fp32. Every kernel output between two kernels is now
/// rounded to 11 bits (relative error up to 2^-11), the residual stream included — a residual
/// add rounds the sum, so over L layers the stream carries ~2L roundings — and the classifier
/// spreads the last rounding of xn over the logits at about 2^-11 × sqrt(dim) × max|w| ×
/// max|xn|. Measured (test_runner_activation_dtype prints it): max |Δlogit| 0.018 on
/// stories260K over 12 greedy steps (logits up to ~20), 0.0036 on synthetic:tiny, 0.079 with a
/// bf16 cache under fp16 activations, 0.0165 on TinyStories-656K (logits up to ~18; head_dim 16,
/// so its prompt runs prefill v03 on the tensor cores, with P rounded to fp16). atol 0.08
/// (rtol 1e-2) keeps a margin of ~4 for fp16 throughout and stays far below the O(1) shift of
/// a real bug (a wrong position, head, layer or a missing rounding
/// of the wrong kind does not hide in it: the kernel tests check the rounding itself).
inline constexpr Tolerance kKernelForwardActFp16{8e-2, 1e-2};

/// \brief As kKernelForwardActFp16 with bf16 weights, activations and KV: 8 significant bits,
/// 8× fp16's rounding per step. Measured: max |Δlogit| 0.133 on stories260K, 0.032 on
/// synthetic:tiny, 0.111 on TinyStories-656K (prefill v03); atol 0.6 (rtol 5e-2) keeps a
/// margin of ~4.5, still below the O(1) shift of a real bug.
inline constexpr Tolerance kKernelForwardActBf16{6e-1, 5e-2};

/// \brief Next-token probabilities of the oracle against llama.cpp (tests/peer/) on an fp32
/// GGUF with an F32 KV cache: both compute in fp32 and differ only in summation order.
/// Measured on stories260K over 16 greedy steps: max |Δp| = 2.0e-6; atol 1e-4 leaves a margin
/// of 50 while a wrong token, position or RoPE moves probabilities by O(0.1).
inline constexpr Tolerance kPeerLlamaCppFp32Probs{1e-4, 0.0};

/// \brief As kPeerLlamaCppFp32Probs on llama.cpp-quantized weights: nanoserve multiplies the
/// dequantized fp32 weights, llama.cpp the quantized ones with activations quantized to 8 bits
/// (its vec_dot kernels), so logits differ by that rounding. Measured on the synthetic files of
/// tests/data/gguf_llama_cpp (probabilities ~1/512 to ~0.05): max |Δp| 3e-4 (Q8_0) to 1e-3
/// (Q5_K_M). atol 2e-3 is a loose check: the exact one is the bitwise dequantization test.
inline constexpr Tolerance kPeerLlamaCppQuantizedProbs{2e-3, 0.0};

/// \brief As kPeerLlamaCppQuantizedProbs on a *trained* model converted to Q8_0 by
/// `nanoserve convert` (tests/peer/): the same 8-bit activation rounding in llama.cpp (and fp16
/// activations for the F16 fallback tensors), but a trained model's peaked distributions turn
/// it into larger probability differences. Measured over 16 greedy steps, every token equal:
/// max |Δp| 6.7e-3 (stories260K), 2.2e-2 (TinyStories-656K); the files of `nanoserve quantize`
/// (TinyStories-656K, GPTQ int4 as Q4_0 and RTN int8 as Q8_0): 1.5e-2 and 1.3e-2. atol 5e-2
/// still catches a wrong layout (a wrong permutation or RoPE moves the top probability by
/// O(0.5)).
inline constexpr Tolerance kPeerLlamaCppConvertedQ8Probs{5e-2, 0.0};

/// \brief Logits of nanoserve in fp32 (the oracle, and the kernels on a GPU) against Hugging
/// Face transformers in fp32 on the same checkpoint (scripts/hf_logits_check.py, on the GPU
/// machine; the small random checkpoints of common/loaders/synthetic_hf.h). Both multiply the
/// same bf16-exact weights in fp32 — transformers with TF32 off and eager attention — and form
/// the RoPE angle pos · inv_freq in fp32 the same way, so they differ as two fp32 forwards with
/// other summation orders and a GPU's exp/rsqrt/sin/cos do: kFp32Forward's situation, whose
/// size it keeps. Not yet measured (no GPU run so far); a wrong RoPE band, bias, norm gain or
/// head_dim moves logits by O(0.1–1) and fails by orders of magnitude. The script reads this
/// value from this file.
inline constexpr Tolerance kPeerTransformersFp32Logits = kFp32Forward;

}  // namespace nanoserve::tol
