// __half / __nv_bfloat16 arithmetic and conversions round exactly as the hardware does: each
// result is compared bit for bit with the correctly rounded exact value, computed here
// independently of the CUDA headers (values decoded from their bits, exact comparisons by
// error-free transformations in double). Unary operations and conversions run over all 65,536
// inputs; binary operations and fma over a large seeded random sample. On a GPU the same test
// checks the hardware against the same reference.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "tests/kernels/kernel_test_support.h"

namespace nanoserve {
namespace {

// Element-wise kernels: the order in which blocks run cannot change a result, so the second,
// reverse-order ctest run of the kernel tests (tests/CMakeAreas.cmake) skips these instead of
// repeating the same arithmetic.
class LowPrecisionRounding : public testing::DeviceTest {
 protected:
  void SetUp() override {
    testing::DeviceTest::SetUp();
    const char* order = std::getenv("NANOSERVE_SIM_ORDER");
    if (!NANOSERVE_REAL_CUDA && order != nullptr && std::strcmp(order, "reverse") == 0) {
      GTEST_SKIP() << "order-independent; run once, in the forward order";
    }
  }
};

// Random sample sizes: smaller under AddressSanitizer, which makes this arithmetic ~3x slower.
#if defined(NANOSERVE_ASAN)
constexpr int kArithmeticSample = 1 << 15;
constexpr int kRandomFloats = 10000;
#else
constexpr int kArithmeticSample = 1 << 17;
constexpr int kRandomFloats = 50000;
#endif

// ---- device side ----------------------------------------------------------------------------

enum Op : int {
  kAdd, kSub, kMul, kDiv, kFma, kAdd2, kMul2, kFma2, kFmaRelu, kFmaSat,  // binary / ternary
  kToFloat, kNeg, kAbs, kSqrt, kRint, kFloor, kCeil, kTrunc,            // unary on T
  kToIntRn, kToIntRz, kToIntRd, kToIntRu, kToUintRn, kToUintRz, kToUintRd, kToUintRu,
  kToShortRn, kToShortRz, kToShortRd, kToShortRu, kToUshortRn, kToUshortRz, kToUshortRd,
  kToUshortRu, kToLlRn, kToLlRz, kToLlRd, kToLlRu, kToUllRn, kToUllRz, kToUllRd, kToUllRu,
  kFromFloatRn, kFromFloatRz, kFromFloatRd, kFromFloatRu,              // float bits -> T
  kFromIntRn, kFromIntRz, kFromIntRd, kFromIntRu,                      // int -> T
  kFromUllRn, kFromUllRz, kFromUllRd, kFromUllRu,                      // 64-bit -> T
  kLt, kLe, kEq, kNe, kGe, kGt                                          // comparisons
};

template <typename T>
struct Low;
template <>
struct Low<__half> {
  using T2 = __half2;
  static __host__ __device__ __half from_bits(unsigned short b) {
    __half_raw r;
    r.x = b;
    return __half(r);
  }
  static __host__ __device__ unsigned short bits(__half h) { return __half_raw(h).x; }
  static __device__ float to_float(__half h) { return __half2float(h); }
  static __device__ __half2 pair(__half lo, __half hi) { return __halves2half2(lo, hi); }
  static __device__ __half low(__half2 v) { return __low2half(v); }
  static __device__ __half high(__half2 v) { return __high2half(v); }
  static constexpr int kMantissaBits = 10;
  static constexpr int kBias = 15;
  static constexpr unsigned short kInf = 0x7c00;
};
template <>
struct Low<__nv_bfloat16> {
  using T2 = __nv_bfloat162;
  static __host__ __device__ __nv_bfloat16 from_bits(unsigned short b) {
    __nv_bfloat16_raw r;
    r.x = b;
    return __nv_bfloat16(r);
  }
  static __host__ __device__ unsigned short bits(__nv_bfloat16 h) {
    return __nv_bfloat16_raw(h).x;
  }
  static __device__ float to_float(__nv_bfloat16 h) { return __bfloat162float(h); }
  static __device__ __nv_bfloat162 pair(__nv_bfloat16 lo, __nv_bfloat16 hi) {
    return __halves2bfloat162(lo, hi);
  }
  static __device__ __nv_bfloat16 low(__nv_bfloat162 v) { return __low2bfloat16(v); }
  static __device__ __nv_bfloat16 high(__nv_bfloat162 v) { return __high2bfloat16(v); }
  static constexpr int kMantissaBits = 7;
  static constexpr int kBias = 127;
  static constexpr unsigned short kInf = 0x7f80;
};

// One result per element: `in` holds up to three operands per element (bits, or a float/int
// input widened to 64 bits); the result is the output's bits widened to 64 bits.
template <typename T>
__device__ unsigned long long apply(int op, unsigned long long x, unsigned long long y,
                                    unsigned long long z) {
  using L = Low<T>;
  const T a = L::from_bits(static_cast<unsigned short>(x));
  const T b = L::from_bits(static_cast<unsigned short>(y));
  const T c = L::from_bits(static_cast<unsigned short>(z));
  float f;
  const unsigned xf = static_cast<unsigned>(x);
  memcpy(&f, &xf, 4);
  const int xi = static_cast<int>(static_cast<unsigned>(x));
  const auto u = [](T v) { return static_cast<unsigned long long>(Low<T>::bits(v)); };
  const auto ul = [](long long v) { return static_cast<unsigned long long>(v); };
  switch (op) {
    case kAdd: return u(__hadd(a, b));
    case kSub: return u(__hsub(a, b));
    case kMul: return u(__hmul(a, b));
    case kDiv: return u(__hdiv(a, b));
    case kFma: return u(__hfma(a, b, c));
    case kAdd2: return u(L::high(__hadd2(L::pair(c, a), L::pair(c, b))));
    case kMul2: return u(L::low(__hmul2(L::pair(a, c), L::pair(b, c))));
    case kFma2: return u(L::high(__hfma2(L::pair(b, a), L::pair(c, b), L::pair(a, c))));
    case kFmaRelu: return u(__hfma_relu(a, b, c));
    case kFmaSat: return u(__hfma_sat(a, b, c));
    case kToFloat: {
      const float r = L::to_float(a);
      unsigned rb;
      memcpy(&rb, &r, 4);
      return rb;
    }
    case kNeg: return u(__hneg(a));
    case kAbs: return u(__habs(a));
    case kSqrt: return u(hsqrt(a));
    case kRint: return u(hrint(a));
    case kFloor: return u(hfloor(a));
    case kCeil: return u(hceil(a));
    case kTrunc: return u(htrunc(a));
    default: break;
  }
  if constexpr (std::is_same<T, __half>::value) {
    switch (op) {
      case kToIntRn: return ul(__half2int_rn(a));
      case kToIntRz: return ul(__half2int_rz(a));
      case kToIntRd: return ul(__half2int_rd(a));
      case kToIntRu: return ul(__half2int_ru(a));
      case kToUintRn: return __half2uint_rn(a);
      case kToUintRz: return __half2uint_rz(a);
      case kToUintRd: return __half2uint_rd(a);
      case kToUintRu: return __half2uint_ru(a);
      case kToShortRn: return ul(__half2short_rn(a));
      case kToShortRz: return ul(__half2short_rz(a));
      case kToShortRd: return ul(__half2short_rd(a));
      case kToShortRu: return ul(__half2short_ru(a));
      case kToUshortRn: return __half2ushort_rn(a);
      case kToUshortRz: return __half2ushort_rz(a);
      case kToUshortRd: return __half2ushort_rd(a);
      case kToUshortRu: return __half2ushort_ru(a);
      case kToLlRn: return ul(__half2ll_rn(a));
      case kToLlRz: return ul(__half2ll_rz(a));
      case kToLlRd: return ul(__half2ll_rd(a));
      case kToLlRu: return ul(__half2ll_ru(a));
      case kToUllRn: return __half2ull_rn(a);
      case kToUllRz: return __half2ull_rz(a);
      case kToUllRd: return __half2ull_rd(a);
      case kToUllRu: return __half2ull_ru(a);
      case kFromFloatRn: return u(__float2half_rn(f));
      case kFromFloatRz: return u(__float2half_rz(f));
      case kFromFloatRd: return u(__float2half_rd(f));
      case kFromFloatRu: return u(__float2half_ru(f));
      case kFromIntRn: return u(__int2half_rn(xi));
      case kFromIntRz: return u(__int2half_rz(xi));
      case kFromIntRd: return u(__int2half_rd(xi));
      case kFromIntRu: return u(__int2half_ru(xi));
      case kFromUllRn: return u(__ull2half_rn(x));
      case kFromUllRz: return u(__ull2half_rz(x));
      case kFromUllRd: return u(__ull2half_rd(x));
      case kFromUllRu: return u(__ull2half_ru(x));
      default: break;
    }
  } else {
    switch (op) {
      case kToIntRn: return ul(__bfloat162int_rn(a));
      case kToIntRz: return ul(__bfloat162int_rz(a));
      case kToIntRd: return ul(__bfloat162int_rd(a));
      case kToIntRu: return ul(__bfloat162int_ru(a));
      case kToUintRn: return __bfloat162uint_rn(a);
      case kToUintRz: return __bfloat162uint_rz(a);
      case kToUintRd: return __bfloat162uint_rd(a);
      case kToUintRu: return __bfloat162uint_ru(a);
      case kToShortRn: return ul(__bfloat162short_rn(a));
      case kToShortRz: return ul(__bfloat162short_rz(a));
      case kToShortRd: return ul(__bfloat162short_rd(a));
      case kToShortRu: return ul(__bfloat162short_ru(a));
      case kToUshortRn: return __bfloat162ushort_rn(a);
      case kToUshortRz: return __bfloat162ushort_rz(a);
      case kToUshortRd: return __bfloat162ushort_rd(a);
      case kToUshortRu: return __bfloat162ushort_ru(a);
      case kToLlRn: return ul(__bfloat162ll_rn(a));
      case kToLlRz: return ul(__bfloat162ll_rz(a));
      case kToLlRd: return ul(__bfloat162ll_rd(a));
      case kToLlRu: return ul(__bfloat162ll_ru(a));
      case kToUllRn: return __bfloat162ull_rn(a);
      case kToUllRz: return __bfloat162ull_rz(a);
      case kToUllRd: return __bfloat162ull_rd(a);
      case kToUllRu: return __bfloat162ull_ru(a);
      case kFromFloatRn: return u(__float2bfloat16_rn(f));
      case kFromFloatRz: return u(__float2bfloat16_rz(f));
      case kFromFloatRd: return u(__float2bfloat16_rd(f));
      case kFromFloatRu: return u(__float2bfloat16_ru(f));
      case kFromIntRn: return u(__int2bfloat16_rn(xi));
      case kFromIntRz: return u(__int2bfloat16_rz(xi));
      case kFromIntRd: return u(__int2bfloat16_rd(xi));
      case kFromIntRu: return u(__int2bfloat16_ru(xi));
      case kFromUllRn: return u(__ull2bfloat16_rn(x));
      case kFromUllRz: return u(__ull2bfloat16_rz(x));
      case kFromUllRd: return u(__ull2bfloat16_rd(x));
      case kFromUllRu: return u(__ull2bfloat16_ru(x));
      default: break;
    }
  }
  switch (op) {
    case kLt: return __hlt(a, b);
    case kLe: return __hle(a, b);
    case kEq: return __heq(a, b);
    case kNe: return __hne(a, b);
    case kGe: return __hge(a, b);
    case kGt: return __hgt(a, b);
    default: return ~0ull;
  }
}

// in: (n, 3) operands ; out: (n,) results ; grid-stride so that the simulator runs few threads
template <typename T>
__global__ void apply_kernel(int op, const unsigned long long* in, unsigned long long* out,
                             int n) {
  const int stride = static_cast<int>(gridDim.x * blockDim.x);
  for (int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); i < n; i += stride) {
    out[i] = apply<T>(op, in[3 * i], in[3 * i + 1], in[3 * i + 2]);
  }
}

template <typename T>
std::vector<unsigned long long> run(int op, const std::vector<unsigned long long>& operands) {
  const int n = static_cast<int>(operands.size() / 3);
  const testing::DeviceBuffer<unsigned long long> in(operands);
  testing::DeviceBuffer<unsigned long long> out(static_cast<std::size_t>(n));
  launch(apply_kernel<T>, dim3(32), dim3(128), 0, nullptr, op, in.get(), out.get(), n);
  return out.to_host();
}

// ---- host reference -------------------------------------------------------------------------

enum class Mode { kRn, kRz, kRd, kRu };

// The value of a bit pattern, decoded with integer arithmetic only.
template <typename T>
double decode(unsigned short bits) {
  constexpr int mb = Low<T>::kMantissaBits;
  const int exponent = (bits & 0x7fff) >> mb;
  const int mantissa = bits & ((1 << mb) - 1);
  const int max_exponent = 0x7fff >> mb;
  double magnitude;
  if (exponent == max_exponent) {
    magnitude = mantissa == 0 ? HUGE_VAL : NAN;
  } else if (exponent == 0) {
    magnitude = std::ldexp(mantissa, 1 - Low<T>::kBias - mb);
  } else {
    magnitude = std::ldexp(mantissa + (1 << mb), exponent - Low<T>::kBias - mb);
  }
  return (bits & 0x8000) ? -magnitude : magnitude;
}

// Exact sign of a + b + c for doubles (Shewchuk's grow-expansion: the components are
// non-overlapping, so the sign of the largest non-zero one is the sign of the sum).
int sign_of_sum(double a, double b, double c) {
  const auto two_sum = [](double x, double y, double* err) {
    const double s = x + y;
    const double bv = s - x;
    *err = (x - (s - bv)) + (y - bv);
    return s;
  };
  double e0;
  const double q0 = two_sum(a, b, &e0);
  double e1;
  const double q1 = two_sum(c, e0, &e1);  // grow [e0, q0] by c
  double e2;
  const double q2 = two_sum(q1, q0, &e2);
  for (const double part : {q2, e2, e1}) {
    if (part != 0.0) return part > 0.0 ? 1 : -1;
  }
  return 0;
}

// The correctly rounded result's bits for an exact value x known through `compare(v)` =
// sign(x - v) for any double v, with `zero` the correctly signed result when x == 0.
template <typename T, typename Compare>
unsigned short reference_round(const Compare& compare, Mode mode, double zero) {
  const int sign = compare(0.0);
  if (sign == 0) return std::signbit(zero) ? 0x8000 : 0;
  const auto magnitude_compare = [&](double v) { return sign * compare(sign * v); };
  // Positive finite values are ordered like their bits: binary search the last one <= |x|.
  unsigned lo = 0;
  unsigned hi = Low<T>::kInf;  // the bits of inf stand for 2^(emax+1) in the search
  const double top = 2.0 * decode<T>(Low<T>::kInf - 1) - decode<T>(Low<T>::kInf - 2);
  const auto value = [&](unsigned bits) { return bits == Low<T>::kInf ? top : decode<T>(bits); };
  if (magnitude_compare(top) >= 0) {
    lo = Low<T>::kInf;  // beyond the format even in round-toward-zero terms
  } else {
    while (hi - lo > 1) {
      const unsigned mid = (lo + hi) / 2;
      (magnitude_compare(value(mid)) >= 0 ? lo : hi) = mid;
    }
  }
  unsigned result = lo;
  if (lo != Low<T>::kInf && magnitude_compare(value(lo)) != 0) {
    const bool magnitude_up = (mode == Mode::kRu && sign > 0) || (mode == Mode::kRd && sign < 0);
    const bool magnitude_down = mode == Mode::kRz || (mode == Mode::kRu && sign < 0) ||
                                (mode == Mode::kRd && sign > 0);
    if (magnitude_up) {
      result = hi;
    } else if (!magnitude_down) {
      const int side = magnitude_compare(0.5 * (value(lo) + value(hi)));
      result = side > 0 || (side == 0 && (hi & 1u) == 0) ? hi : lo;
    }
  } else if (lo == Low<T>::kInf && (mode == Mode::kRz || (mode == Mode::kRu && sign < 0) ||
                                    (mode == Mode::kRd && sign > 0))) {
    result = Low<T>::kInf - 1;  // directed rounding toward zero stops at the largest finite
  }
  return static_cast<unsigned short>(result | (sign < 0 ? 0x8000u : 0u));
}

template <typename T>
unsigned short round_exact(double x, Mode mode) {  // x exact in double
  return reference_round<T>([x](double v) { return x > v ? 1 : (x < v ? -1 : 0); }, mode, x);
}

bool is_nan_bits(unsigned short bits, unsigned short inf) {
  return (bits & 0x7fff) > inf;
}

// Saturating conversion to an integer type as cvt does; NaN -> 0 (2^63 for 64-bit types).
template <typename Int>
unsigned long long reference_to_int(double x, Mode mode) {
  if (std::isnan(x)) return sizeof(Int) == 8 ? 1ull << 63 : 0;
  double r = x;
  switch (mode) {
    case Mode::kRn: r = std::nearbyint(x); break;  // the host's default mode: ties to even
    case Mode::kRz: r = std::trunc(x); break;
    case Mode::kRd: r = std::floor(x); break;
    case Mode::kRu: r = std::ceil(x); break;
  }
  const long double lowest = static_cast<long double>(std::numeric_limits<Int>::lowest());
  const long double highest = static_cast<long double>(std::numeric_limits<Int>::max());
  Int v;
  if (r <= lowest) {
    v = std::numeric_limits<Int>::lowest();
  } else if (r >= highest) {
    v = std::numeric_limits<Int>::max();
  } else {
    v = static_cast<Int>(r);
  }
  return static_cast<unsigned long long>(static_cast<long long>(v));
}

constexpr Mode kModes[] = {Mode::kRn, Mode::kRz, Mode::kRd, Mode::kRu};

std::string hex(unsigned long long v) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", v);
  return text;
}

