/* ggml_reference: llama.cpp's own quantizer and dequantizer, taken from the prebuilt libraries
 * of the npm package @node-llama-cpp/linux-x64 (dlopen; no llama.cpp build, no headers: the
 * few declarations below follow llama.h / gguf.h / ggml.h of that release).
 *
 *   ggml_reference quantize LIBDIR IN.gguf OUT.gguf FTYPE   llama_model_quantize (FTYPE: the
 *                                                           llama_ftype number, e.g. 15 Q4_K_M)
 *   ggml_reference hashes   LIBDIR FILE.gguf                one line per tensor:
 *                                                           NAME TYPE N FNV1A64(fp32 bytes)
 *   ggml_reference values   LIBDIR FILE.gguf NAME COUNT     the first COUNT fp32 values
 *
 * The fp32 values are ggml's type traits' `to_float` on the tensor's stored bytes. FNV-1a 64
 * over the little-endian fp32 bytes lets a test compare every value bit for bit without the
 * reference values being committed. */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gguf_init_params { bool no_alloc; void **ctx; };
typedef void (*to_float_t)(const void *x, float *y, int64_t k);
struct ggml_type_traits {
  const char *type_name;
  int64_t blck_size;
  int64_t blck_size_interleave;
  size_t type_size;
  bool is_quantized;
  to_float_t to_float;
  void *from_float_ref;
};
/* llama_model_quantize_params begins with these two fields; the rest is kept as the library's
 * defaults (the buffer is larger than the struct). */
struct quantize_params { int32_t nthread; int32_t ftype; unsigned char rest[512]; };

static void *need(void *lib, const char *name) {
  void *f = dlsym(lib, name);
  if (!f) { fprintf(stderr, "ggml_reference: %s not exported\n", name); exit(2); }
  return f;
}

static void *open_lib(const char *dir, const char *file) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  void *lib = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
  if (!lib) { fprintf(stderr, "ggml_reference: %s\n", dlerror()); exit(2); }
  return lib;
}

static uint64_t fnv1a(const unsigned char *p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) { h ^= p[i]; h *= 1099511628211ull; }
  return h;
}

int main(int argc, char **argv) {
  if (argc < 4) { fprintf(stderr, "usage: see the comment at the top of ggml_reference.c\n"); return 2; }
  const char *mode = argv[1], *dir = argv[2];
  void *base = open_lib(dir, "libggml-base.so");
  if (strcmp(mode, "quantize") == 0 && argc == 6) {
    open_lib(dir, "libggml.v0.4.0.so");
    void *llama = open_lib(dir, "libllama.v0.4.0.so");
    void (*backend_init)(void) = (void (*)(void))need(llama, "llama_backend_init");
    struct quantize_params (*defaults)(void) =
        (struct quantize_params (*)(void))need(llama, "llama_model_quantize_default_params");
    uint32_t (*quantize)(const char *, const char *, const struct quantize_params *) =
        (uint32_t (*)(const char *, const char *, const struct quantize_params *))need(
            llama, "llama_model_quantize");
    backend_init();
    struct quantize_params p = defaults();
    p.nthread = 1;
    p.ftype = atoi(argv[5]);
    const uint32_t rc = quantize(argv[3], argv[4], &p);
    if (rc != 0) { fprintf(stderr, "ggml_reference: llama_model_quantize returned %u\n", rc); return 1; }
    return 0;
  }
  void *(*init)(const char *, struct gguf_init_params) =
      (void *(*)(const char *, struct gguf_init_params))need(base, "gguf_init_from_file");
  int64_t (*n_tensors)(const void *) = (int64_t (*)(const void *))need(base, "gguf_get_n_tensors");
  const char *(*tname)(const void *, int64_t) =
      (const char *(*)(const void *, int64_t))need(base, "gguf_get_tensor_name");
  int (*ttype)(const void *, int64_t) = (int (*)(const void *, int64_t))need(base, "gguf_get_tensor_type");
  size_t (*toff)(const void *, int64_t) = (size_t (*)(const void *, int64_t))need(base, "gguf_get_tensor_offset");
  size_t (*tsize)(const void *, int64_t) = (size_t (*)(const void *, int64_t))need(base, "gguf_get_tensor_size");
  size_t (*data_off)(const void *) = (size_t (*)(const void *))need(base, "gguf_get_data_offset");
  const struct ggml_type_traits *(*traits)(int) =
      (const struct ggml_type_traits *(*)(int))need(base, "ggml_get_type_traits");
  struct gguf_init_params ip = {true, NULL};
  void *ctx = init(argv[3], ip);
  if (!ctx) { fprintf(stderr, "ggml_reference: gguf_init_from_file(%s) failed\n", argv[3]); return 1; }
  FILE *f = fopen(argv[3], "rb");
  if (!f) { perror(argv[3]); return 1; }
  const int values_mode = strcmp(mode, "values") == 0 && argc == 6;
  if (!values_mode && strcmp(mode, "hashes") != 0) { fprintf(stderr, "ggml_reference: bad mode\n"); return 2; }
  for (int64_t i = 0; i < n_tensors(ctx); ++i) {
    if (values_mode && strcmp(tname(ctx, i), argv[4]) != 0) continue;
    const struct ggml_type_traits *t = traits(ttype(ctx, i));
    const size_t bytes = tsize(ctx, i);
    const int64_t n = (int64_t)(bytes / t->type_size) * t->blck_size;
    unsigned char *raw = malloc(bytes);
    float *y = malloc((size_t)n * sizeof(float));
    if (fseek(f, (long)(data_off(ctx) + toff(ctx, i)), SEEK_SET) != 0 || fread(raw, 1, bytes, f) != bytes) {
      fprintf(stderr, "ggml_reference: cannot read %s\n", tname(ctx, i));
      return 1;
    }
    if (t->to_float) {
      t->to_float(raw, y, n);
    } else if (ttype(ctx, i) == 0) {
      memcpy(y, raw, bytes);
    } else {
      fprintf(stderr, "ggml_reference: no to_float for %s\n", t->type_name);
      return 1;
    }
    if (values_mode) {
      const int64_t count = atoll(argv[5]) < n ? atoll(argv[5]) : n;
      for (int64_t k = 0; k < count; ++k) printf("%.9g\n", y[k]);
    } else {
      printf("%s %s %lld %016llx\n", tname(ctx, i), t->type_name, (long long)n,
             (unsigned long long)fnv1a((const unsigned char *)y, (size_t)n * sizeof(float)));
    }
    free(raw);
    free(y);
  }
  fclose(f);
  return 0;
}