// Counts mismatches and reports the first few with the inputs.
struct Mismatches {
  int count = 0;
  std::string first;
  void add(const std::string& what) {
    if (count++ < 5) first += "\n  " + what;
  }
};

template <typename T>
std::vector<unsigned long long> all_bit_patterns() {
  std::vector<unsigned long long> in;
  for (unsigned b = 0; b < 65536; ++b) in.insert(in.end(), {b, 0, 0});
  return in;
}

template <typename T>
void check_unary_exhaustive() {
  const std::vector<unsigned long long> in = all_bit_patterns<T>();
  Mismatches bad;
  const std::vector<unsigned long long> as_float = run<T>(kToFloat, in);
  const std::vector<unsigned long long> neg = run<T>(kNeg, in);
  const std::vector<unsigned long long> abs = run<T>(kAbs, in);
  const std::vector<unsigned long long> sqrt = run<T>(kSqrt, in);
  const int integral_ops[] = {kRint, kFloor, kCeil, kTrunc};
  std::vector<std::vector<unsigned long long>> integral;
  for (const int op : integral_ops) integral.push_back(run<T>(op, in));
  for (unsigned b = 0; b < 65536; ++b) {
    const auto bits = static_cast<unsigned short>(b);
    const double x = decode<T>(bits);
    float f;
    const auto fb = static_cast<unsigned>(as_float[b]);
    std::memcpy(&f, &fb, 4);
    const bool nan = std::isnan(x);
    if (nan ? !std::isnan(f) : static_cast<double>(f) != x || std::signbit(f) != std::signbit(x)) {
      bad.add("to float " + hex(b) + " gave " + hex(fb));
    }
    if (!nan && (neg[b] != (b ^ 0x8000u) || abs[b] != (b & 0x7fffu))) {
      bad.add("neg/abs " + hex(b));
    }
    // sqrt: compare(v) = sign(sqrt(x) - v) = sign(x - v^2) for v >= 0 (v^2 exact in double).
    if (!nan && x > 0.0 && !std::isinf(x)) {
      const unsigned short want = reference_round<T>(
          [x](double v) {
            if (v <= 0.0) return 1;
            const double sq = v * v;
            return x > sq ? 1 : (x < sq ? -1 : 0);
          },
          Mode::kRn, 0.0);
      if (sqrt[b] != want) bad.add("sqrt " + hex(b) + " gave " + hex(sqrt[b]) + " want " + hex(want));
    }
    if (!nan) {
      const double exact[] = {std::nearbyint(x), std::floor(x), std::ceil(x), std::trunc(x)};
      for (int k = 0; k < 4; ++k) {
        const unsigned short want = round_exact<T>(exact[k], Mode::kRn);  // exact in the format
        if ((integral[k][b] & 0x7fff) != (want & 0x7fff) || (exact[k] != 0.0 && integral[k][b] != want)) {
          bad.add("integral op " + std::to_string(k) + " of " + hex(b) + " gave " +
                  hex(integral[k][b]));
        }
      }
    }
  }
  EXPECT_EQ(bad.count, 0) << bad.first;
}

template <typename T>
void check_to_int_exhaustive() {
  const std::vector<unsigned long long> in = all_bit_patterns<T>();
  Mismatches bad;
  int op = kToIntRn;
  for (int type = 0; type < 6; ++type) {
    for (const Mode mode : kModes) {
      const std::vector<unsigned long long> got = run<T>(op, in);
      for (unsigned b = 0; b < 65536; ++b) {
        const double x = decode<T>(static_cast<unsigned short>(b));
        unsigned long long want = 0;
        switch (type) {
          case 0: want = reference_to_int<int>(x, mode); break;
          case 1: want = reference_to_int<unsigned>(x, mode); break;
          case 2: want = reference_to_int<short>(x, mode); break;
          case 3: want = reference_to_int<unsigned short>(x, mode); break;
          case 4: want = reference_to_int<long long>(x, mode); break;
          default: want = reference_to_int<unsigned long long>(x, mode); break;
        }
        // Results travel as 64-bit patterns: compare in the destination width.
        const int width = type < 2 ? 32 : (type < 4 ? 16 : 64);
        const unsigned long long mask = width == 64 ? ~0ull : (1ull << width) - 1;
        if ((got[b] & mask) != (want & mask)) {
          bad.add("to-int op " + std::to_string(op) + " of " + hex(b) + " gave " + hex(got[b]) +
                  " want " + hex(want));
        }
      }
      ++op;
    }
  }
  EXPECT_EQ(bad.count, 0) << bad.first;
}

// float -> T in each mode: every float next to a midpoint or a value of T (the hard cases),
// the specials and a random sample.
template <typename T>
void check_from_float() {
  std::vector<float> inputs = {0.0f, -0.0f, HUGE_VALF, -HUGE_VALF, 1e-45f, -1e-45f, 3.4e38f};
  for (unsigned b = 0; b < Low<T>::kInf; ++b) {
    const double v = decode<T>(static_cast<unsigned short>(b));
    const double next = b + 1 == Low<T>::kInf
                            ? 2.0 * v - decode<T>(static_cast<unsigned short>(b - 1))
                            : decode<T>(static_cast<unsigned short>(b + 1));
    for (const double anchor : {v, 0.5 * (v + next)}) {
      const float f = static_cast<float>(anchor);  // exact for fp16; bf16 midpoints too
      for (const float g : {f, std::nextafter(f, HUGE_VALF), std::nextafter(f, -HUGE_VALF)}) {
        inputs.push_back(g);
        inputs.push_back(-g);
      }
    }
  }
  std::mt19937 rng(1234);
  for (int i = 0; i < kRandomFloats; ++i) {
    const std::uint32_t bits = rng();
    float f;
    std::memcpy(&f, &bits, 4);
    if (!std::isnan(f)) inputs.push_back(f);
  }
  std::vector<unsigned long long> in;
  for (const float f : inputs) {
    unsigned b;
    std::memcpy(&b, &f, 4);
    in.insert(in.end(), {b, 0, 0});
  }
  Mismatches bad;
  int op = kFromFloatRn;
  for (const Mode mode : kModes) {
    const std::vector<unsigned long long> got = run<T>(op++, in);
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const double x = inputs[i];
      const unsigned short want = std::isinf(x) ? static_cast<unsigned short>(
                                                      Low<T>::kInf | (x < 0 ? 0x8000 : 0))
                                                : round_exact<T>(x, mode);
      if (got[i] != want) {
        bad.add("from float " + hex(in[3 * i]) + " mode " + std::to_string(op - 1) + " gave " +
                hex(got[i]) + " want " + hex(want));
      }
    }
  }
  EXPECT_EQ(bad.count, 0) << bad.first;
}

// int -> T: every int in [-2^17, 2^17] (covers every short and ushort) and random 32/64-bit
// values, in each mode.
template <typename T>
void check_from_int() {
  std::vector<unsigned long long> in_int;
  std::vector<unsigned long long> in_ull;
  for (int i = -(1 << 17); i <= (1 << 17); ++i) in_int.insert(in_int.end(), {static_cast<unsigned>(i), 0, 0});
  std::mt19937_64 rng(99);
  for (int i = 0; i < 20000; ++i) {
    const unsigned long long v = rng() >> (rng() % 64);
    in_int.insert(in_int.end(), {static_cast<unsigned>(v), 0, 0});
    in_ull.insert(in_ull.end(), {v, 0, 0});
  }
  in_ull.insert(in_ull.end(), {~0ull, 0, 0, 1ull << 63, 0, 0, 0, 0, 0});
  Mismatches bad;
  for (int m = 0; m < 4; ++m) {
    const std::vector<unsigned long long> got = run<T>(kFromIntRn + m, in_int);
    for (std::size_t i = 0; i < got.size(); ++i) {
      const int v = static_cast<int>(static_cast<unsigned>(in_int[3 * i]));
      const unsigned short want = round_exact<T>(v, kModes[m]);
      if (got[i] != want) bad.add("from int " + std::to_string(v) + " gave " + hex(got[i]) + " want " + hex(want));
    }
    const std::vector<unsigned long long> got64 = run<T>(kFromUllRn + m, in_ull);
    for (std::size_t i = 0; i < got64.size(); ++i) {
      const unsigned long long v = in_ull[3 * i];
      // compare(w) = sign(v - w): the integer v split exactly into two doubles.
      const double high = static_cast<double>(v & ~0xffffffffull);
      const double low = static_cast<double>(v & 0xffffffffull);
      const unsigned short want = reference_round<T>(
          [&](double w) { return sign_of_sum(high, low, -w); }, kModes[m], 0.0);
      if (got64[i] != want) bad.add("from ull " + hex(v) + " gave " + hex(got64[i]) + " want " + hex(want));
    }
  }
  EXPECT_EQ(bad.count, 0) << bad.first;
}

// A random operand: uniform bits half of the time, else a value near `near` (cancellation,
// ties and carries), never NaN.
template <typename T>
unsigned short random_operand(std::mt19937& rng, unsigned short near) {
  for (;;) {
    unsigned short b = static_cast<unsigned short>(rng());
    if (rng() % 2 == 0) b = static_cast<unsigned short>((near ^ (rng() % 2 ? 0x8000 : 0)) + (rng() % 9) - 4);
    if (!is_nan_bits(b, Low<T>::kInf)) return b;
  }
}

template <typename T>
void check_arithmetic_sample(int n) {
  std::mt19937 rng(2024);
  std::vector<unsigned long long> in;
  for (int i = 0; i < n; ++i) {
    const unsigned short a = random_operand<T>(rng, 0);
    const unsigned short b = random_operand<T>(rng, a);
    const unsigned short c = random_operand<T>(rng, b);
    in.insert(in.end(), {a, b, c});
  }
  Mismatches bad;
  const int ops[] = {kAdd, kSub, kMul, kDiv, kFma, kAdd2, kMul2, kFma2, kFmaRelu, kFmaSat};
  for (const int op : ops) {
    const std::vector<unsigned long long> got = run<T>(op, in);
    for (int i = 0; i < n; ++i) {
      const double a = decode<T>(static_cast<unsigned short>(in[3 * i]));
      const double b = decode<T>(static_cast<unsigned short>(in[3 * i + 1]));
      const double c = decode<T>(static_cast<unsigned short>(in[3 * i + 2]));
      double approx = 0.0;  // the double result: NaN/inf cases and the sign of an exact zero
      unsigned short want = 0;
      const auto by_sum = [](double p, double q) {  // p + q, exactly
        return [p, q](double v) { return sign_of_sum(p, q, -v); };
      };
      switch (op) {
        case kAdd:
        case kAdd2: approx = a + b; want = reference_round<T>(by_sum(a, b), Mode::kRn, approx); break;
        case kSub: approx = a - b; want = reference_round<T>(by_sum(a, -b), Mode::kRn, approx); break;
        case kMul:
        case kMul2: approx = a * b; want = round_exact<T>(approx, Mode::kRn); break;  // exact
        case kDiv:
          approx = a / b;
          want = reference_round<T>(
              [a, b](double v) {  // sign(a/b - v) = sign(b) * sign(a - b*v), b*v exact
                const double r = a - b * v;
                return (r > 0 ? 1 : (r < 0 ? -1 : 0)) * (b > 0 ? 1 : -1);
              },
              Mode::kRn, approx);
          break;
        default:  // the fma family: a*b exact in double
          approx = std::fma(a, b, c);
          want = reference_round<T>(by_sum(a * b, c), Mode::kRn, approx);
          break;
      }
      if (std::isnan(approx) || std::isinf(a) || std::isinf(b) || std::isinf(c) || std::isinf(approx)) {
        const bool got_nan = is_nan_bits(static_cast<unsigned short>(got[i]), Low<T>::kInf);
        if (std::isnan(approx) && op != kFmaSat && !got_nan) bad.add("expected NaN for op " + std::to_string(op));
        continue;  // infinities in the inputs: only the NaN-ness is checked
      }
      if (op == kFmaRelu && (want & 0x8000) && !is_nan_bits(want, Low<T>::kInf)) want = 0;
      if (op == kFmaSat) {
        const double r = decode<T>(want);
        want = r > 0 ? (r < 1 ? want : Low<T>::bits(Low<T>::from_bits(round_exact<T>(1.0, Mode::kRn)))) : 0;
      }
      if (got[i] != want && !((got[i] | want) == 0x8000 && (op == kFmaRelu || op == kFmaSat))) {
        bad.add("op " + std::to_string(op) + " a=" + hex(in[3 * i]) + " b=" + hex(in[3 * i + 1]) +
                " c=" + hex(in[3 * i + 2]) + " gave " + hex(got[i]) + " want " + hex(want));
      }
    }
  }
  EXPECT_EQ(bad.count, 0) << bad.count << " mismatches; first:" << bad.first;
}

template <typename T>
void check_comparisons_sample(int n) {
  std::mt19937 rng(77);
  std::vector<unsigned long long> in;
  for (int i = 0; i < n; ++i) {
    const auto a = static_cast<unsigned short>(rng());
    const auto b = rng() % 4 == 0 ? a ^ 0x8000u : (rng() % 2 ? a : static_cast<unsigned short>(rng()));
    in.insert(in.end(), {a, b & 0xffffu, 0});
  }
  Mismatches bad;
  for (int op = kLt; op <= kGt; ++op) {
    const std::vector<unsigned long long> got = run<T>(op, in);
    for (int i = 0; i < n; ++i) {
      const double a = decode<T>(static_cast<unsigned short>(in[3 * i]));
      const double b = decode<T>(static_cast<unsigned short>(in[3 * i + 1]));
      const bool want[] = {a < b, a <= b, a == b, a != b && !std::isnan(a) && !std::isnan(b),
                           a >= b, a > b};  // ordered comparisons: false with a NaN
      if ((got[i] != 0) != want[op - kLt]) {
        bad.add("compare " + std::to_string(op) + " " + hex(in[3 * i]) + " " + hex(in[3 * i + 1]));
      }
    }
  }
  EXPECT_EQ(bad.count, 0) << bad.first;
}

TEST_F(LowPrecisionRounding, HalfUnaryOperationsAreExactOverAllInputs) { check_unary_exhaustive<__half>(); }
TEST_F(LowPrecisionRounding, Bf16UnaryOperationsAreExactOverAllInputs) {
  check_unary_exhaustive<__nv_bfloat16>();
}
TEST_F(LowPrecisionRounding, HalfToIntegerConversionsRoundAndSaturateOverAllInputs) {
  check_to_int_exhaustive<__half>();
}
TEST_F(LowPrecisionRounding, Bf16ToIntegerConversionsRoundAndSaturateOverAllInputs) {
  check_to_int_exhaustive<__nv_bfloat16>();
}
TEST_F(LowPrecisionRounding, FloatToHalfRoundsCorrectlyInEveryMode) { check_from_float<__half>(); }
TEST_F(LowPrecisionRounding, FloatToBf16RoundsCorrectlyInEveryMode) {
  check_from_float<__nv_bfloat16>();
}
TEST_F(LowPrecisionRounding, IntegerToHalfRoundsCorrectlyInEveryMode) { check_from_int<__half>(); }
TEST_F(LowPrecisionRounding, IntegerToBf16RoundsCorrectlyInEveryMode) {
  check_from_int<__nv_bfloat16>();
}
TEST_F(LowPrecisionRounding, HalfArithmeticAndFmaRoundOnceOnARandomSample) {
  check_arithmetic_sample<__half>(kArithmeticSample);
}
TEST_F(LowPrecisionRounding, Bf16ArithmeticAndFmaRoundOnceOnARandomSample) {
  check_arithmetic_sample<__nv_bfloat16>(kArithmeticSample);
}
TEST_F(LowPrecisionRounding, ComparisonsFollowIeeeIncludingNanAndSignedZero) {
  check_comparisons_sample<__half>(1 << 15);
  check_comparisons_sample<__nv_bfloat16>(1 << 15);
}

// Hand-computed: 3 * 99 = 297 lies exactly between the bf16 values 296 and 298; adding 2^-100
// must round up to 298. Rounding a*b + c to double first (the simulator's old __hfma) loses
// the 2^-100 and the tie goes to even, 296.
__global__ void fma_double_rounding_kernel(float* out) {
  out[0] = __bfloat162float(
      __hfma(__float2bfloat16(3.0f), __float2bfloat16(99.0f), __float2bfloat16(0x1p-100f)));
  out[1] = __bfloat162float(
      __hfma(__float2bfloat16(3.0f), __float2bfloat16(99.0f), __float2bfloat16(-0x1p-100f)));
}

TEST_F(LowPrecisionRounding, Bf16FmaRoundsOnceWhereDoubleRoundingWouldNot) {
  testing::DeviceBuffer<float> out(2);
  launch(fma_double_rounding_kernel, dim3(1), dim3(1), 0, nullptr, out.get());
  const std::vector<float> got = out.to_host();
  EXPECT_EQ(got[0], 298.0f);
  EXPECT_EQ(got[1], 296.0f);
}

}  // namespace
}  // namespace nanoserve
